/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cuda_internal.h — what the driver API files share: the export attribute,
 * contexts and the calling thread's current one, the entry checks (driver
 * initialised, a live current context), error mapping from the model, and
 * the logging return macro.
 *
 * Rules every exported function follows, as in the runtime: it is a
 * separate, non-inlined, interposable symbol (CU_API) starting with push
 * %rbp, it never calls another exported function of the driver (so a
 * uprobe counts each call once), and it returns through CU_RETURN, which
 * prints the call with SIMGPU_LOG. The entry checks and CU_RETURN read the
 * clock of the thread's calls (sg_call_mark, simgpu_call_clock()).
 */
#ifndef SIMGPU_CUDA_INTERNAL_H
#define SIMGPU_CUDA_INTERNAL_H

#include <stdbool.h>

#include "cuda.h"
#include "gpu_model.h"

#define CU_API	   __attribute__((visibility("default"), noinline))
#define CU_HIDDEN  __attribute__((visibility("hidden")))
/* Makes gcc set up a frame even in a trivial function (push %rbp first). */
#define CU_FRAME() __asm__ volatile("" : : "r"(__builtin_frame_address(0)))

#define CU_CTX_MAGIC 0x5854434d49534743ull /* "CGSIMCTX" */

/* A context: the device it belongs to. Memory, streams and events belong to
 * the device in the model, so destroying a context frees nothing; it only
 * makes the handle invalid. Context objects are never freed, so a thread
 * that still has a destroyed one current reads its state safely. */
struct cu_ctx {
	uint64_t magic;
	int dev;
	unsigned flags;
	bool primary;
	int refs;	/* primary: retain count; active while > 0 */
	bool destroyed; /* cuCtxDestroy'ed (not primary) */
	struct cu_ctx *next;
};

/* Set once by a successful cuInit. */
extern int cu_initialized CU_HIDDEN;
/* The calling thread's current context (top of its context stack), or NULL. */
extern __thread struct cu_ctx *cu_cur CU_HIDDEN;

CU_HIDDEN CUresult cu_err(int sg_status);
CU_HIDDEN const char *cu_errname(CUresult r);
CU_HIDDEN CUresult cu_not_initialized(void);
/* Whether c is a live context (primary or created, not destroyed). */
CU_HIDDEN bool cu_ctx_valid(const struct cu_ctx *c);
/* What a call with a current context that is not usable returns. */
CU_HIDDEN CUresult cu_ctx_unusable(const struct cu_ctx *c);

/* The driver is initialised (cuInit succeeded). */
static inline CUresult cu_enter(void)
{
	sg_call_mark();
	if (__builtin_expect(!__atomic_load_n(&cu_initialized, __ATOMIC_ACQUIRE), 0))
		return cu_not_initialized();
	return CUDA_SUCCESS;
}

/* Initialised, and the calling thread has a live current context: its
 * device in *dev. */
static inline CUresult cu_enter_ctx(int *dev)
{
	const struct cu_ctx *c = cu_cur;

	sg_call_mark();
	*dev = -1;
	if (__builtin_expect(!__atomic_load_n(&cu_initialized, __ATOMIC_ACQUIRE), 0))
		return cu_not_initialized();
	if (__builtin_expect(!c || c->destroyed ||
				     (c->primary && !__atomic_load_n(&c->refs, __ATOMIC_RELAXED)),
			     0))
		return cu_ctx_unusable(c);
	*dev = c->dev;
	return CUDA_SUCCESS;
}

/* The work of a call: stream h (or, when sync, the default stream) of dev. */
static inline struct sg_target cu_target(int dev, CUstream h, int per_thread, int sync)
{
	return (struct sg_target){
		.dev = dev, .stream = h, .per_thread = per_thread, .sync = sync
	};
}

#define CU_PTR(p) ((void *)(uintptr_t)(p))

#define CU_RETURN(r, fmt, ...)                                                             \
	do {                                                                               \
		CUresult cu_r_ = (r);                                                      \
		if (__builtin_expect(sg_log_level != 0, 0))                                \
			sg_log("%s(" fmt ") = %d %s", __func__, ##__VA_ARGS__, (int)cu_r_, \
			       cu_errname(cu_r_) ? cu_errname(cu_r_) : "?");               \
		sg_call_mark();                                                            \
		return cu_r_;                                                              \
	} while (0)

#endif /* SIMGPU_CUDA_INTERNAL_H */
