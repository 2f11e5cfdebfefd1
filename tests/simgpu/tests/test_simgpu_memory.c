/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_simgpu_memory.c — the simulator's memory, copies, devices and error
 * reporting: allocation kinds and pointer attributes, capacity exhaustion,
 * pinned and registered host memory, data round trips through every copy
 * call, every invalid-argument error code, last-error semantics, and the
 * shape of the exported entry points (push %rbp first, tail-call stub).
 * Runs with SIMGPU_DEVICES=2 and SIMGPU_DEVICE_MEM_MB=64.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "simgpu_test.h"
#include "gpuprobed/api.h"

#define MB (1024 * 1024)

static void test_exports(void **state)
{
	static const char *const extra[] = {
		"cudaGetDeviceCount",
		"cudaGetDevice",
		"cudaDeviceReset",
		"cudaGetLastError",
		"cudaPeekAtLastError",
		"cudaGetErrorString",
		"cudaGetErrorName",
		"cudaMemGetInfo",
		"cudaRuntimeGetVersion",
		"cudaDriverGetVersion",
		"cudaPointerGetAttributes",
		"cudaStreamQuery",
		"cudaStreamQuery_ptsz",
		"cudaEventQuery",
		"cudaEventElapsedTime",
		"cudaEventRecordWithFlags",
		"cudaStreamBeginCapture",
		"cudaStreamBeginCapture_ptsz",
		"cudaStreamEndCapture",
		"cudaStreamEndCapture_ptsz",
		"cudaGraphInstantiate",
		"cudaGraphExecDestroy",
		"cudaGraphDestroy",
		"cudaLaunchHostFunc",
		"__cudaRegisterFatBinary",
		"__cudaRegisterFatBinaryEnd",
		"__cudaRegisterFunction",
		"__cudaRegisterVar",
		"__cudaRegisterManagedVar",
		"__cudaUnregisterFatBinary",
		"__cudaPushCallConfiguration",
		"__cudaPopCallConfiguration",
		"__cudaGetKernel",
		"__cudaInitModule",
	};
	void *lib = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
	const unsigned char *p;

	(void)state;
	assert_true(assert_exports(lib, "libcudart.so.13", "libcudart.so.13", GP_FAM_CUDART, extra,
				   sizeof(extra) / sizeof(extra[0])) > 60);
	/* __cudaLaunchKernel: push %rbp; mov %rsp,%rbp; pop %rbp; jmp rel32 */
	p = dlsym(lib, "__cudaLaunchKernel");
	assert_non_null(p);
	ASSERT_PUSH_RBP(p, "__cudaLaunchKernel");
	assert_memory_equal(p + 1, "\x48\x89\xe5\x5d\xe9", 5);
	p = dlsym(lib, "__cudaLaunchKernel_ptsz");
	ASSERT_PUSH_RBP(p, "__cudaLaunchKernel_ptsz");
	assert_memory_equal(p + 1, "\x48\x89\xe5\x5d\xe9", 5);
	dlclose(lib);
}

static void test_devices(void **state)
{
	int n = -1, d = -1, v = 0;

	(void)state;
	CK(cudaGetDeviceCount(&n));
	assert_int_equal(n, 2);
	CK(cudaGetDevice(&d));
	assert_int_equal(d, 0);
	CK_ERR(cudaSetDevice(2), cudaErrorInvalidDevice);
	CK_ERR(cudaSetDevice(-1), cudaErrorInvalidDevice);
	CK(cudaSetDevice(1));
	CK(cudaGetDevice(&d));
	assert_int_equal(d, 1);
	CK(cudaSetDevice(0));
	CK_ERR(cudaGetDeviceCount(NULL), cudaErrorInvalidValue);
	CK(cudaRuntimeGetVersion(&v));
	assert_int_equal(v, 13000);
	CK(cudaDriverGetVersion(&v));
	assert_int_equal(v, 13000);
	cudaGetLastError();
}

static void test_malloc_free(void **state)
{
	void *a = NULL, *b = NULL, *m = NULL;
	size_t fr, tot;
	struct cudaPointerAttributes at;

	(void)state;
	CK(cudaMemGetInfo(&fr, &tot));
	assert_int_equal(tot, 64 * MB);
	assert_int_equal(fr, 64 * MB);
	CK(cudaMalloc(&a, 40 * MB));
	assert_non_null(a);
	assert_int_equal((uintptr_t)a % 256, 0);
	CK_ERR(cudaMalloc(&b, 30 * MB), cudaErrorMemoryAllocation);
	CK(cudaMemGetInfo(&fr, &tot));
	assert_int_equal(fr, 24 * MB);
	CK(cudaMalloc(&b, 24 * MB)); /* exactly fills the device */
	CK_ERR(cudaMalloc(&m, 1), cudaErrorMemoryAllocation);
	CK_ERR(cudaMallocManaged(&m, 512, cudaMemAttachGlobal), cudaErrorMemoryAllocation);
	CK(cudaFree(b));
	CK(cudaFree(a));
	CK(cudaMemGetInfo(&fr, &tot));
	assert_int_equal(fr, 64 * MB);
	/* the other device has its own capacity */
	CK(cudaSetDevice(1));
	CK(cudaMalloc(&a, 60 * MB));
	CK(cudaPointerGetAttributes(&at, a));
	assert_int_equal(at.type, cudaMemoryTypeDevice);
	assert_int_equal(at.device, 1);
	assert_ptr_equal(at.devicePointer, a);
	assert_null(at.hostPointer);
	CK(cudaFree(a));
	CK(cudaSetDevice(0));

	CK_ERR(cudaMalloc(NULL, 16), cudaErrorInvalidValue);
	CK(cudaMalloc(&a, 0));
	assert_null(a);
	CK(cudaFree(NULL));
	CK(cudaMalloc(&a, 4096));
	CK_ERR(cudaFree((char *)a + 16), cudaErrorInvalidValue);
	CK(cudaFree(a));
	CK_ERR(cudaFree(a), cudaErrorInvalidValue);   /* double free */
	CK_ERR(cudaFree(&fr), cudaErrorInvalidValue); /* a host pointer */

	CK(cudaMallocManaged(&m, 1000, cudaMemAttachGlobal));
	memset(m, 7, 1000); /* host access */
	CK(cudaPointerGetAttributes(&at, (char *)m + 10));
	assert_int_equal(at.type, cudaMemoryTypeManaged);
	assert_ptr_equal(at.hostPointer, (char *)m + 10);
	CK_ERR(cudaMallocManaged(&a, 100, 0), cudaErrorInvalidValue);
	CK(cudaFree(m));

	CK(cudaMallocAsync(&a, 1000, NULL));
	CK(cudaFreeAsync(a, NULL));
	CK(cudaDeviceSynchronize());
	CK_ERR(cudaFreeAsync(a, NULL), cudaErrorInvalidValue);
	CK(cudaMemGetInfo(&fr, &tot));
	assert_int_equal(fr, 64 * MB);
	CK(cudaPointerGetAttributes(&at, &fr));
	assert_int_equal(at.type, cudaMemoryTypeUnregistered);
	CK_ERR(cudaPointerGetAttributes(NULL, &fr), cudaErrorInvalidValue);
	cudaGetLastError();
}

static void test_pinned(void **state)
{
	long page = sysconf(_SC_PAGESIZE);
	char *h = NULL, *h2 = NULL, *buf = aligned_alloc((size_t)page, 4 * (size_t)page);
	struct cudaPointerAttributes at;
	unsigned flags = 0;
	void *dp;

	(void)state;
	CK(cudaMallocHost((void **)&h, 1000));
	assert_int_equal((uintptr_t)h % (uintptr_t)page, 0);
	h[999] = 1;
	CK(cudaPointerGetAttributes(&at, h));
	assert_int_equal(at.type, cudaMemoryTypeHost);
	CK(cudaHostAlloc((void **)&h2, 5000, cudaHostAllocMapped | cudaHostAllocPortable));
	CK(cudaHostGetFlags(&flags, h2));
	assert_int_equal(flags, cudaHostAllocMapped | cudaHostAllocPortable);
	CK(cudaHostGetDevicePointer(&dp, h2, 0));
	assert_ptr_equal(dp, h2);
	CK_ERR(cudaHostAlloc((void **)&h2, 10, 0x100), cudaErrorInvalidValue);
	CK_ERR(cudaFreeHost(buf), cudaErrorInvalidValue);
	CK_ERR(cudaFree(h), cudaErrorInvalidValue);
	CK(cudaFreeHost(h));
	CK(cudaFreeHost(NULL));

	CK_ERR(cudaHostRegister(NULL, 100, 0), cudaErrorInvalidValue);
	CK_ERR(cudaHostRegister(buf, 0, 0), cudaErrorInvalidValue);
	CK_ERR(cudaHostRegister(buf, 100, 0x100), cudaErrorInvalidValue);
	CK(cudaHostRegister(buf + page, 2 * (size_t)page, cudaHostRegisterDefault));
	CK_ERR(cudaHostRegister(buf, 2 * (size_t)page, 0), cudaErrorHostMemoryAlreadyRegistered);
	CK_ERR(cudaHostRegister(buf + 2 * page, 10, 0), cudaErrorHostMemoryAlreadyRegistered);
	CK_ERR(cudaHostRegister(h2 + 100, 10, 0), cudaErrorHostMemoryAlreadyRegistered);
	CK(cudaPointerGetAttributes(&at, buf + page + 5));
	assert_int_equal(at.type, cudaMemoryTypeHost);
	CK(cudaPointerGetAttributes(&at, buf));
	assert_int_equal(at.type, cudaMemoryTypeUnregistered);
	CK_ERR(cudaHostUnregister(buf), cudaErrorHostMemoryNotRegistered);
	CK_ERR(cudaHostUnregister(NULL), cudaErrorInvalidValue);
	CK(cudaHostUnregister(buf + page));
	CK_ERR(cudaHostUnregister(buf + page), cudaErrorHostMemoryNotRegistered);
	CK(cudaFreeHost(h2));
	free(buf);
	cudaGetLastError();
}

static void test_round_trips(void **state)
{
	enum { N = 1 << 20 };
	unsigned char *src = malloc(N), *dst = malloc(N), *pin;
	char *d0, *d1, *d2;
	size_t i;

	(void)state;
	for (i = 0; i < N; i++)
		src[i] = (unsigned char)(i * 7 + 3);
	CK(cudaMallocHost((void **)&pin, N));
	CK(cudaMalloc((void **)&d0, N));
	CK(cudaMalloc((void **)&d1, N));
	CK(cudaMemcpy(d0, src, N, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(d1, d0, N, cudaMemcpyDeviceToDevice));
	CK(cudaMemcpy(pin, d1, N, cudaMemcpyDeviceToHost));
	assert_memory_equal(pin, src, N);
	CK(cudaMemcpy(dst, d1, N, cudaMemcpyDefault));
	assert_memory_equal(dst, src, N);
	memset(dst, 0, N);
	CK(cudaMemcpyAsync(d0, pin, N, cudaMemcpyHostToDevice, NULL));
	CK(cudaMemcpyAsync(dst, d0, N, cudaMemcpyDeviceToHost, NULL));
	CK(cudaStreamSynchronize(NULL));
	assert_memory_equal(dst, src, N);

	/* a pageable source may be reused as soon as cudaMemcpyAsync returns */
	memcpy(dst, src, N);
	CK(cudaMemcpyAsync(d0, dst, N, cudaMemcpyHostToDevice, NULL));
	memset(dst, 0xee, N);
	CK(cudaMemcpy(pin, d0, N, cudaMemcpyDeviceToHost));
	assert_memory_equal(pin, src, N);

	CK(cudaMemset(d0, 0x5a, N));
	CK(cudaMemsetAsync(d0, 0xa5, 100, NULL));
	CK(cudaMemcpy(dst, d0, N, cudaMemcpyDeviceToHost));
	assert_int_equal(dst[0], 0xa5);
	assert_int_equal(dst[99], 0xa5);
	assert_int_equal(dst[100], 0x5a);
	assert_int_equal(dst[N - 1], 0x5a);

	/* 2D: a 100 x 50 block out of a 256-byte pitched source */
	CK(cudaMemset(d1, 0, N));
	CK(cudaMemcpy2D(d1, 128, src, 256, 100, 50, cudaMemcpyHostToDevice));
	CK(cudaMemcpy2D(dst, 100, d1, 128, 100, 50, cudaMemcpyDeviceToHost));
	for (i = 0; i < 50; i++)
		assert_memory_equal(dst + i * 100, src + i * 256, 100);
	CK(cudaMemcpy2DAsync(dst, 100, d1, 128, 100, 50, cudaMemcpyDefault, NULL));
	CK(cudaDeviceSynchronize());

	/* peer copies between the two devices */
	CK(cudaSetDevice(1));
	CK(cudaMalloc((void **)&d2, N));
	CK(cudaSetDevice(0));
	CK(cudaMemcpyPeer(d2, 1, d1, 0, 100));
	CK(cudaMemcpyPeerAsync(d0, 0, d2, 1, 100, NULL));
	CK(cudaMemcpy(dst, d0, 100, cudaMemcpyDeviceToHost));
	assert_memory_equal(dst, src, 100);
	CK_ERR(cudaMemcpyPeer(d2, 0, d1, 0, 100), cudaErrorInvalidValue);
	CK_ERR(cudaMemcpyPeer(d2, 5, d1, 0, 100), cudaErrorInvalidDevice);

	/* errors */
	CK_ERR(cudaMemcpy(d0, src, N, (enum cudaMemcpyKind)7), cudaErrorInvalidMemcpyDirection);
	CK_ERR(cudaMemcpyAsync(d0, src, N, (enum cudaMemcpyKind) - 1, NULL),
	       cudaErrorInvalidMemcpyDirection);
	CK_ERR(cudaMemcpy(NULL, src, N, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
	CK_ERR(cudaMemcpy(d0, NULL, N, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
	CK_ERR(cudaMemcpy(d0 + 1, src, N, cudaMemcpyHostToDevice),
	       cudaErrorInvalidValue); /* past the end */
	CK_ERR(cudaMemcpy(dst, src, N, cudaMemcpyHostToDevice),
	       cudaErrorInvalidValue); /* dst not device */
	CK_ERR(cudaMemcpy(dst, src, N, cudaMemcpyDeviceToHost),
	       cudaErrorInvalidValue); /* src not device */
	CK_ERR(cudaMemcpy(d0 + 2 * N, src, 1, cudaMemcpyDefault),
	       cudaErrorInvalidValue); /* unallocated */
	CK_ERR(cudaMemcpy2D(d1, 64, src, 256, 100, 2, cudaMemcpyHostToDevice),
	       cudaErrorInvalidPitchValue);
	CK_ERR(cudaMemset(dst, 0, 10), cudaErrorInvalidValue);
	CK_ERR(cudaMemset(d0, 0, N + 1), cudaErrorInvalidValue);
	CK_ERR(cudaMemset(NULL, 0, 1), cudaErrorInvalidValue);
	CK(cudaMemcpy(dst, src, 0, cudaMemcpyHostToDevice)); /* nothing to do */

	CK(cudaFree(d0));
	CK(cudaFree(d1));
	CK(cudaSetDevice(1));
	CK(cudaFree(d2));
	CK(cudaSetDevice(0));
	CK(cudaFreeHost(pin));
	free(src);
	free(dst);
	cudaGetLastError();
}

static void *other_thread_error(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)cudaGetLastError();
}

static void test_last_error(void **state)
{
	pthread_t t;
	void *ret;

	(void)state;
	cudaGetLastError();
	CK(cudaPeekAtLastError());
	CK_ERR(cudaMalloc(NULL, 1), cudaErrorInvalidValue);
	CK_ERR(cudaPeekAtLastError(), cudaErrorInvalidValue);
	CK_ERR(cudaPeekAtLastError(), cudaErrorInvalidValue);
	/* per host thread */
	assert_int_equal(pthread_create(&t, NULL, other_thread_error, NULL), 0);
	pthread_join(t, &ret);
	assert_int_equal((intptr_t)ret, cudaSuccess);
	CK(cudaSetDevice(0)); /* a success does not clear it */
	CK_ERR(cudaGetLastError(), cudaErrorInvalidValue);
	CK(cudaGetLastError());

	assert_string_equal(cudaGetErrorName(cudaErrorNotReady), "cudaErrorNotReady");
	assert_string_equal(cudaGetErrorName(cudaErrorStreamCaptureUnsupported),
			    "cudaErrorStreamCaptureUnsupported");
	assert_string_equal(cudaGetErrorString(cudaSuccess), "no error");
	assert_string_equal(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory");
	assert_string_equal(cudaGetErrorString(cudaErrorLaunchTimeout), "launch timeout");
	assert_string_equal(cudaGetErrorName((cudaError_t)12345), "unrecognized error code");
	assert_int_equal(cudaErrorInvalidMemcpyDirection, 21);
	assert_int_equal(cudaErrorInsufficientDriver, 35);
	assert_int_equal(cudaErrorInvalidResourceHandle, 400);
	assert_int_equal(cudaErrorStreamCaptureImplicit, 906);
}

static void test_peer_access(void **state)
{
	int can = -1;

	(void)state;
	CK(cudaDeviceCanAccessPeer(&can, 0, 1));
	assert_int_equal(can, 1);
	CK(cudaDeviceEnablePeerAccess(1, 0));
	CK_ERR(cudaDeviceEnablePeerAccess(1, 0), cudaErrorPeerAccessAlreadyEnabled);
	CK(cudaDeviceDisablePeerAccess(1));
	CK_ERR(cudaDeviceDisablePeerAccess(1), cudaErrorPeerAccessNotEnabled);
	CK_ERR(cudaDeviceEnablePeerAccess(0, 0), cudaErrorInvalidDevice);
	cudaGetLastError();
}

static void test_device_reset(void **state)
{
	void *a;
	size_t fr, tot;
	cudaStream_t s;

	(void)state;
	CK(cudaMalloc(&a, 10 * MB));
	CK(cudaStreamCreate(&s));
	CK(cudaDeviceReset());
	CK(cudaMemGetInfo(&fr, &tot));
	assert_int_equal(fr, tot);
	CK_ERR(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaFree(a), cudaErrorInvalidValue);
	cudaGetLastError();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exports),	    cmocka_unit_test(test_devices),
		cmocka_unit_test(test_malloc_free), cmocka_unit_test(test_pinned),
		cmocka_unit_test(test_round_trips), cmocka_unit_test(test_last_error),
		cmocka_unit_test(test_peer_access), cmocka_unit_test(test_device_reset),
	};

	setenv("SIMGPU_DEVICES", "2", 1);
	setenv("SIMGPU_DEVICE_MEM_MB", "64", 1);
	unsetenv("SIMGPU_INIT_ERROR");
	unsetenv("SIMGPU_LOG");
	return cmocka_run_group_tests_name("simgpu memory", tests, NULL, NULL);
}
