/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * How host staging copies device memory (engine/hmem_copy.c), without a GPU: the shape of
 * segment lists (vector or not, one device or not) and the way chosen for it, by the cost line
 * and under FI_DDTX_HMEM_COPY's forcing, fallbacks included; and the runs the pack kernel
 * would read for an arbitrary list (ddtx_gpu_runs_from_iov), through the kernel's index
 * arithmetic run on the host, against the plain iov walk; and the device copy kernel's pieces
 * (engine/gpu_pieces.h) for random lists of copies, through its loops run on the host; and the
 * learned choice of a way (engine/hmem_way_cost.h): the priors' choices, a way that turns out
 * faster than its prior taken over, the model into host memory never choosing the kernel.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/gpu_pieces.h"
#include "engine/gpu_runs.h"
#include "engine/hmem_copy.h"
#include "engine/hmem_way_cost.h"
#include "engine/iov.h"

#include "unit_check.h"

static uint8_t mem[1 << 20];

static void vec(struct iovec *iov, size_t n, size_t block, size_t stride)
{
	for (size_t i = 0; i < n; i++)
		iov[i] = (struct iovec){ mem + i * stride, block };
}

static void test_shapes(void)
{
	struct iovec iov[64];
	int dev[64];
	struct ddtx_hmem_copy_shape s;
	bool fb;

	for (int i = 0; i < 64; i++)
		dev[i] = 0;
	vec(iov, 16, 64, 128);
	ddtx_hmem_copy_shape_of(iov, 16, dev, &s);
	CHECK(s.segments == 16 && s.one_device && s.vector && s.block == 64 && s.stride == 128,
	      "vector shape");
	CHECK(ddtx_hmem_copy_choose(&s, DDTX_HMEM_COPY_AUTO, &fb) == DDTX_HMEM_COPY_2D && !fb,
	      "a vector is one 2-D copy");
	/* the shape of a list known to be one vector (a send's scan): the same as the list's */
	struct ddtx_hmem_copy_shape v;
	ddtx_hmem_copy_shape_of_vec(16, 64, 128, &v);
	CHECK(v.segments == s.segments && v.one_device && v.vector && v.block == s.block &&
		      v.stride == s.stride, "shape of a known vector");
	ddtx_hmem_copy_shape_of_vec(16, 64, 32, &v);
	CHECK(!v.vector, "known vector, overlapping blocks: no 2-D vector");
	ddtx_hmem_copy_shape_of_vec(16, 64, -128, &v);
	CHECK(!v.vector, "known vector going down: no 2-D vector");
	/* a host segment in the middle: only segments */
	dev[5] = -1;
	ddtx_hmem_copy_shape_of(iov, 16, dev, &s);
	CHECK(!s.one_device, "mixed memory");
	CHECK(ddtx_hmem_copy_choose(&s, DDTX_HMEM_COPY_2D, &fb) == DDTX_HMEM_COPY_SEGMENTS && fb,
	      "2-D forced on mixed memory falls back");
	dev[5] = 1;
	ddtx_hmem_copy_shape_of(iov, 16, dev, &s);
	CHECK(!s.one_device, "two devices");
	dev[5] = 0;
	/* going down in memory, or overlapping blocks: no 2-D copy (pitch >= width, positive) */
	for (int i = 0; i < 16; i++)
		iov[i].iov_base = mem + (15 - i) * 128;
	ddtx_hmem_copy_shape_of(iov, 16, dev, &s);
	CHECK(!s.vector, "descending list is no 2-D vector");
	vec(iov, 16, 64, 32);
	ddtx_hmem_copy_shape_of(iov, 16, dev, &s);
	CHECK(!s.vector, "stride < block is no 2-D vector");
	/* uneven stride, uneven length */
	vec(iov, 16, 64, 128);
	iov[9].iov_base = mem + 9 * 128 + 8;
	ddtx_hmem_copy_shape_of(iov, 16, dev, &s);
	CHECK(!s.vector, "one block off the stride");
	vec(iov, 16, 64, 128);
	iov[3].iov_len = 63;
	ddtx_hmem_copy_shape_of(iov, 16, dev, &s);
	CHECK(!s.vector, "one block shorter");
	/* irregular: kernel when loaded and the calls saved pay for a launch, else segments */
	s.kernels = true;
	CHECK(ddtx_hmem_copy_choose(&s, DDTX_HMEM_COPY_AUTO, &fb) == DDTX_HMEM_COPY_KERNEL,
	      "16 irregular segments with kernels: kernel");
	s.kernels = false;
	CHECK(ddtx_hmem_copy_choose(&s, DDTX_HMEM_COPY_AUTO, &fb) == DDTX_HMEM_COPY_SEGMENTS,
	      "no kernels: segments");
	CHECK(ddtx_hmem_copy_choose(&s, DDTX_HMEM_COPY_KERNEL, &fb) == DDTX_HMEM_COPY_SEGMENTS &&
	      fb, "kernel forced without kernels falls back");
	vec(iov, 3, 64, 100);
	iov[2].iov_len = 10;
	ddtx_hmem_copy_shape_of(iov, 3, dev, &s);
	s.kernels = true;
	CHECK(ddtx_hmem_copy_choose(&s, DDTX_HMEM_COPY_AUTO, &fb) == DDTX_HMEM_COPY_SEGMENTS,
	      "3 segments: calls are cheaper than a launch");
	CHECK(ddtx_hmem_copy_choose(&s, DDTX_HMEM_COPY_KERNEL, &fb) == DDTX_HMEM_COPY_KERNEL &&
	      !fb, "kernel forced where possible");
	/* no vector from the third segment on, empty entries after it: counted all the same */
	vec(iov, 16, 64, 128);
	iov[2].iov_base = mem + 2 * 128 + 8;
	iov[7].iov_len = 0;
	iov[15].iov_len = 0;
	ddtx_hmem_copy_shape_of(iov, 16, NULL, &s);
	CHECK(!s.vector && s.one_device && s.segments == 14, "irregular list: %zu segments",
	      s.segments);
	dev[9] = 1;
	ddtx_hmem_copy_shape_of(iov, 16, dev, &s);
	CHECK(!s.one_device && s.segments == 14, "irregular list, a second device at 9");
	dev[9] = 0;
	/* empty entries do not count; one segment is one copy */
	struct iovec one[3] = { { mem, 0 }, { mem + 64, 4096 }, { mem + 9000, 0 } };
	ddtx_hmem_copy_shape_of(one, 3, dev, &s);
	CHECK(s.segments == 1 && !s.vector, "one segment");
	CHECK(ddtx_hmem_copy_choose(&s, DDTX_HMEM_COPY_AUTO, &fb) == DDTX_HMEM_COPY_SEGMENTS,
	      "one segment: one copy");
}

static void test_runs_from_iov(void)
{
	static struct iovec iov[2000];
	static uint8_t a[1 << 18], b[1 << 18];
	uint64_t rng = 12345;

	for (size_t i = 0; i < sizeof(mem); i++)
		mem[i] = (uint8_t)(i * 131 + 7);
	for (int iter = 0; iter < 300 && !failures; iter++) {
		size_t n = 1 + (rng = rng * 6364136223846793005ull + 1) % 1999, pos = 64;
		bool down = iter % 7 == 0;
		for (size_t i = 0; i < n; i++) {
			rng = rng * 6364136223846793005ull + 1;
			size_t len = iter % 3 ? 16 : (rng >> 33) % 97;
			size_t gap = iter % 3 ? 48 : (rng >> 45) % 40;
			if (pos + len + gap >= sizeof(mem) / 2) {
				n = i;
				break;
			}
			iov[i] = (struct iovec){ mem + pos, len };
			pos += len + gap;
		}
		if (down)
			for (size_t i = 0; i < n / 2; i++) {
				struct iovec t = iov[i];
				iov[i] = iov[n - 1 - i];
				iov[n - 1 - i] = t;
			}
		struct ddtx_gpu_runs r;
		uintptr_t origin = n ? (uintptr_t)iov[0].iov_base : (uintptr_t)mem;
		CHECK(!ddtx_gpu_runs_from_iov(iov, n, origin, iter % 2 ? 7 : 0, &r), "build");
		size_t total = ddtx_iov_total(iov, n);
		CHECK(r.total == total, "total %zu != %zu", r.total, total);
		if (iter % 3 && n > 1 && !down)
			CHECK(r.nruns <= (n + 6) / (iter % 2 ? 7 : n) + 1,
			      "a regular list is few runs (%zu for %zu blocks)", r.nruns, n);
		size_t off = total ? (rng >> 20) % total : 0, len = total - off;
		memset(b, 0xee, len + 1);
		size_t want = ddtx_iov_gather(iov, n, off, a, len);
		size_t got = ddtx_gpu_runs_apply(&r, (void *)origin, off, b, len, true);
		CHECK(got == want && !memcmp(a, b, want) && b[want] == 0xee,
		      "runs of an iov list gather [%zu, +%zu): %zu, want %zu", off, len, got, want);
		ddtx_gpu_runs_free(&r);
	}
}

/* Random copies between two 1 MiB areas (lengths 1 B .. 40 KiB, any alignment): the pieces
 * keep the groups' limits, cover every byte once, and the kernel's loops copy them exactly. */
static void test_pieces(void)
{
	static uint8_t src[1 << 20], dst[1 << 20], want[1 << 20];
	static struct ddtx_hmem_copy_op ops[2000];
	uint64_t rng = 7;

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 3);
	for (int iter = 0; iter < 60 && !failures; iter++) {
		size_t n = 0, at = 0;
		memset(dst, 0, sizeof(dst));
		memset(want, 0, sizeof(want));
		while (n < 2000) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			size_t len = iter % 3 == 0 ? 1 + (rng >> 33) % 40000
				   : iter % 3 == 1 ? 1 + (rng >> 33) % 300 : 8;
			size_t gap = (rng >> 20) % 64;
			if (at + gap + len > sizeof(dst))
				break;
			at += gap;
			size_t from = (rng >> 40) % (sizeof(src) - len);
			ops[n++] = (struct ddtx_hmem_copy_op){ dst + at, src + from, len };
			memcpy(want + at, src + from, len);
			at += len;
		}
		struct ddtx_gpu_pieces pc;
		CHECK(ddtx_gpu_pieces_build(ops, n, &pc) == 0, "pieces_build");
		size_t bytes = 0;
		for (size_t i = 0; i < n; i++)
			bytes += ops[i].len;
		CHECK(pc.bytes == bytes && pc.group[0] == 0 && pc.group[pc.ngroups] == pc.npieces,
		      "pieces cover %zu of %zu bytes", pc.bytes, bytes);
		for (size_t g = 0; g < pc.ngroups; g++) {
			uint64_t gb = 0;
			CHECK(pc.group[g + 1] > pc.group[g] &&
			      pc.group[g + 1] - pc.group[g] <= DDTX_GPU_PIECES_PER_GROUP,
			      "group %zu holds %u pieces", g, pc.group[g + 1] - pc.group[g]);
			for (uint32_t i = pc.group[g]; i < pc.group[g + 1]; i++)
				gb += pc.p[i].len;
			CHECK(gb <= DDTX_GPU_PIECE_MAX_BYTES, "group %zu holds %llu bytes", g,
			      (unsigned long long)gb);
		}
		CHECK(ddtx_gpu_pieces_apply(&pc) == bytes, "copied bytes");
		CHECK(!memcmp(dst, want, sizeof(dst)), "iteration %d: the pieces' copy differs", iter);
		ddtx_gpu_pieces_free(&pc);
	}
}

#define WAY(w) (1u << DDTX_HMEM_COPY_##w)

static void test_way_cost(void)
{
	struct ddtx_hmem_way_cost dev, host;
	const unsigned vec_dev = WAY(SEGMENTS) | WAY(2D) | WAY(KERNEL);
	ddtx_hmem_way_cost_init(&dev, DDTX_HMEM_WAY_IPC_TO_DEVICE);
	ddtx_hmem_way_cost_init(&host, DDTX_HMEM_WAY_IPC_TO_HOST);

	/* the priors: MILC's face (64 x 3 KiB) by one 2-D copy, 4096 scattered pieces by the
	 * kernel, one piece by a driver copy; into host memory a vector by 2-D */
	CHECK(ddtx_hmem_way_choose(&dev, vec_dev, 196608, 64) == DDTX_HMEM_COPY_2D, "vector");
	CHECK(ddtx_hmem_way_choose(&dev, WAY(SEGMENTS) | WAY(KERNEL), 32768, 4096) ==
		      DDTX_HMEM_COPY_KERNEL, "list");
	CHECK(ddtx_hmem_way_choose(&dev, WAY(SEGMENTS), 100, 1) == DDTX_HMEM_COPY_SEGMENTS,
	      "one piece");
	CHECK(ddtx_hmem_way_choose(&host, WAY(SEGMENTS) | WAY(2D), 196608, 64) ==
		      DDTX_HMEM_COPY_2D, "vector into host");
	CHECK(ddtx_hmem_way_choose(&dev, 0, 100, 1) == DDTX_HMEM_COPY_SEGMENTS, "none possible");

	/* A device where the kernel copies vectors in 5 us and 2-D copies take 40: the model
	 * tries the kernel now and then, learns, and takes it for good. */
	unsigned kernel_late = 0, tried_kernel = 0;
	for (int i = 0; i < 2000; i++) {
		enum ddtx_hmem_copy w = ddtx_hmem_way_choose(&dev, WAY(2D) | WAY(KERNEL), 196608, 64);
		CHECK(w == DDTX_HMEM_COPY_2D || w == DDTX_HMEM_COPY_KERNEL, "way %d not possible", w);
		tried_kernel += w == DDTX_HMEM_COPY_KERNEL;
		if (i >= 1900)
			kernel_late += w == DDTX_HMEM_COPY_KERNEL;
		ddtx_hmem_way_observe(&dev, w, 196608, 64, w == DDTX_HMEM_COPY_KERNEL ? 5000 : 40000);
	}
	CHECK(tried_kernel > 0 && kernel_late >= 90, "the faster kernel taken %u of the last 100",
	      kernel_late);
	CHECK(ddtx_hmem_way_predict(&dev, DDTX_HMEM_COPY_KERNEL, 196608, 64) <
		      ddtx_hmem_way_predict(&dev, DDTX_HMEM_COPY_2D, 196608, 64),
	      "kernel predicted faster");

	/* host staging's priors are ddtx_hmem_copy_choose's cost line: a vector by 2-D, a list
	 * by the kernel beyond six segments, a copy per segment below */
	struct ddtx_hmem_way_cost out;
	ddtx_hmem_way_cost_init(&out, DDTX_HMEM_WAY_STAGE_OUT);
	CHECK(ddtx_hmem_way_choose(&out, vec_dev, 4096, 64) == DDTX_HMEM_COPY_2D, "staged vector");
	CHECK(ddtx_hmem_way_choose(&out, WAY(SEGMENTS) | WAY(KERNEL), 32768, 4096) ==
		      DDTX_HMEM_COPY_KERNEL, "staged list");
	CHECK(ddtx_hmem_way_choose(&out, WAY(SEGMENTS) | WAY(KERNEL), 300, 3) ==
		      DDTX_HMEM_COPY_SEGMENTS, "staged short list");

	/* into host memory the kernel is never chosen, whatever it is offered */
	for (int i = 0; i < 200; i++)
		CHECK(ddtx_hmem_way_choose(&host, WAY(2D) | WAY(KERNEL), 4096, 2) != DDTX_HMEM_COPY_KERNEL,
		      "kernel into host memory");
	printf("way cost: learned\n");
}

int main(void)
{
	test_shapes();
	test_runs_from_iov();
	test_pieces();
	test_way_cost();
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	else
		printf("ok\n");
	return failures ? 1 : 0;
}
