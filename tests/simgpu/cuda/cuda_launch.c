/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cuda_launch.c — driver API: cuLaunchKernel, cuLaunchKernelEx and
 * cuLaunchCooperativeKernel, each with its _ptsz twin. The function is a
 * CUfunction (cuModuleGetFunction, cuKernelGetFunction, the runtime's
 * registered kernels) or a CUkernel (cuLibraryGetKernel) cast to one, as
 * CUDA 12 allows. A launch runs no code: like the runtime's, it spins
 * SIMGPU_LAUNCH_US in the calling thread, then queues a kernel of the
 * function's modelled duration on the stream (gpu_ops.c). Bad grid or
 * block dimensions and too much shared memory are CUDA_ERROR_INVALID_VALUE,
 * an unknown or unloaded function CUDA_ERROR_INVALID_HANDLE.
 */
#include "cuda_internal.h"

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
		       unsigned by, unsigned bz, unsigned smem, CUstream h, int per_thread,
		       void **params, void **extra, const char **name)
{
	const unsigned grid[3] = { gx, gy, gz }, block[3] = { bx, by, bz };
	struct sg_target t;
	int dev;
	CUresult r = cu_enter_ctx(&dev);

	*name = NULL;
	if (r)
		return r;
	if (params && extra)
		return CUDA_ERROR_INVALID_VALUE;
	t = cu_target(dev, h, per_thread, 0);
	return cu_err(sg_launch(&t, f, grid, block, smem, name));
}

#define LAUNCH_FMT "f=%p kernel=%s grid=%u,%u,%u block=%u,%u,%u smem=%u stream=%p"

#define LAUNCH_ENTRY(api, per_thread)                                                              \
	CU_API CUresult api(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,            \
			    unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, \
			    unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, \
			    void **kernelParams, void **extra)                                     \
	{                                                                                          \
		const char *n;                                                                     \
		CUresult r =                                                                       \
			launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,   \
			       sharedMemBytes, hStream, per_thread, kernelParams, extra, &n);      \
                                                                                                   \
		CU_RETURN(r, LAUNCH_FMT, (void *)f, n ? n : "?", gridDimX, gridDimY, gridDimZ,     \
			  blockDimX, blockDimY, blockDimZ, sharedMemBytes, (void *)hStream);       \
	}

LAUNCH_ENTRY(cuLaunchKernel, 0)
LAUNCH_ENTRY(cuLaunchKernel_ptsz, 1)

#define COOP_ENTRY(api, per_thread)                                                                \
	CU_API CUresult api(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,            \
			    unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, \
			    unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, \
			    void **kernelParams)                                                   \
	{                                                                                          \
		const char *n;                                                                     \
		CUresult r =                                                                       \
			launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,   \
			       sharedMemBytes, hStream, per_thread, kernelParams, NULL, &n);       \
                                                                                                   \
		CU_RETURN(r, LAUNCH_FMT, (void *)f, n ? n : "?", gridDimX, gridDimY, gridDimZ,     \
			  blockDimX, blockDimY, blockDimZ, sharedMemBytes, (void *)hStream);       \
	}

COOP_ENTRY(cuLaunchCooperativeKernel, 0)
COOP_ENTRY(cuLaunchCooperativeKernel_ptsz, 1)

static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f, int per_thread, void **params,
			  void **extra, const char **name)
{
	*name = NULL;
	if (!c || (c->numAttrs && !c->attrs)) {
		int dev;
		CUresult r = cu_enter_ctx(&dev);

		return r ? r : CUDA_ERROR_INVALID_VALUE;
	}
	return launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
		      c->blockDimZ, c->sharedMemBytes, c->hStream, per_thread, params, extra, name);
}

static const CUlaunchConfig no_config;

CU_API CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
				 void **extra)
{
	const CUlaunchConfig *c = config ? config : &no_config;
	const char *n;
	CUresult r = launch_ex(config, f, 0, kernelParams, extra, &n);

	CU_RETURN(r, LAUNCH_FMT, (void *)f, n ? n : "?", c->gridDimX, c->gridDimY, c->gridDimZ,
		  c->blockDimX, c->blockDimY, c->blockDimZ, c->sharedMemBytes, (void *)c->hStream);
}

CU_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
				      void **kernelParams, void **extra)
{
	const CUlaunchConfig *c = config ? config : &no_config;
	const char *n;
	CUresult r = launch_ex(config, f, 1, kernelParams, extra, &n);

	CU_RETURN(r, LAUNCH_FMT, (void *)f, n ? n : "?", c->gridDimX, c->gridDimY, c->gridDimZ,
		  c->blockDimX, c->blockDimY, c->blockDimZ, c->sharedMemBytes, (void *)c->hStream);
}
