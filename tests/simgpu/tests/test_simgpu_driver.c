/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_simgpu_driver.c — the simulated driver, libcuda.so.1: its exports
 * (every GP_FAM_CUDA row of include/gpuprobed/api.h, push %rbp first), the
 * not-initialised and no-context errors, devices and contexts, memory and
 * copies in every direction with data checks, memsets, stream-ordered
 * forms, modules and libraries (from data and from files, bad images,
 * missing names), launches through a CUfunction and a CUkernel timed by
 * events, virtual memory management with capacity accounting, handles
 * shared with the runtime, and — in re-executed children with SIMGPU_LOG=1
 * — that each runtime call makes exactly its one driver call on the same
 * thread (none with SIMGPU_RUNTIME_DIRECT=1), that the launch cost is spent
 * once, and the knobs that make cuInit fail. cuGetProcAddress_v2 too. Runs with SIMGPU_DEVICES=2 and SIMGPU_DEVICE_MEM_MB=64.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda.h"
#include "simgpu_test.h"
#include "gpuprobed/api.h"

#define MB (1024 * 1024)

static const char *cu_name(CUresult r)
{
	const char *s = NULL;

	return cuGetErrorName(r, &s) ? "?" : s;
}

#define CU(call)                                                                     \
	do {                                                                         \
		CUresult cu_r_ = (call);                                             \
		if (cu_r_ != CUDA_SUCCESS)                                           \
			fail_msg("%s = %d (%s)", #call, (int)cu_r_, cu_name(cu_r_)); \
	} while (0)

#define CU_ERR(call, want)                                                                        \
	do {                                                                                      \
		CUresult cu_r_ = (call);                                                          \
		if (cu_r_ != (want))                                                              \
			fail_msg("%s = %d (%s), want %d (%s)", #call, (int)cu_r_, cu_name(cu_r_), \
				 (int)(want), cu_name(want));                                     \
	} while (0)

/* "kernels" of gcc-built programs for the runtime children */
void drv_rt_kernel(void);
void drv_rt_kernel(void)
{
}

static const char image[] = "simgpu-module\n"
			    "# two kernels, one mangled\n"
			    "  drv_fast  \n"
			    "\n"
			    "_Z8drv_slowPfi\r\n"
			    "drv_fast\n";

static CUcontext primary0;

/* ---- exports --------------------------------------------------------------------------- */
static void test_exports(void **state)
{
	static const char *const extra[] = {
		"cuInit",
		"cuDriverGetVersion",
		"cuDeviceGetCount",
		"cuDeviceGet",
		"cuDeviceGetName",
		"cuDeviceTotalMem_v2",
		"cuDeviceGetAttribute",
		"cuDevicePrimaryCtxRetain",
		"cuDevicePrimaryCtxRelease",
		"cuDevicePrimaryCtxRelease_v2",
		"cuCtxCreate_v2",
		"cuCtxCreate_v4",
		"cuCtxDestroy_v2",
		"cuCtxSetCurrent",
		"cuCtxGetCurrent",
		"cuCtxGetDevice",
		"cuCtxPushCurrent_v2",
		"cuCtxPopCurrent_v2",
		"cuStreamCreate",
		"cuStreamCreateWithPriority",
		"cuStreamDestroy_v2",
		"cuStreamQuery",
		"cuEventCreate",
		"cuEventRecord",
		"cuEventRecord_ptsz",
		"cuEventQuery",
		"cuEventDestroy_v2",
		"cuEventElapsedTime",
		"cuEventElapsedTime_v2",
		"cuMemGetInfo_v2",
		"cuMemAddressReserve",
		"cuMemAddressFree",
		"cuMemSetAccess",
		"cuMemGetAllocationGranularity",
		"cuFuncGetName",
		"cuKernelGetName",
		"cuGetErrorName",
		"cuGetErrorString",
		"cuGetProcAddress_v2",
	};
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

	(void)state;
	assert_true(assert_exports(lib, "libcuda.so.1", NULL, GP_FAM_CUDA, extra,
				   sizeof(extra) / sizeof(extra[0])) > 100);
	dlclose(lib);
}

static void test_proc_address(void **state)
{
	CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
	void *fn = NULL;

	(void)state;
	/* base names, the newest version the caller's CUDA version allows */
	CU(cuGetProcAddress_v2("cuMemAlloc", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st));
	assert_ptr_equal(fn, dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"));
	assert_int_equal(st, CU_GET_PROC_ADDRESS_SUCCESS);
	CU(cuGetProcAddress_v2("cuLaunchKernel", &fn, 13000,
			       CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL));
	assert_ptr_equal(fn, dlsym(RTLD_DEFAULT, "cuLaunchKernel_ptsz"));
	CU(cuGetProcAddress_v2("cuMemcpyHtoD", &fn, 13000,
			       CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL));
	assert_ptr_equal(fn, dlsym(RTLD_DEFAULT, "cuMemcpyHtoD_v2_ptds"));
	CU(cuGetProcAddress_v2("cuEventElapsedTime", &fn, 12000, 0, NULL));
	assert_ptr_equal(fn, dlsym(RTLD_DEFAULT, "cuEventElapsedTime"));
	CU(cuGetProcAddress_v2("cuEventElapsedTime", &fn, 13000, 0, NULL));
	assert_ptr_equal(fn, dlsym(RTLD_DEFAULT, "cuEventElapsedTime_v2"));
	CU(cuGetProcAddress_v2("cuCtxCreate", &fn, 12000, 0, NULL));
	assert_ptr_equal(fn, dlsym(RTLD_DEFAULT, "cuCtxCreate_v2"));
	CU_ERR(cuGetProcAddress_v2("cuLibraryLoadData", &fn, 11080, 0, &st), CUDA_ERROR_NOT_FOUND);
	assert_int_equal(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	CU_ERR(cuGetProcAddress_v2("cuNoSuchThing", &fn, 13000, 0, &st), CUDA_ERROR_NOT_FOUND);
	assert_int_equal(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	assert_null(fn);
	CU_ERR(cuGetProcAddress_v2(NULL, &fn, 13000, 0, NULL), CUDA_ERROR_INVALID_VALUE);
}

/* ---- before cuInit ----------------------------------------------------------------------- */
static void test_not_initialized(void **state)
{
	CUdeviceptr d;
	CUcontext c;
	CUmodule m;
	const char *s;
	int n, v = 0;

	(void)state;
	CU_ERR(cuMemAlloc_v2(&d, 16), CUDA_ERROR_NOT_INITIALIZED);
	CU_ERR(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
	CU_ERR(cuCtxGetCurrent(&c), CUDA_ERROR_NOT_INITIALIZED);
	CU_ERR(cuModuleLoadData(&m, image), CUDA_ERROR_NOT_INITIALIZED);
	CU_ERR(cuCtxSynchronize(), CUDA_ERROR_NOT_INITIALIZED);
	/* these work without cuInit */
	CU(cuDriverGetVersion(&v));
	assert_int_equal(v, 13000);
	CU(cuGetErrorName(CUDA_ERROR_INVALID_IMAGE, &s));
	assert_string_equal(s, "CUDA_ERROR_INVALID_IMAGE");
	CU(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
	assert_string_equal(s, "out of memory");
	CU(cuGetErrorString(CUDA_ERROR_LAUNCH_TIMEOUT, &s));
	assert_string_equal(s, "launch timeout");
	CU_ERR(cuGetErrorName((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
	assert_null(s);
	CU_ERR(cuInit(1), CUDA_ERROR_INVALID_VALUE);
	CU(cuInit(0));
	CU(cuInit(0));
}

/* ---- devices and contexts ------------------------------------------------------------------ */
static void *no_context_thread(void *arg)
{
	CUdeviceptr d;
	CUcontext c = (CUcontext)1;

	(void)arg;
	if (cuCtxGetCurrent(&c) || c)
		return (void *)1;
	return (void *)(uintptr_t)cuMemAlloc_v2(&d, 16);
}

static void test_contexts(void **state)
{
	CUcontext c = (CUcontext)1, mine, popped, p1;
	CUdevice dev = -1;
	CUdeviceptr d;
	size_t bytes = 0;
	pthread_t t;
	void *ret;
	char name[64];
	int n = 0, v = 0;

	(void)state;
	CU(cuDeviceGetCount(&n));
	assert_int_equal(n, 2);
	CU(cuDeviceGet(&dev, 1));
	assert_int_equal(dev, 1);
	CU_ERR(cuDeviceGet(&dev, 2), CUDA_ERROR_INVALID_DEVICE);
	CU(cuDeviceGetName(name, sizeof(name), 1));
	assert_non_null(strstr(name, "simgpu"));
	CU(cuDeviceTotalMem_v2(&bytes, 0));
	assert_int_equal(bytes, 64 * MB);
	CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
	assert_int_equal(v, 9);
	CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
	assert_int_equal(v, 1);
	CU_ERR(cuDeviceGetAttribute(&v, (CUdevice_attribute)0, 0), CUDA_ERROR_INVALID_VALUE);

	/* no current context yet */
	CU(cuCtxGetCurrent(&c));
	assert_null(c);
	CU_ERR(cuMemAlloc_v2(&d, 16), CUDA_ERROR_INVALID_CONTEXT);
	CU_ERR(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
	CU_ERR(cuCtxGetDevice(&dev), CUDA_ERROR_INVALID_CONTEXT);
	CU_ERR(cuStreamSynchronize(NULL), CUDA_ERROR_INVALID_CONTEXT);

	/* the primary context of device 0 */
	CU(cuDevicePrimaryCtxRetain(&primary0, 0));
	CU(cuCtxSetCurrent(primary0));
	CU(cuCtxGetCurrent(&c));
	assert_ptr_equal(c, primary0);
	CU(cuCtxGetDevice(&dev));
	assert_int_equal(dev, 0);

	/* a created context on device 1 is pushed, and popped back */
	CU(cuCtxCreate_v4(&mine, NULL, 0, 1));
	CU(cuCtxGetCurrent(&c));
	assert_ptr_equal(c, mine);
	CU(cuCtxGetDevice(&dev));
	assert_int_equal(dev, 1);
	CU(cuCtxPopCurrent_v2(&popped));
	assert_ptr_equal(popped, mine);
	CU(cuCtxGetCurrent(&c));
	assert_ptr_equal(c, primary0);
	CU(cuCtxPushCurrent_v2(mine));
	CU(cuCtxDestroy_v2(mine)); /* current: popped as well */
	CU(cuCtxGetCurrent(&c));
	assert_ptr_equal(c, primary0);
	CU_ERR(cuCtxSetCurrent(mine), CUDA_ERROR_INVALID_CONTEXT);
	CU_ERR(cuCtxDestroy_v2(mine), CUDA_ERROR_INVALID_CONTEXT);
	CU_ERR(cuCtxDestroy_v2(primary0), CUDA_ERROR_INVALID_CONTEXT);
	CU_ERR(cuCtxCreate_v2(&mine, 0x100, 0), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cuCtxCreate_v2(&mine, 0, 7), CUDA_ERROR_INVALID_DEVICE);

	/* a primary context is usable while retained */
	CU(cuDevicePrimaryCtxRetain(&p1, 1));
	CU(cuCtxPushCurrent_v2(p1));
	CU(cuCtxSynchronize());
	CU(cuDevicePrimaryCtxRelease_v2(1));
	CU_ERR(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
	CU_ERR(cuDevicePrimaryCtxRelease_v2(1), CUDA_ERROR_INVALID_CONTEXT);
	CU(cuCtxPopCurrent_v2(NULL));
	CU(cuCtxGetCurrent(&c));
	assert_ptr_equal(c, primary0);

	/* the current context is per host thread */
	assert_int_equal(pthread_create(&t, NULL, no_context_thread, NULL), 0);
	pthread_join(t, &ret);
	assert_int_equal((intptr_t)ret, CUDA_ERROR_INVALID_CONTEXT);
}

/* ---- memory and copies ------------------------------------------------------------------------ */
static void test_memory(void **state)
{
	enum { N = 1 << 20 };
	unsigned char *src = malloc(N), *dst = malloc(N), *pin = NULL, *pin2 = NULL;
	unsigned *words = malloc(N);
	CUdeviceptr a = 0, b = 0, m = 0, big = 0;
	size_t fr, tot, i;
	CUstream s;

	(void)state;
	for (i = 0; i < N; i++)
		src[i] = (unsigned char)(i * 13 + 5);
	CU(cuMemGetInfo_v2(&fr, &tot));
	assert_int_equal(tot, 64 * MB);
	assert_int_equal(fr, 64 * MB);
	CU(cuMemAlloc_v2(&a, N));
	CU(cuMemAlloc_v2(&b, N));
	assert_int_equal(a >> 44, 0x6); /* in device 0's region */
	CU(cuMemGetInfo_v2(&fr, &tot));
	assert_int_equal(fr, 62 * MB);
	CU_ERR(cuMemAlloc_v2(&big, 63 * MB), CUDA_ERROR_OUT_OF_MEMORY);
	CU_ERR(cuMemAlloc_v2(&big, 0), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cuMemAlloc_v2(NULL, 16), CUDA_ERROR_INVALID_VALUE);
	CU(cuMemAllocHost_v2((void **)&pin, N));
	CU(cuMemHostAlloc((void **)&pin2, N, CU_MEMHOSTALLOC_PORTABLE));
	CU_ERR(cuMemHostAlloc((void **)&pin2, N, 0x100), CUDA_ERROR_INVALID_VALUE);

	/* every direction, data checked */
	CU(cuMemcpyHtoD_v2(a, src, N)); /* pageable -> device */
	CU(cuMemcpyDtoD_v2(b, a, N));
	CU(cuMemcpyDtoH_v2(pin, b, N)); /* device -> pinned */
	assert_memory_equal(pin, src, N);
	memset(dst, 0, N);
	CU(cuMemcpy((CUdeviceptr)(uintptr_t)dst, b, N)); /* default: device -> pageable */
	assert_memory_equal(dst, src, N);
	CU(cuMemcpy(a, (CUdeviceptr)(uintptr_t)pin2, 0)); /* nothing to do */
	CU(cuMemcpy((CUdeviceptr)(uintptr_t)pin2, (CUdeviceptr)(uintptr_t)src,
		    N)); /* host -> host */
	assert_memory_equal(pin2, src, N);
	CU(cuMemcpy_ptds(a, (CUdeviceptr)(uintptr_t)pin2, N));
	CU(cuMemcpyHtoD_v2_ptds(b, src, 100));
	CU(cuMemcpyDtoD_v2_ptds(b, a, 100));
	memset(dst, 0, N);
	CU(cuMemcpyDtoH_v2_ptds(dst, a, N));
	assert_memory_equal(dst, src, N);

	/* stream-ordered, on a stream and on the per-thread stream */
	CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	memset(dst, 0, N);
	CU(cuMemsetD8Async(a, 0, N, s));
	CU(cuMemcpyHtoDAsync_v2(a, pin, N, s));
	CU(cuMemcpyDtoDAsync_v2(b, a, N, s));
	CU(cuMemcpyDtoHAsync_v2(dst, b, N, s));
	CU(cuStreamSynchronize(s));
	assert_memory_equal(dst, src, N);
	memset(dst, 0, N);
	CU(cuMemcpyHtoDAsync_v2_ptsz(a, src, N, NULL));
	CU(cuMemcpyDtoDAsync_v2_ptsz(b, a, N, CU_STREAM_PER_THREAD));
	CU(cuMemcpyAsync_ptsz((CUdeviceptr)(uintptr_t)dst, b, N, NULL));
	CU(cuMemcpyDtoHAsync_v2_ptsz(pin2, b, N, NULL));
	CU(cuStreamSynchronize_ptsz(NULL));
	assert_memory_equal(dst, src, N);
	assert_memory_equal(pin2, src, N);
	CU(cuMemcpyAsync(b, a, N, s));
	CU(cuStreamSynchronize(s));
	CU(cuStreamQuery(s));

	/* memsets: bytes and 32-bit words, sync and async */
	CU(cuMemsetD8_v2(a, 0x5a, N));
	CU(cuMemsetD32_v2(a + 64, 0xdeadbeef, 16));
	CU(cuMemsetD8_v2_ptds(a + 200, 0x11, 8));
	CU(cuMemsetD32_v2_ptds(a + 256, 0x01020304, 2));
	CU(cuMemsetD32Async(a + 1024, 0xcafef00d, 4, s));
	CU(cuMemsetD8Async_ptsz(a + 2048, 0x77, 3, NULL));
	CU(cuMemsetD32Async_ptsz(a + 4096, 7, 1, CU_STREAM_PER_THREAD));
	CU(cuStreamSynchronize(s));
	CU(cuStreamSynchronize_ptsz(NULL));
	CU(cuMemcpyDtoH_v2(words, a, N));
	assert_int_equal(((unsigned char *)words)[0], 0x5a);
	assert_int_equal(((unsigned char *)words)[63], 0x5a);
	for (i = 16; i < 32; i++)
		assert_int_equal(words[i], 0xdeadbeef);
	assert_int_equal(((unsigned char *)words)[128], 0x5a);
	assert_int_equal(((unsigned char *)words)[200], 0x11);
	assert_int_equal(((unsigned char *)words)[207], 0x11);
	assert_int_equal(((unsigned char *)words)[208], 0x5a);
	assert_int_equal(words[64], 0x01020304);
	assert_int_equal(words[65], 0x01020304);
	assert_int_equal(words[66], 0x5a5a5a5a);
	for (i = 256; i < 260; i++)
		assert_int_equal(words[i], 0xcafef00d);
	assert_int_equal(((unsigned char *)words)[2050], 0x77);
	assert_int_equal(((unsigned char *)words)[2051], 0x5a);
	assert_int_equal(words[1024], 7);

	/* errors */
	CU_ERR(cuMemcpyHtoD_v2((CUdeviceptr)(uintptr_t)dst, src, 16),
	       CUDA_ERROR_INVALID_VALUE); /* dst host */
	CU_ERR(cuMemcpyDtoH_v2(dst, (CUdeviceptr)(uintptr_t)src, 16),
	       CUDA_ERROR_INVALID_VALUE); /* src host */
	CU_ERR(cuMemcpyDtoD_v2(a, (CUdeviceptr)(uintptr_t)src, 16), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cuMemcpyHtoD_v2(a + 1, src, N), CUDA_ERROR_INVALID_VALUE); /* past the end */
	CU_ERR(cuMemcpy(a + 8 * MB, b, 1), CUDA_ERROR_INVALID_VALUE);	  /* unallocated */
	CU_ERR(cuMemcpyHtoDAsync_v2(a, src, 16, (CUstream)dst), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cuMemsetD32_v2(a + 2, 0, 1), CUDA_ERROR_INVALID_VALUE); /* misaligned */
	CU_ERR(cuMemsetD32_v2(a, 0, N / 4 + 1), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cuMemsetD8_v2((CUdeviceptr)(uintptr_t)dst, 0, 1),
	       CUDA_ERROR_INVALID_VALUE); /* host memory */

	/* managed, stream-ordered allocation, frees */
	CU_ERR(cuMemAllocManaged(&m, 4096, 0), CUDA_ERROR_INVALID_VALUE);
	CU(cuMemAllocManaged(&m, 4096, CU_MEM_ATTACH_GLOBAL));
	memset((void *)(uintptr_t)m, 3, 4096); /* host access */
	CU(cuMemcpyDtoD_v2(a, m, 4096));
	CU(cuMemFree_v2(m));
	CU(cuMemAllocAsync(&m, 1000, s));
	CU_ERR(cuMemAllocAsync(&m, 1000, (CUstream)dst), CUDA_ERROR_INVALID_HANDLE);
	CU(cuMemFreeAsync(m, s));
	CU(cuMemAllocAsync_ptsz(&m, 1000, NULL));
	CU(cuMemFreeAsync_ptsz(m, NULL));
	CU(cuStreamSynchronize(s));
	CU(cuStreamSynchronize_ptsz(NULL));
	CU_ERR(cuMemFreeAsync(m, s), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cuMemFree_v2(a + 16), CUDA_ERROR_INVALID_VALUE);
	CU(cuMemFree_v2(a));
	CU_ERR(cuMemFree_v2(a), CUDA_ERROR_INVALID_VALUE); /* double free */
	CU(cuMemFree_v2(b));
	CU_ERR(cuMemFreeHost(src), CUDA_ERROR_INVALID_VALUE);
	CU(cuMemFreeHost(pin));
	CU(cuMemFreeHost(pin2));
	CU(cuMemGetInfo_v2(&fr, &tot));
	assert_int_equal(fr, 64 * MB);

	/* registered host memory */
	CU_ERR(cuMemHostRegister_v2(src, N, 0x100), CUDA_ERROR_INVALID_VALUE);
	CU(cuMemHostRegister_v2(src, N, CU_MEMHOSTREGISTER_PORTABLE));
	CU_ERR(cuMemHostRegister_v2(src + 10, 10, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	CU_ERR(cuMemHostUnregister(src + 10), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	CU(cuMemHostUnregister(src));
	CU_ERR(cuMemHostUnregister(src), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	CU_ERR(cuMemHostUnregister(NULL), CUDA_ERROR_INVALID_VALUE);

	CU(cuStreamDestroy_v2(s));
	CU_ERR(cuStreamDestroy_v2(s), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
	free(src);
	free(dst);
	free(words);
}

/* ---- modules, libraries, functions, kernels ---------------------------------------------------- */
static char *write_tmp(const char *content, size_t len)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/simgpu-module-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, len), (ssize_t)len);
	close(fd);
	return path;
}

static void test_modules(void **state)
{
	CUmodule mod, mod2, mod3;
	CUfunction f, f2, g, kf, kf2;
	CUlibrary lib, lib2;
	CUkernel k, k2;
	CUjit_option opt = CU_JIT_MAX_REGISTERS;
	void *optval = (void *)(uintptr_t)32;
	const char *name;
	char *path;

	(void)state;
	/* from data */
	CU(cuModuleLoadData(&mod, image));
	CU(cuModuleGetFunction(&f, mod, "drv_fast"));
	CU(cuModuleGetFunction(&f2, mod, "drv_fast"));
	assert_ptr_equal(f, f2); /* one handle per (module, name) */
	CU(cuModuleGetFunction(&g, mod, "_Z8drv_slowPfi"));
	assert_ptr_not_equal(f, g);
	CU(cuFuncGetName(&name, g));
	assert_string_equal(name, "_Z8drv_slowPfi");
	CU_ERR(cuModuleGetFunction(&f2, mod, "drv_slow"),
	       CUDA_ERROR_NOT_FOUND); /* names are exact */
	CU_ERR(cuModuleGetFunction(&f2, mod, "# two kernels, one mangled"), CUDA_ERROR_NOT_FOUND);
	CU_ERR(cuModuleGetFunction(NULL, mod, "drv_fast"), CUDA_ERROR_INVALID_VALUE);
	CU(cuModuleLoadDataEx(&mod2, image, 1, &opt, &optval));
	CU(cuModuleGetFunction(&f2, mod2, "drv_fast"));
	assert_ptr_not_equal(f, f2); /* another module: another handle */
	CU(cuModuleLoadFatBinary(&mod3, "simgpu-module\n"));
	CU_ERR(cuModuleGetFunction(&f2, mod3, "drv_fast"), CUDA_ERROR_NOT_FOUND);
	CU(cuModuleUnload(mod3));
	CU(cuModuleUnload(mod2));
	CU_ERR(cuModuleUnload(mod2), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cuModuleGetFunction(&f2, mod2, "drv_fast"), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cuFuncGetName(&name, f2), CUDA_ERROR_INVALID_HANDLE); /* unloaded with its module */
	CU_ERR(cuModuleLoadDataEx(&mod2, image, 1, NULL, NULL), CUDA_ERROR_INVALID_VALUE);

	/* bad images */
	CU_ERR(cuModuleLoadData(&mod2, "\x7f"
				       "ELF"),
	       CUDA_ERROR_INVALID_IMAGE);
	CU_ERR(cuModuleLoadData(&mod2, "simgpu-module"), CUDA_ERROR_INVALID_IMAGE); /* no newline */
	CU_ERR(cuModuleLoadData(&mod2, NULL), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cuLibraryLoadData(&lib2, "not a module\nfoo\n", NULL, NULL, 0, NULL, NULL, 0),
	       CUDA_ERROR_INVALID_IMAGE);

	/* from files */
	path = write_tmp(image, strlen(image));
	CU(cuModuleLoad(&mod2, path));
	CU(cuModuleGetFunction(&f2, mod2, "_Z8drv_slowPfi"));
	CU(cuModuleUnload(mod2));
	CU(cuLibraryLoadFromFile(&lib2, path, NULL, NULL, 0, NULL, NULL, 0));
	CU(cuLibraryGetKernel(&k2, lib2, "drv_fast"));
	CU(cuLibraryUnload(lib2));
	unlink(path);
	CU_ERR(cuModuleLoad(&mod2, path), CUDA_ERROR_FILE_NOT_FOUND);
	CU_ERR(cuLibraryLoadFromFile(&lib2, path, NULL, NULL, 0, NULL, NULL, 0),
	       CUDA_ERROR_FILE_NOT_FOUND);
	path = write_tmp("simgpu-modul\nx\n", 15);
	CU_ERR(cuModuleLoad(&mod2, path), CUDA_ERROR_INVALID_IMAGE);
	CU_ERR(cuLibraryLoadFromFile(&lib2, path, NULL, NULL, 0, NULL, NULL, 0),
	       CUDA_ERROR_INVALID_IMAGE);
	unlink(path);

	/* libraries and kernels */
	CU(cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
	CU(cuLibraryGetKernel(&k, lib, "_Z8drv_slowPfi"));
	CU(cuLibraryGetKernel(&k2, lib, "_Z8drv_slowPfi"));
	assert_ptr_equal(k, k2);
	CU_ERR(cuLibraryGetKernel(&k2, lib, "nope"), CUDA_ERROR_NOT_FOUND);
	CU_ERR(cuLibraryGetKernel(&k2, (CUlibrary)mod, "drv_fast"), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cuModuleGetFunction(&f2, (CUmodule)lib, "drv_fast"), CUDA_ERROR_INVALID_HANDLE);
	CU(cuKernelGetName(&name, k));
	assert_string_equal(name, "_Z8drv_slowPfi");
	CU(cuKernelGetFunction(&kf, k));
	CU(cuKernelGetFunction(&kf2, k));
	assert_ptr_equal(kf, kf2);
	assert_ptr_not_equal((void *)kf, (void *)k); /* a distinct handle */
	CU(cuFuncGetName(&name, kf));
	assert_string_equal(name, "_Z8drv_slowPfi");
	CU_ERR(cuKernelGetFunction(&kf2, (CUkernel)f),
	       CUDA_ERROR_INVALID_HANDLE); /* a function, not a kernel */
	CU_ERR(cuKernelGetName(&name, (CUkernel)f), CUDA_ERROR_INVALID_HANDLE);
	CU(cuLibraryUnload(lib));
	CU_ERR(cuKernelGetFunction(&kf2, k), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cuFuncGetName(&name, kf), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cuLibraryUnload(lib), CUDA_ERROR_INVALID_HANDLE);
	CU(cuModuleUnload(mod));
}

/* ---- launches, timed by events ------------------------------------------------------------------- */
static void test_launches(void **state)
{
	CUlaunchAttribute attr = { .id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE, .value.cooperative = 1 };
	CUlaunchConfig cfg = { 1, 1, 1, 32, 1, 1, 0, NULL, &attr, 1 };
	CUmodule mod;
	CUlibrary lib;
	CUfunction fast, slow_f;
	CUkernel slow;
	CUevent e0, e1, e2, e3, e4;
	CUstream s;
	CUgraphExec bogus = (CUgraphExec)&cfg;
	void *params[1] = { NULL };
	struct gate gate;
	float ms = 0;

	(void)state;
	CU(cuModuleLoadData(&mod, image));
	CU(cuModuleGetFunction(&fast, mod, "drv_fast"));
	CU(cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
	CU(cuLibraryGetKernel(&slow, lib, "_Z8drv_slowPfi"));
	CU(cuKernelGetFunction(&slow_f, slow));
	CU(cuStreamCreate(&s, 0));
	CU(cuEventCreate(&e0, CU_EVENT_DEFAULT));
	CU(cuEventCreate(&e1, CU_EVENT_DEFAULT));
	CU(cuEventCreate(&e2, CU_EVENT_DEFAULT));
	CU(cuEventCreate(&e3, CU_EVENT_DEFAULT));
	CU(cuEventCreate(&e4, CU_EVENT_DISABLE_TIMING));

	/* SIMGPU_KERNEL_TIMES: drv_fast=2000 (plain), _Z8drv_slowPfi=5000 (mangled); a gate (a
	 * runtime host function: the handles are shared) holds the stream while the host queues,
	 * so events mark modelled times only */
	simgpu_op_put(gate_queue(&gate, (cudaStream_t)s));
	CU(cuLaunchKernel((CUfunction)slow, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
	CU(cuEventRecord(e0, s));
	CU(cuLaunchKernel(fast, 4, 1, 1, 128, 1, 1, 0, s, params, NULL));
	CU(cuEventRecord(e1, s));
	CU(cuLaunchKernel((CUfunction)slow, 1, 1, 1, 1, 1, 1, 0, s, NULL,
			  NULL)); /* a CUkernel cast */
	CU(cuEventRecord(e2, s));
	cfg.hStream = s;
	CU(cuLaunchKernelEx(&cfg, slow_f, NULL, NULL));
	CU(cuLaunchCooperativeKernel(fast, 1, 1, 1, 1, 1, 1, 0, s, NULL));
	CU(cuEventRecord(e3, s));
	CU_ERR(cuEventQuery(e3), CUDA_ERROR_NOT_READY);
	gate_open(&gate);
	CU(cuEventSynchronize(e3));
	CU(cuEventQuery(e3));
	CU(cuEventElapsedTime_v2(&ms, e0, e1));
	ASSERT_NEAR(ms, 2.0, 0.001);
	CU(cuEventElapsedTime_v2(&ms, e1, e2));
	ASSERT_NEAR(ms, 5.0, 0.001);
	CU(cuEventElapsedTime_v2(&ms, e2, e3));
	ASSERT_NEAR(ms, 7.0, 0.001);
	CU_ERR(cuEventElapsedTime_v2(&ms, e0, e4), CUDA_ERROR_INVALID_HANDLE);

	/* per-thread default stream */
	CU(cuLaunchKernel_ptsz(fast, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
	CU(cuLaunchKernelEx_ptsz(&cfg, fast, NULL, NULL));
	CU(cuLaunchCooperativeKernel_ptsz(fast, 1, 1, 1, 1, 1, 1, 0, CU_STREAM_PER_THREAD, NULL));
	CU(cuEventRecord_ptsz(e0, NULL));
	CU(cuStreamWaitEvent(s, e0, 0));
	CU(cuEventRecord(e1, s));
	CU(cuStreamWaitEvent_ptsz(NULL, e1, CU_EVENT_WAIT_DEFAULT));
	CU_ERR(cuStreamWaitEvent(s, e0, 0x10), CUDA_ERROR_INVALID_VALUE);
	CU(cuStreamSynchronize_ptsz(NULL));
	CU(cuCtxSynchronize());

	/* errors */
	CU_ERR(cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cuLaunchKernel((CUfunction)&cfg, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL),
	       CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cuLaunchKernel(fast, 0, 1, 1, 1, 1, 1, 0, s, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cuLaunchKernel(fast, 1, 1, 1, 1025, 1, 1, 0, s, NULL, NULL),
	       CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cuLaunchKernel(fast, 1, 1, 1, 1, 1, 1, 300 * 1024, s, NULL, NULL),
	       CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cuLaunchKernel(fast, 1, 1, 1, 1, 1, 1, 0, s, params, params),
	       CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cuLaunchKernel(fast, 1, 1, 1, 1, 1, 1, 0, (CUstream)&cfg, NULL, NULL),
	       CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cuLaunchKernelEx(NULL, fast, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cuGraphLaunch(bogus, s), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cuGraphLaunch_ptsz(bogus, NULL), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cuEventRecord((CUevent)&cfg, s), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cuEventSynchronize((CUevent)&cfg), CUDA_ERROR_INVALID_HANDLE);
	CU(cuModuleUnload(mod));
	CU_ERR(cuLaunchKernel(fast, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
	CU(cuLibraryUnload(lib));
	CU_ERR(cuLaunchKernel((CUfunction)slow, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL),
	       CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cuLaunchKernel(slow_f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL),
	       CUDA_ERROR_INVALID_HANDLE);
	CU(cuEventDestroy_v2(e0));
	CU_ERR(cuEventDestroy_v2(e0), CUDA_ERROR_INVALID_HANDLE);
	CU(cuEventDestroy_v2(e1));
	CU(cuEventDestroy_v2(e2));
	CU(cuEventDestroy_v2(e3));
	CU(cuEventDestroy_v2(e4));
	CU(cuStreamDestroy_v2(s));
}

/* ---- virtual memory management --------------------------------------------------------------------- */
static void test_vmm(void **state)
{
	enum { G = 2 * MB };
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				     .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } };
	CUmemAccessDesc acc = { .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
				.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
	CUmemGenericAllocationHandle h, h2;
	CUdeviceptr va, d;
	unsigned char *src = malloc(2 * G), *dst = malloc(2 * G);
	size_t gran = 0, fr, tot, i;

	(void)state;
	for (i = 0; i < 2 * G; i++)
		src[i] = (unsigned char)(i * 31 + 7);
	CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	assert_int_equal(gran, G);
	prop.location.id = 5;
	CU_ERR(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
	       CUDA_ERROR_INVALID_DEVICE);
	CU_ERR(cuMemCreate(&h, 2 * G, &prop, 0), CUDA_ERROR_INVALID_DEVICE);
	prop.location.id = 0;
	CU_ERR(cuMemCreate(&h, G + 4096, &prop, 0), CUDA_ERROR_INVALID_VALUE); /* not a multiple */
	CU_ERR(cuMemCreate(&h, 2 * G, &prop, 1), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cuMemCreate(&h, 66 * MB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);

	/* a physical allocation is charged to the device */
	CU(cuMemCreate(&h, 2 * G, &prop, 0));
	CU(cuMemGetInfo_v2(&fr, &tot));
	assert_int_equal(tot - fr, 2 * G);
	CU(cuMemAddressReserve(&va, 4 * G, 0, 0, 0));
	assert_int_equal(va % G, 0);
	CU_ERR(cuMemcpyHtoD_v2(va, src, 16), CUDA_ERROR_INVALID_VALUE); /* reserved, not mapped */
	CU_ERR(cuMemMap(va + 4096, 2 * G, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cuMemMap(va, 2 * G, G, h, 0), CUDA_ERROR_INVALID_VALUE); /* offset must be 0 */
	CU_ERR(cuMemMap(va, 4 * G, 0, h, 0),
	       CUDA_ERROR_INVALID_VALUE); /* larger than the allocation */
	CU(cuMemMap(va, 2 * G, 0, h, 0));
	CU_ERR(cuMemMap(va, 2 * G, 0, h, 0), CUDA_ERROR_INVALID_VALUE); /* already mapped */
	CU_ERR(cuMemcpyHtoD_v2(va, src, 16), CUDA_ERROR_INVALID_VALUE); /* no access yet */
	CU(cuMemSetAccess(va, 2 * G, &acc, 1));

	/* copies to and from the mapping: device memory */
	CU(cuMemcpyHtoD_v2(va, src, 2 * G));
	memset(dst, 0, 2 * G);
	CU(cuMemcpyDtoH_v2(dst, va, 2 * G));
	assert_memory_equal(dst, src, 2 * G);
	CU_ERR(cuMemcpyDtoH_v2(dst, va + 2 * G, 16),
	       CUDA_ERROR_INVALID_VALUE); /* past the mapping */
	CU(cuMemAlloc_v2(&d, G));
	CU(cuMemcpyDtoD_v2(d, va + G, G));
	memset(dst, 0, G);
	CU(cuMemcpyDtoH_v2(dst, d, G));
	assert_memory_equal(dst, src + G, G);
	CU(cuMemsetD32_v2(va, 0x01010101, 4));
	CU(cuMemcpyDtoH_v2(dst, va, 32));
	assert_int_equal(dst[15], 1);
	assert_int_equal(dst[16], src[16]);

	/* a second view of the same memory */
	CU(cuMemMap(va + 2 * G, 2 * G, 0, h, 0));
	CU(cuMemSetAccess(va + 2 * G, 2 * G, &acc, 1));
	CU(cuMemcpyDtoH_v2(dst, va + 2 * G + 100, 100));
	assert_memory_equal(dst, src + 100, 100);
	CU_ERR(cuMemFree_v2(va), CUDA_ERROR_INVALID_VALUE); /* not cuMemAlloc memory */

	/* released while mapped: the memory stays until the last mapping goes */
	CU(cuMemRelease(h));
	CU_ERR(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
	CU(cuMemcpyDtoH_v2(dst, va + 200, 10));
	assert_memory_equal(dst, src + 200, 10);
	CU(cuMemGetInfo_v2(&fr, &tot));
	assert_int_equal(tot - fr, 3 * G);
	CU_ERR(cuMemUnmap(va, G), CUDA_ERROR_INVALID_VALUE);	       /* part of a mapping */
	CU_ERR(cuMemAddressFree(va, 4 * G), CUDA_ERROR_INVALID_VALUE); /* still mapped */
	CU(cuMemUnmap(va, 2 * G));
	CU_ERR(cuMemcpyDtoH_v2(dst, va, 10), CUDA_ERROR_INVALID_VALUE);
	CU(cuMemGetInfo_v2(&fr, &tot));
	assert_int_equal(tot - fr, 3 * G);
	CU(cuMemUnmap(va + 2 * G, 2 * G));
	CU(cuMemGetInfo_v2(&fr, &tot));
	assert_int_equal(tot - fr, G);
	CU_ERR(cuMemUnmap(va, 2 * G), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cuMemMap(va, 2 * G, 0, h, 0), CUDA_ERROR_INVALID_VALUE); /* released handle */
	CU_ERR(cuMemAddressFree(va, 2 * G), CUDA_ERROR_INVALID_VALUE);	/* not the reserved size */
	CU(cuMemAddressFree(va, 4 * G));
	CU_ERR(cuMemAddressFree(va, 4 * G), CUDA_ERROR_INVALID_VALUE);

	/* released before mapping: freed at once; maps on device 1 */
	CU(cuMemCreate(&h2, G, &prop, 0));
	CU(cuMemRelease(h2));
	prop.location.id = 1;
	CU(cuMemCreate(&h2, G, &prop, 0));
	CU(cuMemAddressReserve(&va, G, G, 0, 0));
	CU(cuMemMap(va, G, 0, h2, 0));
	acc.location.id = 1;
	CU(cuMemSetAccess(va, G, &acc, 1));
	CU(cuMemcpyHtoD_v2(va, src, 64));
	CU(cuMemcpyDtoH_v2(dst, va, 64));
	assert_memory_equal(dst, src, 64);
	CU(cuMemUnmap(va, G));
	CU(cuMemRelease(h2));
	CU(cuMemAddressFree(va, G));
	CU(cuMemFree_v2(d));
	CU(cuMemGetInfo_v2(&fr, &tot));
	assert_int_equal(fr, tot);
	free(src);
	free(dst);
}

/* ---- handles shared with the runtime ---------------------------------------------------------------- */
static void test_runtime_handles(void **state)
{
	cudaStream_t rs;
	cudaEvent_t re;
	CUdeviceptr d;
	char h[8] = "abcdefg", back[8] = { 0 };
	void *rd;

	(void)state;
	/* a runtime stream is a CUstream, a runtime event a CUevent, memory is one */
	CK(cudaStreamCreate(&rs));
	CK(cudaEventCreate(&re));
	CK(cudaMalloc(&rd, 8));
	CU(cuMemcpyHtoDAsync_v2((CUdeviceptr)(uintptr_t)rd, h, 8, (CUstream)rs));
	CU(cuEventRecord((CUevent)re, (CUstream)rs));
	CK(cudaEventSynchronize(re));
	CU(cuMemAlloc_v2(&d, 8));
	CK(cudaMemcpy((void *)(uintptr_t)d, rd, 8, cudaMemcpyDeviceToDevice));
	CU(cuMemcpyDtoH_v2(back, d, 8));
	assert_string_equal(back, "abcdefg");
	CK(cudaFree((void *)(uintptr_t)d));
	CU_ERR(cuMemFree_v2((CUdeviceptr)(uintptr_t)rd), CUDA_SUCCESS);
	CU(cuStreamDestroy_v2((CUstream)rs));
	CK_ERR(cudaStreamDestroy(rs), cudaErrorInvalidResourceHandle);
	CK(cudaEventDestroy(re));
}

/* ---- children: the runtime -> driver nesting, knobs --------------------------------------------------- */
/* Each runtime call the runtime implements with one driver call, in the order
 * child_mapping makes them. */
static const struct {
	const char *rt, *drv;
} mapping[] = {
	{ "cudaMalloc", "cuMemAlloc_v2" },
	{ "cudaMallocAsync", "cuMemAllocAsync" },
	{ "cudaMallocAsync_ptsz", "cuMemAllocAsync_ptsz" },
	{ "cudaMallocManaged", "cuMemAllocManaged" },
	{ "cudaMallocHost", "cuMemAllocHost_v2" },
	{ "cudaHostAlloc", "cuMemHostAlloc" },
	{ "cudaHostRegister", "cuMemHostRegister_v2" },
	{ "cudaHostUnregister", "cuMemHostUnregister" },
	{ "cudaMemcpy", "cuMemcpyHtoD_v2" },
	{ "cudaMemcpy", "cuMemcpyDtoH_v2" },
	{ "cudaMemcpy", "cuMemcpyDtoD_v2" },
	{ "cudaMemcpy", "cuMemcpy" },
	{ "cudaMemcpy_ptds", "cuMemcpyHtoD_v2_ptds" },
	{ "cudaMemcpy_ptds", "cuMemcpyDtoH_v2_ptds" },
	{ "cudaMemcpy_ptds", "cuMemcpyDtoD_v2_ptds" },
	{ "cudaMemcpy_ptds", "cuMemcpy_ptds" },
	{ "cudaMemcpyAsync", "cuMemcpyHtoDAsync_v2" },
	{ "cudaMemcpyAsync", "cuMemcpyDtoHAsync_v2" },
	{ "cudaMemcpyAsync", "cuMemcpyDtoDAsync_v2" },
	{ "cudaMemcpyAsync", "cuMemcpyAsync" },
	{ "cudaMemcpyAsync_ptsz", "cuMemcpyHtoDAsync_v2_ptsz" },
	{ "cudaMemcpyAsync_ptsz", "cuMemcpyDtoHAsync_v2_ptsz" },
	{ "cudaMemcpyAsync_ptsz", "cuMemcpyDtoDAsync_v2_ptsz" },
	{ "cudaMemcpyAsync_ptsz", "cuMemcpyAsync_ptsz" },
	{ "cudaMemcpy", NULL }, /* host to host: no driver call */
	{ "cudaMemset", "cuMemsetD8_v2" },
	{ "cudaMemset_ptds", "cuMemsetD8_v2_ptds" },
	{ "cudaMemsetAsync", "cuMemsetD8Async" },
	{ "cudaMemsetAsync_ptsz", "cuMemsetD8Async_ptsz" },
	{ "cudaLaunchKernel", "cuLaunchKernel" },
	{ "cudaLaunchKernel_ptsz", "cuLaunchKernel_ptsz" },
	{ "cudaLaunchKernelExC", "cuLaunchKernelEx" },
	{ "cudaLaunchKernelExC_ptsz", "cuLaunchKernelEx_ptsz" },
	{ "cudaLaunchCooperativeKernel", "cuLaunchCooperativeKernel" },
	{ "cudaLaunchCooperativeKernel_ptsz", "cuLaunchCooperativeKernel_ptsz" },
	{ "cudaStreamBeginCapture", NULL },
	{ "cudaLaunchKernel", "cuLaunchKernel" }, /* captured */
	{ "cudaStreamEndCapture", NULL },
	{ "cudaGraphInstantiate", NULL },
	{ "cudaGraphLaunch", "cuGraphLaunch" },
	{ "cudaGraphLaunch_ptsz", "cuGraphLaunch_ptsz" },
	{ "cudaEventRecord", NULL },
	{ "cudaStreamWaitEvent", "cuStreamWaitEvent" },
	{ "cudaStreamWaitEvent_ptsz", "cuStreamWaitEvent_ptsz" },
	{ "cudaEventSynchronize", "cuEventSynchronize" },
	{ "cudaStreamSynchronize", "cuStreamSynchronize" },
	{ "cudaStreamSynchronize_ptsz", "cuStreamSynchronize_ptsz" },
	{ "cudaDeviceSynchronize", "cuCtxSynchronize" },
	{ "cudaFreeAsync", "cuMemFreeAsync" },
	{ "cudaFreeAsync_ptsz", "cuMemFreeAsync_ptsz" },
	{ "cudaFree", "cuMemFree_v2" },
	{ "cudaFree", NULL }, /* NULL: only initialises */
	{ "cudaFreeHost", "cuMemFreeHost" },
	{ "cudaFreeHost", "cuMemFreeHost" },
	{ "cudaFree", "cuMemFree_v2" },
	{ "cudaFree", "cuMemFree_v2" },
};

#define CHILD_CK(call)                                                                       \
	do {                                                                                 \
		int ck_ = (int)(call);                                                       \
		if (ck_) {                                                                   \
			fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #call, ck_); \
			return 1;                                                            \
		}                                                                            \
	} while (0)

static int child_mapping(void)
{
	static char host[4096], host2[4096], reg[8192];
	const dim3 one = { 1, 1, 1 };
	cudaLaunchConfig_t cfg = { .gridDim = { 1, 1, 1 }, .blockDim = { 1, 1, 1 } };
	void *d, *a1, *a2, *m, *p, *p2, *fn = (void *)drv_rt_kernel;
	cudaStream_t s;
	cudaEvent_t e;
	cudaGraph_t g;
	cudaGraphExec_t x;

	/* untraced setup, before the first checked call */
	CHILD_CK(cudaStreamCreate(&s));
	CHILD_CK(cudaEventCreate(&e));
	fprintf(stderr, "--- mapping starts\n");
	CHILD_CK(cudaMalloc(&d, 8192));
	CHILD_CK(cudaMallocAsync(&a1, 100, s));
	CHILD_CK(cudaMallocAsync_ptsz(&a2, 100, NULL));
	CHILD_CK(cudaMallocManaged(&m, 4096, cudaMemAttachGlobal));
	CHILD_CK(cudaMallocHost(&p, 4096));
	CHILD_CK(cudaHostAlloc(&p2, 4096, 0));
	CHILD_CK(cudaHostRegister(reg, sizeof(reg), 0));
	CHILD_CK(cudaHostUnregister(reg));
	CHILD_CK(cudaMemcpy(d, host, 4096, cudaMemcpyHostToDevice));
	CHILD_CK(cudaMemcpy(host, d, 4096, cudaMemcpyDeviceToHost));
	CHILD_CK(cudaMemcpy((char *)d + 4096, d, 4096, cudaMemcpyDeviceToDevice));
	CHILD_CK(cudaMemcpy(d, p, 4096, cudaMemcpyDefault));
	CHILD_CK(cudaMemcpy_ptds(d, host, 4096, cudaMemcpyHostToDevice));
	CHILD_CK(cudaMemcpy_ptds(host, d, 4096, cudaMemcpyDeviceToHost));
	CHILD_CK(cudaMemcpy_ptds((char *)d + 4096, d, 4096, cudaMemcpyDeviceToDevice));
	CHILD_CK(cudaMemcpy_ptds(d, p, 4096, cudaMemcpyDefault));
	CHILD_CK(cudaMemcpyAsync(d, p, 4096, cudaMemcpyHostToDevice, s));
	CHILD_CK(cudaMemcpyAsync(p2, d, 4096, cudaMemcpyDeviceToHost, s));
	CHILD_CK(cudaMemcpyAsync((char *)d + 4096, d, 4096, cudaMemcpyDeviceToDevice, s));
	CHILD_CK(cudaMemcpyAsync(d, m, 4096, cudaMemcpyDefault, s));
	CHILD_CK(cudaMemcpyAsync_ptsz(d, p, 4096, cudaMemcpyHostToDevice, NULL));
	CHILD_CK(cudaMemcpyAsync_ptsz(p2, d, 4096, cudaMemcpyDeviceToHost, NULL));
	CHILD_CK(cudaMemcpyAsync_ptsz((char *)d + 4096, d, 4096, cudaMemcpyDeviceToDevice, NULL));
	CHILD_CK(cudaMemcpyAsync_ptsz(d, m, 4096, cudaMemcpyDefault, NULL));
	CHILD_CK(cudaMemcpy(host2, host, 4096, cudaMemcpyHostToHost));
	CHILD_CK(cudaMemset(d, 1, 100));
	CHILD_CK(cudaMemset_ptds(d, 1, 100));
	CHILD_CK(cudaMemsetAsync(d, 1, 100, s));
	CHILD_CK(cudaMemsetAsync_ptsz(d, 1, 100, NULL));
	CHILD_CK(cudaLaunchKernel(fn, one, one, NULL, 0, s));
	CHILD_CK(cudaLaunchKernel_ptsz(fn, one, one, NULL, 0, NULL));
	cfg.stream = s;
	CHILD_CK(cudaLaunchKernelExC(&cfg, fn, NULL));
	CHILD_CK(cudaLaunchKernelExC_ptsz(&cfg, fn, NULL));
	CHILD_CK(cudaLaunchCooperativeKernel(fn, one, one, NULL, 0, s));
	CHILD_CK(cudaLaunchCooperativeKernel_ptsz(fn, one, one, NULL, 0, NULL));
	CHILD_CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	CHILD_CK(cudaLaunchKernel(fn, one, one, NULL, 0, s));
	CHILD_CK(cudaStreamEndCapture(s, &g));
	CHILD_CK(cudaGraphInstantiate(&x, g, 0));
	CHILD_CK(cudaGraphLaunch(x, s));
	CHILD_CK(cudaGraphLaunch_ptsz(x, NULL));
	CHILD_CK(cudaEventRecord(e, s));
	CHILD_CK(cudaStreamWaitEvent(NULL, e, 0));
	CHILD_CK(cudaStreamWaitEvent_ptsz(NULL, e, 0));
	CHILD_CK(cudaEventSynchronize(e));
	CHILD_CK(cudaStreamSynchronize(s));
	CHILD_CK(cudaStreamSynchronize_ptsz(NULL));
	CHILD_CK(cudaDeviceSynchronize());
	CHILD_CK(cudaFreeAsync(a1, s));
	CHILD_CK(cudaFreeAsync_ptsz(a2, NULL));
	CHILD_CK(cudaFree(d));
	CHILD_CK(cudaFree(NULL));
	CHILD_CK(cudaFreeHost(p));
	CHILD_CK(cudaFreeHost(p2));
	/* errors still make their one driver call */
	CHILD_CK(cudaFree(d) != cudaErrorInvalidValue);
	CHILD_CK(cudaFree(m));
	fprintf(stderr, "--- mapping ends\n");
	return 0;
}

/* Runs this test binary again as "--child NAME" with env; returns its exit
 * status and what it wrote to stderr in out (a fresh process: the knobs
 * are read once, and a forked child of a process using the simulator has no
 * worker threads). */
static int run_child(const char *name, const char *const *env, char *out, size_t n)
{
	char path[] = "/tmp/simgpu-drv-XXXXXX";
	int fd = mkstemp(path), status = -1;
	pid_t pid;
	ssize_t got;

	assert_true(fd >= 0);
	unlink(path);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		static const char *const knobs[] = { "SIMGPU_LOG", "SIMGPU_RUNTIME_DIRECT",
						     "SIMGPU_INIT_ERROR", "SIMGPU_DEVICES",
						     "SIMGPU_LAUNCH_US" };

		for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
			unsetenv(knobs[i]);
		for (; *env; env++)
			putenv((char *)*env);
		dup2(fd, STDERR_FILENO);
		execl("/proc/self/exe", "test_simgpu_driver", "--child", name, (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	got = pread(fd, out, n - 1, 0);
	out[got > 0 ? got : 0] = '\0';
	close(fd);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fprintf(stderr, "child %s failed (status %#x):\n%s\n", name, status, out);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* "simgpu[pid/tid]: name(...": the tid and the name */
static int parse_line(const char *line, long *tid, char *name, size_t n)
{
	const char *p = strchr(line, '/'), *q;
	size_t len;

	if (strncmp(line, "simgpu[", 7) || !p)
		return -1;
	*tid = strtol(p + 1, NULL, 10);
	p = strstr(line, "]: ");
	if (!p)
		return -1;
	p += 3;
	q = strchr(p, '(');
	if (!q || (len = (size_t)(q - p)) >= n)
		return -1;
	memcpy(name, p, len);
	name[len] = '\0';
	return 0;
}

static bool untraced_setup(const char *name)
{
	return !strcmp(name, "cuInit") || !strcmp(name, "cuDevicePrimaryCtxRetain") ||
	       !strcmp(name, "cuCtxSetCurrent");
}

static void test_runtime_goes_through_driver(void **state)
{
	const char *log1[] = { "SIMGPU_LOG=1", NULL };
	const char *direct[] = { "SIMGPU_LOG=1", "SIMGPU_RUNTIME_DIRECT=1", NULL };
	static char out[1 << 18];
	char *line, *save = NULL, name[64], drv[8][64];
	size_t next = 0, n_drv = 0;
	long tid, main_tid = -1;
	bool in = false;

	(void)state;
	assert_int_equal(run_child("mapping", log1, out, sizeof(out)), 0);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strcmp(line, "--- mapping starts")) {
			in = true;
			continue;
		}
		if (!strcmp(line, "--- mapping ends"))
			break;
		if (!in || parse_line(line, &tid, name, sizeof(name)))
			continue;
		if (main_tid < 0)
			main_tid = tid;
		if (tid != main_tid)
			fail_msg("a call logged by another thread: %s", line);
		if (!strncmp(name, "cu", 2) && strncmp(name, "cuda", 4)) {
			if (untraced_setup(name))
				continue;
			assert_true(n_drv < 8);
			snprintf(drv[n_drv++], sizeof(drv[0]), "%s", name);
			continue;
		}
		/* a runtime call: the driver calls logged since the previous one are its own */
		assert_true(next < sizeof(mapping) / sizeof(mapping[0]));
		if (strcmp(name, mapping[next].rt))
			fail_msg("call %zu: %s, want %s", next, name, mapping[next].rt);
		if (n_drv != (mapping[next].drv ? 1u : 0u) ||
		    (n_drv && strcmp(drv[0], mapping[next].drv)))
			fail_msg("call %zu (%s): %zu driver calls (first %s), want exactly %s",
				 next, name, n_drv, n_drv ? drv[0] : "none",
				 mapping[next].drv ? mapping[next].drv : "none");
		n_drv = 0;
		next++;
	}
	assert_int_equal(next, sizeof(mapping) / sizeof(mapping[0]));

	/* SIMGPU_RUNTIME_DIRECT=1: the runtime never calls the driver */
	assert_int_equal(run_child("mapping", direct, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "cudaMemcpy(dst="));
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (!parse_line(line, &tid, name, sizeof(name)) && !strncmp(name, "cu", 2) &&
		    strncmp(name, "cuda", 4))
			fail_msg("a driver call with SIMGPU_RUNTIME_DIRECT=1: %s", line);
}

static int child_no_device(void)
{
	int n = 3;

	CHILD_CK(cuInit(0) != CUDA_ERROR_NO_DEVICE);
	CHILD_CK(cuDeviceGetCount(&n) != CUDA_ERROR_NOT_INITIALIZED);
	CHILD_CK(cudaGetDeviceCount(&n) != cudaErrorNoDevice || n != 0);
	return 0;
}

static int child_no_driver(void)
{
	void *p;
	int v = 0;

	CHILD_CK(cuInit(0) != CUDA_ERROR_STUB_LIBRARY);
	CHILD_CK(cuMemAllocHost_v2(&p, 16) != CUDA_ERROR_NOT_INITIALIZED);
	CHILD_CK(cuDriverGetVersion(&v) || v != 13000);
	CHILD_CK(cudaMalloc(&p, 16) != cudaErrorInsufficientDriver);
	return 0;
}

static int child_init_error(void)
{
	CUcontext c;

	CHILD_CK(cuInit(0) != CUDA_ERROR_NOT_INITIALIZED);
	CHILD_CK(cuCtxGetCurrent(&c) != CUDA_ERROR_NOT_INITIALIZED);
	return 0;
}

static int child_log(void)
{
	CUdeviceptr d;
	CUcontext c;

	CHILD_CK(cuMemAlloc_v2(&d, 16) != CUDA_ERROR_NOT_INITIALIZED);
	CHILD_CK(cuInit(0));
	CHILD_CK(cuDevicePrimaryCtxRetain(&c, 0));
	CHILD_CK(cuCtxSetCurrent(c));
	CHILD_CK(cuMemAlloc_v2(&d, 1000));
	CHILD_CK(cuMemsetD32_v2(d, 7, 3));
	return 0;
}

/* SIMGPU_LAUNCH_US=2000: spent once per launch, by the driver, also when the
 * runtime launches through it. The cost is CPU time, measured on the thread's
 * CPU clock, which a busy machine does not stretch. */
static int child_launch_cost(void)
{
	const dim3 one = { 1, 1, 1 };
	double t, cpu;
	int i;

	CHILD_CK(cudaFree(NULL)); /* initialise outside the measurement */
	t = now_ms();
	cpu = thread_cpu_ms();
	for (i = 0; i < 5; i++)
		CHILD_CK(cudaLaunchKernel((const void *)drv_rt_kernel, one, one, NULL, 0, NULL));
	cpu = thread_cpu_ms() - cpu;
	t = now_ms() - t;
	CHILD_CK(cudaDeviceSynchronize());
	/* spinning twice (runtime and driver) would take 20 ms of CPU time */
	if (cpu >= 10.0 && cpu < 20.0 && t >= cpu)
		return 0;
	fprintf(stderr, "5 launches: %.3f ms of CPU time (%.3f ms wall), want 10\n", cpu, t);
	return 1;
}

static void test_knobs(void **state)
{
	const char *none[] = { "SIMGPU_DEVICES=0", NULL },
		   *e35[] = { "SIMGPU_INIT_ERROR=35", NULL };
	const char *e3[] = { "SIMGPU_INIT_ERROR=3", NULL }, *log1[] = { "SIMGPU_LOG=1", NULL };
	const char *launch[] = { "SIMGPU_LAUNCH_US=2000", NULL };
	static char out[8192];

	(void)state;
	assert_int_equal(run_child("no_device", none, out, sizeof(out)), 0);
	assert_int_equal(run_child("no_driver", e35, out, sizeof(out)), 0);
	assert_int_equal(run_child("init_error", e3, out, sizeof(out)), 0);
	assert_int_equal(run_child("launch_cost", launch, out, sizeof(out)), 0);
	assert_int_equal(run_child("log", log1, out, sizeof(out)), 0);
	assert_non_null(
		strstr(out, "cuMemAlloc_v2(bytes=16 ptr=0) = 3 CUDA_ERROR_NOT_INITIALIZED"));
	assert_non_null(strstr(out, "cuInit(flags=0) = 0 CUDA_SUCCESS"));
	assert_non_null(strstr(out, "cuMemsetD32_v2(ptr=0x6000"));
	assert_non_null(strstr(out, "value=0x7 count=3) = 0 CUDA_SUCCESS"));
}

static int run_as_child(const char *name)
{
	static const struct {
		const char *name;
		int (*fn)(void);
	} children[] = {
		{ "mapping", child_mapping },
		{ "no_device", child_no_device },
		{ "no_driver", child_no_driver },
		{ "init_error", child_init_error },
		{ "log", child_log },
		{ "launch_cost", child_launch_cost },
	};

	for (size_t i = 0; i < sizeof(children) / sizeof(children[0]); i++)
		if (!strcmp(children[i].name, name))
			return children[i].fn();
	return 126;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exports),
		cmocka_unit_test(test_proc_address),
		cmocka_unit_test(test_not_initialized),
		cmocka_unit_test(test_contexts),
		cmocka_unit_test(test_memory),
		cmocka_unit_test(test_modules),
		cmocka_unit_test(test_launches),
		cmocka_unit_test(test_vmm),
		cmocka_unit_test(test_runtime_handles),
		cmocka_unit_test(test_runtime_goes_through_driver),
		cmocka_unit_test(test_knobs),
	};

	int child = argc == 3 && !strcmp(argv[1], "--child");

	/* (a child keeps what run_child set) */
	setenv("SIMGPU_DEVICES", "2", !child);
	setenv("SIMGPU_DEVICE_MEM_MB", "64", !child);
	setenv("SIMGPU_KERNEL_US", "100", !child);
	setenv("SIMGPU_KERNEL_TIMES", "drv_fast=2000,_Z8drv_slowPfi=5000", !child);
	if (child)
		return run_as_child(argv[2]);
	unsetenv("SIMGPU_INIT_ERROR");
	unsetenv("SIMGPU_LOG");
	unsetenv("SIMGPU_RUNTIME_DIRECT");
	unsetenv("SIMGPU_LAUNCH_US");
	return cmocka_run_group_tests_name("simgpu driver", tests, NULL, NULL);
}
