// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * stack_paths_gemm.cpp — the C++ part of the stack_paths workload: a template
 * "kernel" (gemm_kernel<float>, launched by its host address as gcc-built code
 * does) launched from a function template in a namespace (stk::launch_gemm<float>),
 * so that both the kernel's name and a frame's name must be demangled:
 * "gemm_kernel<float>" and "stk::launch_gemm<float>" without their parameters.
 */
#include "stack_paths.h"

template <typename T> SP_FRAME void gemm_kernel(T *c, int n)
{
	for (int i = 0; i < n; i++)
		c[i] = c[i] * 3 + 1;
}

namespace stk {
template <typename T> SP_FRAME void launch_gemm(T *dev, int n, sp_count_fn count, const char *name)
{
	void *args[] = { &dev, &n };
	cudaError_t err = cudaLaunchKernel((const void *)&gemm_kernel<T>, dim3(2, 1, 1), dim3(128, 1, 1), args, 0,
					   nullptr);

	count("cudaLaunchKernel", err, name);
	SP_KEEP();
}
} // namespace stk

extern "C" SP_FRAME void gemm_phase(float *dev, int times, sp_count_fn count)
{
	for (int i = 0; i < times; i++) {
		stk::launch_gemm<float>(dev, 64, count, "void gemm_kernel<float>(float*, int)");
		SP_KEEP();
	}
}
