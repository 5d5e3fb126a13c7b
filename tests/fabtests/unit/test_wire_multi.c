/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The multi wire's pure parts: the 64-byte address (the fabric half without its trailing zeros,
 * padded back exactly; anything malformed refused), the host identity, and the records in
 * /dev/shm (published, found by token and by shm address, gone when unpublished or when their
 * process is gone).
 */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fi_errno.h>
#include "unit_check.h"
#include "wire/multi/multi.h"

static void test_addr(void)
{
	uint8_t fab[64], back[64], blob[DDTX_MULTI_ADDR_LEN];

	/* an ofi-like blob: 36 bytes of content (with zeros inside), 28 zero bytes after */
	memset(fab, 0, sizeof(fab));
	for (int i = 0; i < 36; i++)
		fab[i] = (uint8_t)(i % 5 ? i : 0);
	CHECK(ddtx_multi_addr_pack(fab, sizeof(fab), blob) == 0, "pack");
	CHECK(blob[3] == 35, "stored %u bytes (35: byte 35 is zero)", blob[3]);
	memset(back, 0xee, sizeof(back));
	CHECK(ddtx_multi_addr_unpack(blob, sizeof(blob), back, sizeof(back)) == 0, "unpack");
	CHECK(!memcmp(back, fab, sizeof(fab)), "round trip");

	/* a blob that does not fit: 61 bytes of content */
	memset(fab, 0x11, 61);
	CHECK(ddtx_multi_addr_pack(fab, sizeof(fab), blob) == -FI_EINVAL, "61 bytes refused");
	memset(fab, 0x11, 60);
	fab[60] = 0;
	CHECK(ddtx_multi_addr_pack(fab, sizeof(fab), blob) == 0, "60 bytes fit");

	/* malformed blobs */
	uint8_t bad[DDTX_MULTI_ADDR_LEN];
	memcpy(bad, blob, sizeof(bad));
	bad[0] ^= 1;
	CHECK(ddtx_multi_addr_unpack(bad, sizeof(bad), back, sizeof(back)), "bad magic");
	memcpy(bad, blob, sizeof(bad));
	bad[2] = 9;
	CHECK(ddtx_multi_addr_unpack(bad, sizeof(bad), back, sizeof(back)), "bad version");
	CHECK(ddtx_multi_addr_unpack(blob, sizeof(blob) - 1, back, sizeof(back)), "short");
	CHECK(ddtx_multi_addr_unpack(blob, sizeof(blob), back, 40), "longer than our fabric blob");
	memset(fab, 0, sizeof(fab));
	fab[0] = 7;
	ddtx_multi_addr_pack(fab, sizeof(fab), blob);
	blob[40] = 1;
	CHECK(ddtx_multi_addr_unpack(blob, sizeof(blob), back, sizeof(back)),
	      "non-zero padding (two blobs for one peer)");
	blob[3] = 61;
	CHECK(ddtx_multi_addr_unpack(blob, sizeof(blob), back, sizeof(back)), "length past 60");
}

static void test_host(void)
{
	struct ddtx_multi_host a, b;

	CHECK(ddtx_multi_host_self(&a) == 0, "host identity");
	CHECK(ddtx_multi_host_self(&b) == 0 && ddtx_multi_host_same(&a, &b), "stable");
	b.shm_ino++;
	CHECK(!ddtx_multi_host_same(&a, &b), "another /dev/shm");
	b = a;
	b.boot_id[3] ^= 0x10;
	CHECK(!ddtx_multi_host_same(&a, &b), "another kernel");
	b = a;
	b.pidns++;
	CHECK(!ddtx_multi_host_same(&a, &b), "another PID namespace");
}

static void test_records(void)
{
	struct ddtx_multi_record rec = {.pid = (uint32_t)getpid(), .local_len = 48}, got;
	uint8_t fab[64] = {1, 2, 3, 4};
	uint64_t token;

	ddtx_multi_host_self(&rec.host);
	for (int i = 0; i < 48; i++)
		rec.local[i] = (uint8_t)(0x40 + i);
	token = ddtx_multi_token(fab, sizeof(fab));
	fab[5] = 1;
	CHECK(ddtx_multi_token(fab, sizeof(fab)) != token, "another blob, another token");
	CHECK(ddtx_multi_publish(token, &rec) == 0, "publish");
	CHECK(ddtx_multi_lookup(token, &got) == 0 && got.pid == rec.pid &&
	      !memcmp(got.local, rec.local, 48), "lookup by token");
	CHECK(ddtx_multi_lookup_local(rec.local, 48, &got) == 0 && got.pid == rec.pid,
	      "lookup by shm address");
	rec.local[0] ^= 1;
	CHECK(ddtx_multi_lookup_local(rec.local, 48, &got) == -FI_ENOENT, "unknown shm address");
	ddtx_multi_unpublish(token);
	CHECK(ddtx_multi_lookup(token, &got) == -FI_ENOENT, "unpublished");

	/* a record whose process is gone: ignored, then removed */
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	waitpid(child, NULL, 0);
	rec.pid = (uint32_t)child;
	CHECK(ddtx_multi_publish(token, &rec) == 0, "publish for a dead process");
	CHECK(ddtx_multi_lookup(token, &got) == -FI_ENOENT, "dead publisher ignored");
	ddtx_multi_cleanup_stale();
	char path[96];
	snprintf(path, sizeof(path), "/dev/shm/ddtxmw-%u-%016llx", (unsigned)getuid(),
		 (unsigned long long)token);
	CHECK(access(path, F_OK) != 0, "stale record removed");
}

int main(void)
{
	test_addr();
	test_host();
	test_records();
	return failures ? 1 : 0;
}
