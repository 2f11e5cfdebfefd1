/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * compat_driver.c — a driver API program, for compat.sh:
 *   --layout  prints the sizes, offsets and enum values a driver program
 *             depends on; compat.sh builds it against the toolkit's cuda.h
 *             and against the simulator's and compares the two outputs;
 *   (none)    built against the toolkit's cuda.h and linked against its stub
 *             libcuda.so, runs on the simulator's libcuda.so.1
 *             (LD_LIBRARY_PATH): a module image, a launch through
 *             cuLaunchKernelEx timed by events, VMM with a round trip, a
 *             32-bit memset. SIMGPU_DEVICE_MEM_MB=1234 proves which driver
 *             answered. Exits 3 without a usable device (a real driver
 *             without a GPU).
 */
#include <cuda.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

#define L(expr) printf("%s = %lld\n", #expr, (long long)(expr))

static int layout(void)
{
	L(sizeof(CUdeviceptr));
	L(sizeof(CUmemGenericAllocationHandle));
	L(sizeof(CUlaunchConfig));
	L(offsetof(CUlaunchConfig, sharedMemBytes));
	L(offsetof(CUlaunchConfig, hStream));
	L(offsetof(CUlaunchConfig, attrs));
	L(offsetof(CUlaunchConfig, numAttrs));
	L(sizeof(CUlaunchAttribute));
	L(offsetof(CUlaunchAttribute, value));
	L(sizeof(CUlaunchAttributeValue));
	L(sizeof(CUmemAllocationProp));
	L(offsetof(CUmemAllocationProp, location));
	L(offsetof(CUmemAllocationProp, location.id));
	L(offsetof(CUmemAllocationProp, win32HandleMetaData));
	L(offsetof(CUmemAllocationProp, allocFlags));
	L(sizeof(CUmemAccessDesc));
	L(offsetof(CUmemAccessDesc, flags));
	L(sizeof(CUctxCreateParams));
	L(CUDA_ERROR_NOT_INITIALIZED);
	L(CUDA_ERROR_INVALID_CONTEXT);
	L(CUDA_ERROR_INVALID_IMAGE);
	L(CUDA_ERROR_FILE_NOT_FOUND);
	L(CUDA_ERROR_INVALID_HANDLE);
	L(CUDA_ERROR_NOT_FOUND);
	L(CUDA_ERROR_STUB_LIBRARY);
	L(CUDA_ERROR_CONTEXT_IS_DESTROYED);
	L(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
	L(CUDA_ERROR_KEY_ROTATION);
	L(CU_MEM_ALLOCATION_TYPE_PINNED);
	L(CU_MEM_LOCATION_TYPE_DEVICE);
	L(CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
	L(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
	L(CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
	L(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
	L(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
	L(CU_DEVICE_ATTRIBUTE_MAX);
	L(CU_EVENT_DISABLE_TIMING);
	L(CU_STREAM_NON_BLOCKING);
	L(CU_CTX_FLAGS_MASK);
	L(CU_MEM_ATTACH_HOST);
	L(CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
	L(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	L((uintptr_t)CU_STREAM_PER_THREAD);
	return 0;
}

#define CK(call)                                                                            \
	do {                                                                                \
		CUresult r_ = (call);                                                       \
		if (r_ != CUDA_SUCCESS) {                                                   \
			const char *n_ = "?";                                               \
			cuGetErrorName(r_, &n_);                                            \
			fprintf(stderr, "compat-driver: %s = %d %s\n", #call, (int)r_, n_); \
			return 1;                                                           \
		}                                                                           \
	} while (0)

int main(int argc, char **argv)
{
	static const char image[] = "simgpu-module\n_Z9compat_fnPfi\n";
	static unsigned char src[2 << 20], dst[2 << 20];
	CUmemAllocationProp prop;
	CUmemAccessDesc acc;
	CUmemGenericAllocationHandle h;
	CUlaunchConfig cfg;
	CUlaunchAttribute attr;
	CUdeviceptr va, d;
	CUcontext ctx;
	CUmodule mod;
	CUfunction f;
	CUstream s;
	CUevent a, b;
	size_t tot = 0, gran = 0, i;
	unsigned words[4];
	float ms = 0;
	double t0, late;
	int n = 0, v = 0;
	CUresult r;

	if (argc > 1 && !strcmp(argv[1], "--layout"))
		return layout();
	r = cuInit(0);
	if (r != CUDA_SUCCESS || cuDeviceGetCount(&n) || !n) {
		printf("compat-driver: no device: cuInit = %d\n", (int)r);
		return 3;
	}
	CK(cuDriverGetVersion(&v));
	CK(cuDeviceTotalMem(&tot, 0));
	if (tot != 1234ull << 20) {
		fprintf(stderr, "compat-driver: total memory %zu: not the simulator\n", tot);
		return 1;
	}
	CK(cuDevicePrimaryCtxRetain(&ctx, 0));
	CK(cuCtxSetCurrent(ctx));
	CK(cuModuleLoadData(&mod, image));
	CK(cuModuleGetFunction(&f, mod, "_Z9compat_fnPfi"));
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuEventCreate(&a, CU_EVENT_DEFAULT));
	CK(cuEventCreate(&b, CU_EVENT_DEFAULT));

	/* a launch through the extensible configuration, 3 ms by SIMGPU_KERNEL_TIMES */
	memset(&cfg, 0, sizeof(cfg));
	memset(&attr, 0, sizeof(attr));
	attr.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
	attr.value.cooperative = 1;
	cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
	cfg.blockDimX = 128;
	cfg.blockDimY = cfg.blockDimZ = 1;
	cfg.hStream = s;
	cfg.attrs = &attr;
	cfg.numAttrs = 1;
	/* A first kernel keeps the stream busy while the host queues: a ends at its end, and the
	 * second kernel starts there, exactly 3 ms before b, unless the host queued it later than
	 * that (a busy machine): then it starts when queued, no later than the host's clock after
	 * the call. (The driver API has no host function here to hold the stream with.) */
	t0 = now_ms();
	CK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
	CK(cuEventRecord(a, s));
	CK(cuLaunchKernelEx(&cfg, f, NULL, NULL));
	late = now_ms() - (t0 + 3.0);
	CK(cuEventRecord(b, s));
	CK(cuEventSynchronize(b));
	CK(cuEventElapsedTime(&ms, a, b));
	if (ms < 2.999f || ms > 3.001 + (late > 0 ? late : 0)) {
		fprintf(stderr,
			"compat-driver: the kernel took %.4f ms, want 3 (queued %.4f ms "
			"late)\n",
			(double)ms, late);
		return 1;
	}

	/* virtual memory: a physical allocation mapped, accessible, round trip */
	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	CK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	CK(cuMemCreate(&h, gran, &prop, 0));
	CK(cuMemAddressReserve(&va, gran, 0, 0, 0));
	CK(cuMemMap(va, gran, 0, h, 0));
	memset(&acc, 0, sizeof(acc));
	acc.location = prop.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	CK(cuMemSetAccess(va, gran, &acc, 1));
	for (i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)(i * 3);
	CK(cuMemcpyHtoD(va, src, gran));
	CK(cuMemAlloc(&d, gran));
	CK(cuMemcpyDtoD(d, va, gran));
	CK(cuMemcpyDtoH(dst, d, gran));
	if (memcmp(src, dst, gran)) {
		fprintf(stderr, "compat-driver: VMM round trip differs\n");
		return 1;
	}
	CK(cuMemsetD32(d, 0xabcdef01u, 4));
	CK(cuMemcpyDtoH(words, d, sizeof(words)));
	if (words[0] != 0xabcdef01u || words[3] != 0xabcdef01u) {
		fprintf(stderr, "compat-driver: cuMemsetD32 wrote %#x\n", words[0]);
		return 1;
	}
	CK(cuMemUnmap(va, gran));
	CK(cuMemRelease(h));
	CK(cuMemAddressFree(va, gran));
	CK(cuMemFree(d));
	CK(cuModuleUnload(mod));
	CK(cuEventDestroy(a));
	CK(cuEventDestroy(b));
	CK(cuStreamDestroy(s));
	CK(cuDevicePrimaryCtxRelease(0));
	printf("compat-driver: OK (driver %d, kernel %.3f ms)\n", v, (double)ms);
	return 0;
}
