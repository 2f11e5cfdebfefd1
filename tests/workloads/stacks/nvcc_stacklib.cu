// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nvcc_stacklib.cu — libnvstack.so, a shared library built by nvcc for the
 * call-stack tests (only where the CUDA toolkit is installed; the e2e test builds
 * it: nvcc -shared -Xcompiler -fPIC,-fno-omit-frame-pointer -cudart shared).
 * Two kernels — a template in a namespace (stk::scale<float>) and a plain one
 * (nv_fill) — each launched with <<<>>> from its own exported function, so the
 * launch goes through CUDA 13's stubs (__device_stub__*, __cudaGetKernel,
 * __cudaLaunchKernel) inside this library: the tracer must name the kernels from
 * the library's stubs and the stacks must pass through nvs_launch_scale /
 * nvs_launch_fill in this file. Each function returns the launch's own result
 * (cudaGetLastError), which nvcc_stackmain counts.
 */
#include "frames.h"

namespace stk {
template <typename T> __global__ void scale(T *a, T f, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		a[i] *= f;
}
} // namespace stk

__global__ void nv_fill(float *a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		a[i] = 1.0f;
}

extern "C" SP_FRAME float *nvs_setup(int n)
{
	float *d = nullptr;

	return cudaMalloc(&d, n * sizeof(float)) == cudaSuccess ? d : nullptr;
}

extern "C" SP_FRAME int nvs_launch_scale(float *d, int n)
{
	stk::scale<float><<<dim3(4, 1, 1), dim3(128, 1, 1)>>>(d, 2.0f, n);
	SP_KEEP();
	return (int)cudaGetLastError();
}

extern "C" SP_FRAME int nvs_launch_fill(float *d, int n)
{
	nv_fill<<<dim3(2, 1, 1), dim3(256, 1, 1)>>>(d, n);
	SP_KEEP();
	return (int)cudaGetLastError();
}

extern "C" SP_FRAME int nvs_sync(void)
{
	int err = (int)cudaDeviceSynchronize();

	SP_KEEP();
	return err;
}
