/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * stackstage.c — libstackstage.so, the shared library of the stack_paths
 * workload: a kernel (stage_kernel) and the two frames that launch it
 * (stage_run -> stage_launch) live in a library, not in the executable, so the
 * report's frames must name that file and its symbols. Built -fPIC -shared with
 * frame pointers, linked to the simulated runtime.
 */
#include "stack_paths.h"

SP_FRAME void stage_kernel(float *x)
{
	x[0] = x[1] * 0.5f;
}

SP_FRAME void stage_launch(float *dev, sp_count_fn count)
{
	void *args[] = { &dev };
	cudaError_t err = cudaLaunchKernel((const void *)stage_kernel, (dim3){ 4, 1, 1 },
					   (dim3){ 32, 1, 1 }, args, 0, NULL);

	count("cudaLaunchKernel", err, "stage_kernel");
	SP_KEEP();
}

SP_FRAME void stage_run(float *dev, int times, sp_count_fn count)
{
	for (int i = 0; i < times; i++) {
		stage_launch(dev, count);
		SP_KEEP();
	}
}
