/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nofp.h — what the two sources of the nofp_stacks workload share (nofp_stacks.c,
 * the executable, and nofp_stage.c, libnofpstage.so): the record of one traced
 * call, with the stack glibc's backtrace() saw just before it, and the callback
 * through which the library hands it to the executable (wl.h's accounting is per
 * translation unit, so only nofp_stacks.c includes it).
 * Both are built -O2 -fomit-frame-pointer (workloads.mk): their frames are found
 * only through .eh_frame. Frames are kept with SP_FRAME/SP_KEEP (stacks/frames.h).
 */
#ifndef NOFP_H
#define NOFP_H

#include <execinfo.h>

#include <cuda_runtime_api.h>

#include "stacks/frames.h"

#define NF_MAX_BT 64 /* deeper than any path of the workload */

enum nf_op {
	NF_LAUNCH,
	NF_COPY_HTOD,
	NF_COPY_DTOH,
	NF_MEMSET,
	NF_ALLOC,
	NF_FREE,
	NF_DEVICE_SYNC,
	NF_STREAM_SYNC
};

/*
 * One traced call. bt[] is backtrace() taken in the function that makes the call, right before
 * it: bt[0] is in that function (after the call of backtrace, not of the API), bt[1..] are its
 * callers' return addresses — those of the API call's stack, frame for frame.
 */
struct nf_call {
	enum nf_op op;
	const char *api, *kernel;
	unsigned long long bytes;
	void *ptr; /* NF_ALLOC: what it allocated; NF_FREE: what it freed */
	cudaError_t err;
	int nbt;
	void *bt[NF_MAX_BT];
};

typedef void (*nf_note_fn)(const struct nf_call *c);

/* What the library's functions work with. */
struct nf_ctx {
	nf_note_fn note;
	void *dev;					   /* device memory (NF_DEV_BYTES) */
	char *host;					   /* pageable host memory (NF_DEV_BYTES) */
	void (*apply)(const struct nf_ctx *cx, int times); /* a function of the executable */
};

#define NF_DEV_BYTES	  (1u << 20)
#define NF_COPY_IN_BYTES  (64u << 10)
#define NF_COPY_OUT_BYTES 4096u
#define NF_RECURSE_MAX	  3

#ifdef __cplusplus
extern "C" {
#endif

/* libnofpstage.so */
void nfl_kernel(float *x);
void nfl_stage_enter(const struct nf_ctx *cx, int times);
void nfl_recurse(const struct nf_ctx *cx, int depth, int times);
void nfl_big_frame(const struct nf_ctx *cx, int times);

#ifdef __cplusplus
}
#endif

#endif
