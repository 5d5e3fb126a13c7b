/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hmem against a real CUDA driver: what ddtx_hmem_detect says about device, managed, pinned and
 * plain host memory; buffer ids across free and re-allocation (the registration-cache validity
 * rule); dma-buf export of device ranges (what ibv_reg_dmabuf_mr is given); SYNC_MEMOPS; the
 * same answers from a thread with no CUDA context current (the registration thread's case).
 * Prints what each call costs.  Without libcuda.so.1 or a GPU: exit 77 (skip).
 *
 * The test reaches the driver API through dlopen, like the provider, so it builds without CUDA.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include "hmem/hmem.h"
#include "unit_check.h"

typedef int cu_result;
typedef unsigned long long cu_ptr;

enum {
	CU_MEM_ATTACH_GLOBAL = 1,
	CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 124,
};

static struct {
	cu_result (*init)(unsigned int);
	cu_result (*device_get)(int *, int);
	cu_result (*device_count)(int *);
	cu_result (*device_attr)(int *, int, int);
	cu_result (*ctx_retain)(void **, int);
	cu_result (*ctx_set)(void *);
	cu_result (*alloc)(cu_ptr *, size_t);
	cu_result (*free)(cu_ptr);
	cu_result (*alloc_managed)(cu_ptr *, size_t, unsigned int);
	cu_result (*alloc_host)(void **, size_t);
	cu_result (*free_host)(void *);
	cu_result (*htod)(cu_ptr, const void *, size_t);
	cu_result (*dtoh)(void *, cu_ptr, size_t);
} cu;

static int cu_dev;

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* 0 when the driver and a GPU are there and a context is current; 77 otherwise. */
static int cuda_open(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	int n = 0;
	void *ctx;

	if (!lib) {
		printf("SKIP: no libcuda.so.1 (%s)\n", dlerror());
		return 77;
	}
#define SYM(f, name) *(void **)&cu.f = dlsym(lib, name)
	SYM(init, "cuInit");
	SYM(device_get, "cuDeviceGet");
	SYM(device_count, "cuDeviceGetCount");
	SYM(device_attr, "cuDeviceGetAttribute");
	SYM(ctx_retain, "cuDevicePrimaryCtxRetain");
	SYM(ctx_set, "cuCtxSetCurrent");
	SYM(alloc, "cuMemAlloc_v2");
	SYM(free, "cuMemFree_v2");
	SYM(alloc_managed, "cuMemAllocManaged");
	SYM(alloc_host, "cuMemAllocHost_v2");
	SYM(free_host, "cuMemFreeHost");
	SYM(htod, "cuMemcpyHtoD_v2");
	SYM(dtoh, "cuMemcpyDtoH_v2");
#undef SYM
	if (!cu.init || !cu.device_get || !cu.device_count || !cu.free_host || !cu.alloc ||
	    !cu.free || !cu.ctx_retain || !cu.ctx_set || !cu.alloc_host ||
	    !cu.alloc_managed || !cu.htod || !cu.dtoh || !cu.device_attr) {
		printf("SKIP: libcuda.so.1 lacks the driver API this test uses\n");
		return 77;
	}
	if (cu.init(0) || cu.device_count(&n) || n < 1) {
		printf("SKIP: cuInit failed or no GPU\n");
		return 77;
	}
	if (cu.device_get(&cu_dev, 0) || cu.ctx_retain(&ctx, cu_dev) || cu.ctx_set(ctx)) {
		fprintf(stderr, "FAIL: a GPU is there but no context could be made current\n");
		return 1;
	}
	return 0;
}

static const char *iface_name(enum ddtx_hmem_iface i)
{
	return i == DDTX_HMEM_CUDA ? "cuda" : "system";
}

static void test_classes(void)
{
	const size_t len = 4 << 20;
	struct ddtx_hmem_attr a;
	cu_ptr dev, managed;
	void *pinned, *host = malloc(len);

	CHECK(ddtx_hmem_cuda_available(), "the provider does not see the CUDA driver the test uses");
	CHECK(!cu.alloc(&dev, len), "cuMemAlloc");
	ddtx_hmem_detect((void *)(uintptr_t)dev, &a);
	CHECK(a.iface == DDTX_HMEM_CUDA && a.device == 0 && !a.managed && a.buffer_id != 0,
	      "device memory: iface %s device %d managed %d id %llu", iface_name(a.iface),
	      a.device, a.managed, (unsigned long long)a.buffer_id);
	uint64_t id = a.buffer_id;
	/* Interior and last byte: same allocation, same id. */
	ddtx_hmem_detect((void *)(uintptr_t)(dev + len / 2 + 3), &a);
	CHECK(a.iface == DDTX_HMEM_CUDA && a.buffer_id == id, "interior pointer: %s id %llu",
	      iface_name(a.iface), (unsigned long long)a.buffer_id);
	ddtx_hmem_detect((void *)(uintptr_t)(dev + len - 1), &a);
	CHECK(a.iface == DDTX_HMEM_CUDA && a.buffer_id == id, "last byte");

	CHECK(!cu.alloc_managed(&managed, len, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
	ddtx_hmem_detect((void *)(uintptr_t)managed, &a);
	CHECK(a.iface == DDTX_HMEM_SYSTEM, "managed memory must be host memory to the wires: %s",
	      iface_name(a.iface));
	CHECK(!cu.alloc_host(&pinned, len), "cuMemAllocHost");
	ddtx_hmem_detect(pinned, &a);
	CHECK(a.iface == DDTX_HMEM_SYSTEM, "pinned host memory: %s", iface_name(a.iface));
	ddtx_hmem_detect(host, &a);
	CHECK(a.iface == DDTX_HMEM_SYSTEM && a.device == -1, "malloc memory: %s",
	      iface_name(a.iface));

	/* Free and allocate again (same size: the driver often hands the same address back). */
	CHECK(!cu.free(dev), "cuMemFree");
	cu_ptr again;
	CHECK(!cu.alloc(&again, len), "cuMemAlloc again");
	ddtx_hmem_detect((void *)(uintptr_t)again, &a);
	CHECK(a.iface == DDTX_HMEM_CUDA && a.buffer_id != id,
	      "re-allocation (%s address) kept buffer id %llu: a registration cache could not "
	      "tell the buffers apart", again == dev ? "same" : "another",
	      (unsigned long long)id);
	printf("  free + cuMemAlloc: %s address, buffer id %llu -> %llu\n",
	       again == dev ? "same" : "another", (unsigned long long)id,
	       (unsigned long long)a.buffer_id);

	/* Costs: how much a per-operation or per-registration check would add. */
	const int n = 100000;
	double t0 = now_ns();
	for (int i = 0; i < n; i++)
		ddtx_hmem_detect((void *)(uintptr_t)(again + (size_t)(i & 1023) * 64), &a);
	double t_dev = (now_ns() - t0) / n;
	t0 = now_ns();
	for (int i = 0; i < n; i++)
		ddtx_hmem_detect((char *)host + (size_t)(i & 1023) * 64, &a);
	double t_host = (now_ns() - t0) / n;
	printf("  ddtx_hmem_detect: %.0f ns on device memory, %.0f ns on host memory\n", t_dev,
	       t_host);

	CHECK(!cu.free(again), "cuMemFree");
	CHECK(!cu.free(managed), "cuMemFree managed");
	CHECK(!cu.free_host(pinned), "cuMemFreeHost");
	free(host);
}

static void test_dmabuf(void)
{
	const size_t len = 8 << 20;
	int supported = 0, fd = -1;
	uint64_t off = 0;
	cu_ptr dev;
	char host[64];

	CHECK(!cu.alloc(&dev, len), "cuMemAlloc");
	(void)cu.device_attr(&supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, cu_dev);
	void *p = (void *)(uintptr_t)(dev + 100);
	int ret = ddtx_hmem_dmabuf_fd(p, 3 * 4096, &fd, &off);
	printf("  device reports dma-buf %s; export of [dev+100, +12 KiB): %s\n",
	       supported ? "supported" : "not supported", ret ? fi_strerror(-ret) : "ok");
	if (supported) {
		CHECK(ret == 0 && fd >= 0, "dma-buf export refused on a device that supports it: %s",
		      fi_strerror(-ret));
	} else {
		CHECK(ret == -FI_EIO || ret == -FI_ENOSYS, "no dma-buf support, yet %d", ret);
	}
	if (!ret) {
		/* The range is widened to pages: offset 100 inside the first, 4 pages in all. */
		struct stat st;
		CHECK(off == 100, "offset %llu (expected 100)", (unsigned long long)off);
		off_t size = lseek(fd, 0, SEEK_END);
		CHECK(fstat(fd, &st) == 0, "fstat on the dma-buf fd");
		CHECK(size < 0 || (size >= 4 * 4096 && size <= (off_t)len),
		      "dma-buf of %lld bytes for a 4-page range", (long long)size);
		printf("  dma-buf fd %d, offset %llu, size %lld\n", fd, (unsigned long long)off,
		       (long long)size);
		close(fd);
		const int n = 200;
		double t0 = now_ns();
		for (int i = 0; i < n; i++) {
			ret = ddtx_hmem_dmabuf_fd((void *)(uintptr_t)dev, len, &fd, &off);
			if (ret)
				break;
			close(fd);
		}
		CHECK(ret == 0, "repeated export failed: %s", fi_strerror(-ret));
		printf("  dma-buf export + close of 8 MiB: %.1f us\n", (now_ns() - t0) / n / 1e3);
	}
	CHECK(ddtx_hmem_dmabuf_fd(host, sizeof(host), &fd, &off) == -FI_EINVAL,
	      "host memory has no dma-buf");
	CHECK(ddtx_hmem_dmabuf_fd(p, 0, &fd, &off) == -FI_EINVAL, "zero length");
	CHECK(ddtx_hmem_sync_memops(p) == 0, "SYNC_MEMOPS on device memory");

	/* The memory still holds what is written to it (nothing above disturbed it). */
	unsigned char in[4096], out[4096];
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)(i * 7 + 1);
	CHECK(!cu.htod(dev + 4096, in, sizeof(in)) && !cu.dtoh(out, dev + 4096, sizeof(out)) &&
	      !memcmp(in, out, sizeof(in)), "device round trip");
	CHECK(!cu.free(dev), "cuMemFree");
}

/* The registration thread has no CUDA context current: detection must not depend on one. */
struct thread_arg {
	cu_ptr dev;
	struct ddtx_hmem_attr a;
	int dmabuf;
};

static void *detect_thread(void *varg)
{
	struct thread_arg *t = varg;
	int fd;
	uint64_t off;

	ddtx_hmem_detect((void *)(uintptr_t)t->dev, &t->a);
	t->dmabuf = ddtx_hmem_dmabuf_fd((void *)(uintptr_t)t->dev, 4096, &fd, &off);
	if (!t->dmabuf)
		close(fd);
	return NULL;
}

static void test_other_thread(void)
{
	struct thread_arg t = {0};
	pthread_t th;
	int supported = 0;

	CHECK(!cu.alloc(&t.dev, 1 << 20), "cuMemAlloc");
	CHECK(!pthread_create(&th, NULL, detect_thread, &t) && !pthread_join(th, NULL), "thread");
	CHECK(t.a.iface == DDTX_HMEM_CUDA && t.a.buffer_id != 0,
	      "a thread without a current context sees %s", iface_name(t.a.iface));
	(void)cu.device_attr(&supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, cu_dev);
	CHECK(!supported || t.dmabuf == 0, "dma-buf export from a thread without a context: %s",
	      fi_strerror(-t.dmabuf));
	CHECK(!cu.free(t.dev), "cuMemFree");
}

int main(void)
{
	int ret = cuda_open();

	if (ret)
		return ret;
	printf("test_hmem_cuda: GPU %d\n", cu_dev);
	test_classes();
	test_dmabuf();
	test_other_thread();
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("hmem CUDA tests passed\n");
	return 0;
}
