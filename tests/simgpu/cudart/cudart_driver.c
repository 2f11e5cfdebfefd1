/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cudart_driver.c — how the runtime reaches the driver, as the real
 * libcudart does: at the first call it loads libcuda.so.1 (dlopen, which
 * searches this library's RUNPATH, $ORIGIN: the simulator's own driver),
 * resolves the exported driver functions it implements its calls with
 * (dlsym), and initialises the driver (cuInit). Before a call that goes to
 * the driver, a thread's current context is set to its device's primary
 * context (cuDevicePrimaryCtxRetain once per device, cuCtxSetCurrent when
 * the thread's device changes). CUresult values map back to cudaError_t.
 *
 * Built twice: for libcudart.so.13 as above, and with SIMGPU_STATIC for
 * libcudart_static.a, which holds the driver's objects too (a static
 * runtime cannot dlopen a second copy of the GPU model): rt_drv then points
 * at the driver functions linked into the executable.
 *
 * SIMGPU_RUNTIME_DIRECT=1, or a libcuda.so.1 that is not the simulator's
 * (it does not see libsimgpu.so), make the runtime talk to the model
 * itself (rt_direct). No libcuda.so.1 at all: every call fails with
 * cudaErrorInsufficientDriver, as with the real runtime.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "cudart_internal.h"

struct rt_driver rt_drv;
bool rt_direct;
__thread int rt_bound = -1;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static cudaError_t load_error;
static pthread_mutex_t bind_mu = PTHREAD_MUTEX_INITIALIZER;
static CUcontext primary[SG_MAX_DEVICES];

cudaError_t rt_cu(CUresult r)
{
	/* the runtime's codes were made to match the driver's where both exist
	 * (CUDA_ERROR_INVALID_HANDLE = cudaErrorInvalidResourceHandle = 400,
	 * CUDA_ERROR_OUT_OF_MEMORY = cudaErrorMemoryAllocation = 2, ...) */
	if (r == CUDA_SUCCESS)
		return cudaSuccess;
	return rt_errname((cudaError_t)r) ? (cudaError_t)r : cudaErrorUnknown;
}

#ifdef SIMGPU_STATIC
static int resolve(void)
{
#define RT_DRV_SET(name) rt_drv.name = name;
	RT_DRIVER_FUNCS(RT_DRV_SET)
#undef RT_DRV_SET
	return 0;
}
#else
static int resolve(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	Dl_info info;

	if (!h) {
		fprintf(stderr,
			"simgpu: libcudart: cannot load libcuda.so.1 (%s): "
			"every call fails with cudaErrorInsufficientDriver\n",
			dlerror());
		load_error = cudaErrorInsufficientDriver;
		return -1;
	}
	/* the simulator's driver depends on libsimgpu.so; another one does not */
	if (!dlsym(h, "sg_config")) {
		fprintf(stderr,
			"simgpu: libcudart: %s is not the simulator's libcuda.so.1: "
			"the runtime talks to the GPU model directly\n",
			dladdr(dlsym(h, "cuInit"), &info) && info.dli_fname ? info.dli_fname
									    : "libcuda.so.1");
		rt_direct = true;
		return -1;
	}
#define RT_DRV_SYM(name)                                                              \
	if (!(*(void **)&rt_drv.name = dlsym(h, #name))) {                            \
		fprintf(stderr, "simgpu: libcudart: libcuda.so.1 lacks %s\n", #name); \
		load_error = cudaErrorInsufficientDriver;                             \
		return -1;                                                            \
	}
	RT_DRIVER_FUNCS(RT_DRV_SYM)
#undef RT_DRV_SYM
	return 0;
}
#endif

static void load(void)
{
	CUresult r;

	if (sg_config()->runtime_direct) {
		rt_direct = true;
		return;
	}
	if (resolve())
		return;
	r = rt_drv.cuInit(0);
	if (r)
		load_error = rt_cu(r);
}

cudaError_t rt_driver_load(void)
{
	pthread_once(&load_once, load);
	return load_error;
}

cudaError_t rt_bind_slow(void)
{
	int dev = rt_dev;
	CUcontext c;
	CUresult r = CUDA_SUCCESS;

	pthread_mutex_lock(&bind_mu);
	c = primary[dev];
	if (!c) {
		r = rt_drv.cuDevicePrimaryCtxRetain(&c, dev);
		if (!r)
			primary[dev] = c;
	}
	pthread_mutex_unlock(&bind_mu);
	if (!r)
		r = rt_drv.cuCtxSetCurrent(c);
	if (r)
		return rt_cu(r);
	rt_bound = dev;
	return cudaSuccess;
}
