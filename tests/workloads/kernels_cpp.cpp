// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kernels_cpp — "kernels" that are C++ template instantiations, namespaced functions and static
 * members, launched through cudaLaunchKernel with their host addresses (as gcc-built code does):
 * the report must name them demangled, exactly as c++filt would.
 */
#include "wl.h"

namespace ml {
template <typename T> __attribute__((noinline)) void gemm(T *c, const T *a, int n)
{
	for (int i = 0; i < n; i++)
		c[i] += a[i];
}
} // namespace ml

struct Conv {
	static __attribute__((noinline)) void forward(float *x)
	{
		x[0] = 0;
	}
};

template <typename F> static void launch(F *fn, const char *name, int times, cudaStream_t s)
{
	void *p = nullptr;
	int n = 16;
	void *args[] = { &p, &p, &n };

	for (int i = 0; i < times; i++)
		if (WL(cudaLaunchKernel, (const void *)fn, dim3(4, 1, 1), dim3(64, 1, 1), args, 0, s) == cudaSuccess) {
			wl_launched(name);
			wl_stream_work(s, false, WL_KERNEL, 0);
		}
}

int main(int argc, char **argv)
{
	cudaStream_t s = nullptr;

	wl_init(argc, argv);
	wl_begin();
	wl_set_device(0);
	WL(cudaStreamCreate, &s);
	launch(&ml::gemm<float>, "void ml::gemm<float>(float*, float const*, int)", 3, s);
	launch(&ml::gemm<double>, "void ml::gemm<double>(double*, double const*, int)", 2, s);
	launch(&Conv::forward, "Conv::forward(float*)", 4, s);
	WL(cudaStreamSynchronize, s);
	wl_stream_work(s, false, WL_SYNC, 0);
	WL(cudaStreamDestroy, s);
	wl_end();
	return 0;
}
