/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * stack_paths.h — what the sources of the stack_paths workload share: the
 * launching functions that live outside stack_paths.c (one in a C++ file of the
 * executable, two in libstackstage.so) and the callback through which they tell
 * stack_paths.c what a call did (wl.h's accounting is per translation unit, so
 * only stack_paths.c includes it).
 * Frames are kept with SP_FRAME/SP_KEEP (frames.h).
 */
#ifndef STACK_PATHS_H
#define STACK_PATHS_H

#include <cuda_runtime_api.h>

#include "frames.h"

/* One traced call made: its API, its result, and for a launch the kernel's demangled name. */
typedef void (*sp_count_fn)(const char *api, cudaError_t err, const char *kernel);

#ifdef __cplusplus
extern "C" {
#endif

/* stack_paths_gemm.cpp: times launches of gemm_kernel<float> from stk::launch_gemm<float>. */
void gemm_phase(float *dev, int times, sp_count_fn count);

/* libstackstage.so: times launches of stage_kernel from stage_launch, called by stage_run. */
void stage_run(float *dev, int times, sp_count_fn count);
void stage_launch(float *dev, sp_count_fn count);
void stage_kernel(float *x);

#ifdef __cplusplus
}
#endif

#endif
