/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cudart_internal.h — what the runtime API files share: the export
 * attribute, error mapping from the model, per-thread state (current
 * device, last error), the entry check and the logging return macro.
 *
 * Rules every exported function follows: it is a separate, non-inlined,
 * interposable symbol (RT_API), it never calls another exported traced
 * function of the runtime (so a uprobe counts each call once), and it
 * returns through RT_RETURN, which records the thread's last error and,
 * with SIMGPU_LOG, prints the call. rt_enter() and RT_RETURN read the
 * clock of the thread's calls (sg_call_mark, simgpu_call_clock()).
 *
 * Like the real libcudart, the runtime implements its calls with the
 * driver: it loads libcuda.so.1 at the first call and calls the exported
 * driver functions through rt_drv, on the calling thread, so a uprobe on
 * the driver function fires nested inside the runtime's. A runtime call
 * that reaches the driver makes exactly one call of a traced driver
 * function (README.md has the mapping); the untraced cuInit,
 * cuDevicePrimaryCtxRetain and cuCtxSetCurrent bind the thread to its
 * device's primary context first, when needed. With SIMGPU_RUNTIME_DIRECT=1
 * (rt_direct) the runtime calls the model itself instead.
 */
#ifndef SIMGPU_CUDART_INTERNAL_H
#define SIMGPU_CUDART_INTERNAL_H

#include <stdbool.h>

#include "cuda.h"
#include "cuda_runtime_api.h"
#include "gpu_model.h"

#define RT_API	   __attribute__((visibility("default"), noinline))
#define RT_HIDDEN  __attribute__((visibility("hidden")))
/* Makes gcc set up a frame even in a trivial function, so that every export
 * starts with push %rbp (an instruction the kernel emulates for uprobes). */
#define RT_FRAME() __asm__ volatile("" : : "r"(__builtin_frame_address(0)))

/* Per host thread. */
extern __thread int rt_dev RT_HIDDEN;
extern __thread cudaError_t rt_last_error RT_HIDDEN;

RT_HIDDEN cudaError_t rt_err(int sg_status);
/* The error every call returns before doing anything (SIMGPU_INIT_ERROR,
 * no device), or cudaSuccess. Initialises the model on first use. */
RT_HIDDEN cudaError_t rt_enter(void);
RT_HIDDEN const char *rt_errname(cudaError_t e);

/* Resolve a stream handle for the calling thread's current device. */
RT_HIDDEN cudaError_t rt_stream(cudaStream_t h, bool per_thread, struct sg_stream **out);

/* The work of a call: stream h (when sync, the default stream) of rt_dev. */
static inline struct sg_target rt_target(cudaStream_t h, bool per_thread, bool sync)
{
	return (struct sg_target){
		.dev = rt_dev, .stream = h, .per_thread = per_thread, .sync = sync
	};
}

/* ---- the driver (cudart_driver.c) ------------------------------------------------------ */
/* Every driver function the runtime calls. */
/* The driver functions, a few a line (clang-format would reflow them). */
/* clang-format off */
#define RT_DRIVER_FUNCS(X)                                                                         \
	X(cuInit) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent)                                    \
	X(cuMemAlloc_v2) X(cuMemAllocAsync) X(cuMemAllocAsync_ptsz) X(cuMemAllocManaged)            \
	X(cuMemAllocHost_v2) X(cuMemHostAlloc) X(cuMemFree_v2) X(cuMemFreeAsync)                    \
	X(cuMemFreeAsync_ptsz) X(cuMemFreeHost) X(cuMemHostRegister_v2) X(cuMemHostUnregister)      \
	X(cuMemcpy) X(cuMemcpy_ptds) X(cuMemcpyAsync) X(cuMemcpyAsync_ptsz)                         \
	X(cuMemcpyHtoD_v2) X(cuMemcpyHtoD_v2_ptds) X(cuMemcpyDtoH_v2) X(cuMemcpyDtoH_v2_ptds)       \
	X(cuMemcpyDtoD_v2) X(cuMemcpyDtoD_v2_ptds) X(cuMemcpyHtoDAsync_v2)                          \
	X(cuMemcpyHtoDAsync_v2_ptsz) X(cuMemcpyDtoHAsync_v2) X(cuMemcpyDtoHAsync_v2_ptsz)           \
	X(cuMemcpyDtoDAsync_v2) X(cuMemcpyDtoDAsync_v2_ptsz)                                        \
	X(cuMemsetD8_v2) X(cuMemsetD8_v2_ptds) X(cuMemsetD8Async) X(cuMemsetD8Async_ptsz)           \
	X(cuLaunchKernel) X(cuLaunchKernel_ptsz) X(cuLaunchKernelEx) X(cuLaunchKernelEx_ptsz)       \
	X(cuLaunchCooperativeKernel) X(cuLaunchCooperativeKernel_ptsz)                              \
	X(cuGraphLaunch) X(cuGraphLaunch_ptsz)                                                      \
	X(cuStreamSynchronize) X(cuStreamSynchronize_ptsz) X(cuCtxSynchronize) X(cuEventSynchronize) \
	X(cuStreamWaitEvent) X(cuStreamWaitEvent_ptsz)
/* clang-format on */

struct rt_driver {
#define RT_DRV_MEMBER(name) __typeof__(name) *name;
	RT_DRIVER_FUNCS(RT_DRV_MEMBER)
#undef RT_DRV_MEMBER
};

/* Filled once, at the first call (rt_enter). */
extern struct rt_driver rt_drv RT_HIDDEN;
/* The runtime talks to the model itself (SIMGPU_RUNTIME_DIRECT=1, or the
 * libcuda.so.1 found is not the simulator's). */
extern bool rt_direct RT_HIDDEN;
/* The device whose primary context the runtime made current on this thread. */
extern __thread int rt_bound RT_HIDDEN;

/* Loads the driver once; the error every call then returns (cudaSuccess). */
RT_HIDDEN cudaError_t rt_driver_load(void);
RT_HIDDEN cudaError_t rt_bind_slow(void);
/* A driver result as the runtime reports it. */
RT_HIDDEN cudaError_t rt_cu(CUresult r);

/* The entry check of a call that goes through the driver: rt_enter(), then
 * (unless rt_direct) the thread's current context made rt_dev's primary
 * context if the runtime has not done so yet. */
static inline cudaError_t rt_enter_drv(void)
{
	cudaError_t e = rt_enter();

	if (!e && !rt_direct && __builtin_expect(rt_bound != rt_dev, 0))
		e = rt_bind_slow();
	return e;
}

#define RT_DPTR(p) ((CUdeviceptr)(uintptr_t)(p))

static inline cudaError_t rt_ret(cudaError_t e)
{
	if (e != cudaSuccess)
		rt_last_error = e;
	return e;
}

#define RT_RETURN(e, fmt, ...)                                                             \
	do {                                                                               \
		cudaError_t rt_e_ = (e);                                                   \
		if (__builtin_expect(sg_log_level != 0, 0))                                \
			sg_log("%s(" fmt ") = %d %s", __func__, ##__VA_ARGS__, (int)rt_e_, \
			       rt_errname(rt_e_));                                         \
		sg_call_mark();                                                            \
		return rt_ret(rt_e_);                                                      \
	} while (0)

#endif /* SIMGPU_CUDART_INTERNAL_H */
