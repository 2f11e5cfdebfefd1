/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cudart_internal.h — what the runtime API files share: the export
 * attribute, error mapping from the model, per-thread state (current
 * device, last error), the entry check and the logging return macro.
 *
 * Rules every exported function follows: it is a separate, non-inlined,
 * interposable symbol (RT_API), it never calls another exported traced
 * function (so a uprobe counts each call once), and it returns through
 * RT_RETURN, which records the thread's last error and, with SIMGPU_LOG,
 * prints the call.
 */
#ifndef SIMGPU_CUDART_INTERNAL_H
#define SIMGPU_CUDART_INTERNAL_H

#include <stdbool.h>

#include "cuda_runtime_api.h"
#include "gpu_model.h"

#define RT_API __attribute__((visibility("default"), noinline))
#define RT_HIDDEN __attribute__((visibility("hidden")))
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

static inline cudaError_t rt_ret(cudaError_t e)
{
	if (e != cudaSuccess)
		rt_last_error = e;
	return e;
}

#define RT_RETURN(e, fmt, ...)                                                          \
	do {                                                                            \
		cudaError_t rt_e_ = (e);                                                \
		if (__builtin_expect(sg_log_level != 0, 0))                             \
			sg_log("%s(" fmt ") = %d %s", __func__, ##__VA_ARGS__, (int)rt_e_, \
			       rt_errname(rt_e_));                                      \
		return rt_ret(rt_e_);                                                   \
	} while (0)

#endif /* SIMGPU_CUDART_INTERNAL_H */
