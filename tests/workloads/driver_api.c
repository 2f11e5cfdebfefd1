/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * driver_api — a library-style workload: it calls the CUDA driver API
 * (libcuda.so.1) directly, as cuBLAS, Triton or NCCL do, and the runtime
 * too, so that a tracer must count driver calls made by the program as
 * driver calls, and runtime calls (which the runtime implements with the
 * driver on the same thread) once, as runtime calls.
 *
 * usage: driver_api [--ref FILE] [--wait] [--early N]
 *   --early N  before the traced phase (before READY with --wait), load a
 *              module and get a handle of kernel "early_kernel"; in the
 *              traced phase launch it N times (default 3): its name was
 *              created before attach.
 * The traced phase, in order (every call checked, counted by wl.h):
 *   cudaSetDevice(0); cuInit; cuDeviceGet; cuDevicePrimaryCtxRetain; cuCtxSetCurrent
 *   cuModuleLoadData (kernels _Z4gemmPfS_i, scale); cuModuleGetFunction x2
 *   cuLibraryLoadData (kernel softmax); cuLibraryGetKernel; cuKernelGetFunction
 *   cuModuleGetFunction of a name the module lacks (fails: CUDA_ERROR_NOT_FOUND, 500)
 *   cuStreamCreate; cuMemAlloc_v2 1 MiB; cuMemAllocHost_v2 256 KiB
 *   3 x cuMemcpyHtoD_v2 64 KiB from pageable memory; 2 x cuMemcpyHtoDAsync_v2 256 KiB pinned on the stream
 *   cuMemcpyDtoH_v2 32 KiB to pageable; cuMemsetD32_v2 1024 elements; cuMemsetD8Async 512 bytes on the stream
 *   5 x cuLaunchKernel gemm (grid 16, block 128x2x4, smem 1024) on the stream
 *   2 x cuLaunchKernel of the CUkernel softmax; 3 x cuLaunchKernel of its CUfunction
 *   2 x cuLaunchKernelEx scale (grid 8, block 64, smem 256) on the stream
 *   N x cuLaunchKernel early_kernel (with --early)
 *   cuStreamSynchronize; cuCtxSynchronize
 *   VMM: cuMemCreate 2 MiB on device 0; cuMemAddressReserve; cuMemMap; cuMemSetAccess;
 *        cuMemcpyHtoD_v2 4 KiB into the mapping; cuMemUnmap; cuMemAddressFree; cuMemRelease
 *   runtime: cudaMalloc 64 KiB; cudaMemcpy HtoD 4 KiB pageable; 2 x cudaLaunchKernel rt_kernel;
 *            cudaDeviceSynchronize; cudaFree
 *   cuMemFreeHost; cuMemFree_v2; cuStreamDestroy_v2; cuModuleUnload; cuLibraryUnload
 * Kernels launched through the driver are named by the module image, so the
 * reference names them as the tracer should: demangled ("gemm(float*, float*, int)").
 */
#include <cuda.h>

#include "wl.h"

#define KiB 1024ull

/* cuInit & co. are untraced: they are not in the reference's cuda_api (WLU checks without counting) */
#define WLD(fn, ...) wl_count(#fn, (cudaError_t)fn(__VA_ARGS__))

static void must(CUresult r, const char *what)
{
	if (r != CUDA_SUCCESS)
		wl_die("%s failed: %d", what, (int)r);
}

__attribute__((noinline)) void rt_kernel(float *a, int n)
{
	for (int i = 0; i < n; i++)
		a[i] *= 2;
}

static const char module_image[] = "simgpu-module\n_Z4gemmPfS_i\nscale\n";
static const char library_image[] = "simgpu-module\nsoftmax\n";
static const char early_image[] = "simgpu-module\nearly_kernel\n";

static void launch(CUfunction f, const char *name, unsigned grid, unsigned bx, unsigned by,
		   unsigned bz, unsigned smem, CUstream s, void **params)
{
	if (WLD(cuLaunchKernel, f, grid, 1, 1, bx, by, bz, smem, s, params, NULL) == cudaSuccess) {
		wl_launched(name);
		wl_stream_work((cudaStream_t)s, false, WL_KERNEL, 0);
	}
}

static void copy_htod(CUdeviceptr d, const void *h, size_t bytes, const char *mem)
{
	if (WLD(cuMemcpyHtoD_v2, d, h, bytes) == cudaSuccess) {
		wl_transfer("HtoD", mem, true, bytes);
		wl_stream_work(NULL, false, WL_COPY, bytes);
	}
}

int main(int argc, char **argv)
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod, early_mod;
	CUlibrary lib;
	CUfunction gemm, scale, softmax_fn, early = NULL, missing;
	CUkernel softmax;
	CUstream s;
	CUdeviceptr d;
	void *pinned;
	int early_launches = 3;
	static char pageable[256 * KiB];
	float *fp = NULL;
	int n = 64;
	void *params[] = { &fp, &fp, &n };

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--early") && i + 1 < argc)
			early_launches = atoi(argv[++i]);
	wl_init(argc, argv);
	memset(pageable, 7, sizeof(pageable));
	if (early_launches) { /* a handle made before the tracer could see it */
		must(cuInit(0), "cuInit");
		must(cuDeviceGet(&dev, 0), "cuDeviceGet");
		must(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
		must(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
		must(cuModuleLoadData(&early_mod, early_image), "cuModuleLoadData");
		must(cuModuleGetFunction(&early, early_mod, "early_kernel"), "cuModuleGetFunction");
	}
	wl_begin();

	wl_set_device(0);
	must(cuInit(0), "cuInit");
	must(cuDeviceGet(&dev, 0), "cuDeviceGet");
	must(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
	must(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");

	must(WLD(cuModuleLoadData, &mod, module_image), "cuModuleLoadData");
	must(WLD(cuModuleGetFunction, &gemm, mod, "_Z4gemmPfS_i"), "cuModuleGetFunction gemm");
	must(WLD(cuModuleGetFunction, &scale, mod, "scale"), "cuModuleGetFunction scale");
	must(WLD(cuLibraryLoadData, &lib, library_image, NULL, NULL, 0, NULL, NULL, 0),
	     "cuLibraryLoadData");
	must(WLD(cuLibraryGetKernel, &softmax, lib, "softmax"), "cuLibraryGetKernel");
	must(WLD(cuKernelGetFunction, &softmax_fn, softmax), "cuKernelGetFunction");
	if (WLD(cuModuleGetFunction, &missing, mod, "not_in_module") == cudaSuccess)
		wl_die("cuModuleGetFunction found a name the module lacks");

	must(cuStreamCreate(&s, 0), "cuStreamCreate");
	must(WLD(cuMemAlloc_v2, &d, 1024 * KiB), "cuMemAlloc_v2");
	wl_allocated(WL_DEVICE, (void *)(uintptr_t)d, 1024 * KiB);
	must(WLD(cuMemAllocHost_v2, &pinned, 256 * KiB), "cuMemAllocHost_v2");
	wl_allocated(WL_PINNED, pinned, 256 * KiB);
	fp = (float *)(uintptr_t)d;

	for (int i = 0; i < 3; i++)
		copy_htod(d, pageable, 64 * KiB, "pageable");
	for (int i = 0; i < 2; i++)
		if (WLD(cuMemcpyHtoDAsync_v2, d, pinned, 256 * KiB, s) == cudaSuccess) {
			wl_transfer("HtoD", "pinned", false, 256 * KiB);
			wl_stream_work((cudaStream_t)s, false, WL_COPY, 256 * KiB);
		}
	if (WLD(cuMemcpyDtoH_v2, pageable, d, 32 * KiB) == cudaSuccess) {
		wl_transfer("DtoH", "pageable", true, 32 * KiB);
		wl_stream_work(NULL, false, WL_COPY, 32 * KiB);
	}
	if (WLD(cuMemsetD32_v2, d, 0x3f800000u, 1024) == cudaSuccess) {
		wl_memset(4096);
		wl_stream_work(NULL, false, WL_MEMSET, 4096);
	}
	if (WLD(cuMemsetD8Async, d, 1, 512, s) == cudaSuccess) {
		wl_memset(512);
		wl_stream_work((cudaStream_t)s, false, WL_MEMSET, 512);
	}

	for (int i = 0; i < 5; i++)
		launch(gemm, "gemm(float*, float*, int)", 16, 128, 2, 4, 1024, s, params);
	for (int i = 0; i < 2; i++)
		launch((CUfunction)softmax, "softmax", 1, 32, 1, 1, 0, NULL, params);
	for (int i = 0; i < 3; i++)
		launch(softmax_fn, "softmax", 1, 32, 1, 1, 0, NULL, params);
	for (int i = 0; i < 2; i++) {
		CUlaunchConfig cfg = { .gridDimX = 8,
				       .gridDimY = 1,
				       .gridDimZ = 1,
				       .blockDimX = 64,
				       .blockDimY = 1,
				       .blockDimZ = 1,
				       .sharedMemBytes = 256,
				       .hStream = s };

		if (WLD(cuLaunchKernelEx, &cfg, scale, params, NULL) == cudaSuccess) {
			wl_launched("scale");
			wl_stream_work((cudaStream_t)s, false, WL_KERNEL, 0);
		}
	}
	for (int i = 0; early && i < early_launches; i++)
		if (WLD(cuLaunchKernel, early, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) ==
		    cudaSuccess)
			wl_stream_work(NULL, false, WL_KERNEL,
				       0); /* no name: not in the reference's kernels */
	if (WLD(cuStreamSynchronize, s) == cudaSuccess)
		wl_stream_work((cudaStream_t)s, false, WL_SYNC, 0);
	must(WLD(cuCtxSynchronize), "cuCtxSynchronize");

	/* VMM, as PyTorch's expandable segments use it */
	{
		CUmemAllocationProp prop = { 0 };
		CUmemAccessDesc access = { 0 };
		CUmemGenericAllocationHandle h;
		CUdeviceptr va;
		size_t gran = 0, size = 2048 * KiB;

		prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
		prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		prop.location.id = 0;
		must(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
		     "granularity");
		if (!gran || size % gran)
			wl_die("granularity %zu does not divide %zu", gran, size);
		must(WLD(cuMemCreate, &h, size, &prop, 0), "cuMemCreate");
		wl_allocated(WL_DEVICE, (void *)(uintptr_t)h, size);
		must(cuMemAddressReserve(&va, size, 0, 0, 0), "cuMemAddressReserve");
		must(WLD(cuMemMap, va, size, 0, h, 0), "cuMemMap");
		access.location = prop.location;
		access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
		must(cuMemSetAccess(va, size, &access, 1), "cuMemSetAccess");
		copy_htod(va, pageable, 4 * KiB, "pageable");
		must(WLD(cuMemUnmap, va, size), "cuMemUnmap");
		must(cuMemAddressFree(va, size), "cuMemAddressFree");
		must(WLD(cuMemRelease, h), "cuMemRelease");
		wl_freed((void *)(uintptr_t)h);
	}

	/* the runtime: each of these is implemented by one driver call, counted once, as the runtime's */
	{
		void *rd = NULL;

		if (WL(cudaMalloc, &rd, 64 * KiB) == cudaSuccess)
			wl_allocated(WL_DEVICE, rd, 64 * KiB);
		if (WL(cudaMemcpy, rd, pageable, 4 * KiB, cudaMemcpyHostToDevice) == cudaSuccess) {
			wl_transfer("HtoD", "pageable", true, 4 * KiB);
			wl_stream_work(NULL, false, WL_COPY, 4 * KiB);
		}
		for (int i = 0; i < 2; i++) {
			float *a = rd;
			void *args[] = { &a, &n };

			if (WL(cudaLaunchKernel, (const void *)rt_kernel, (dim3){ 2, 1, 1 },
			       (dim3){ 32, 1, 1 }, args, 0, NULL) == cudaSuccess) {
				wl_launched("rt_kernel");
				wl_stream_work(NULL, false, WL_KERNEL, 0);
			}
		}
		WL(cudaDeviceSynchronize);
		if (WL(cudaFree, rd) == cudaSuccess)
			wl_freed(rd);
	}

	if (WLD(cuMemFreeHost, pinned) == cudaSuccess)
		wl_freed(pinned);
	if (WLD(cuMemFree_v2, d) == cudaSuccess)
		wl_freed((void *)(uintptr_t)d);
	must(cuStreamDestroy_v2(s), "cuStreamDestroy_v2");
	must(WLD(cuModuleUnload, mod), "cuModuleUnload");
	must(WLD(cuLibraryUnload, lib), "cuLibraryUnload");
	wl_end();
	puts("DONE");
	return 0;
}
