/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cuda_runtime.h — the simulated GPU's umbrella runtime header: the C API
 * (cuda_runtime_api.h) plus, for C++, the typed convenience overloads the
 * real header offers (cudaMalloc(&float_ptr, n) without a cast).
 */
#ifndef SIMGPU_CUDA_RUNTIME_H
#define SIMGPU_CUDA_RUNTIME_H

#include "cuda_runtime_api.h"

#if defined(__cplusplus) && !defined(__CUDACC__)
template <class T> static inline cudaError_t cudaMalloc(T **devPtr, size_t size)
{
	return ::cudaMalloc((void **)(void *)devPtr, size);
}
template <class T> static inline cudaError_t cudaMallocHost(T **ptr, size_t size)
{
	return ::cudaMallocHost((void **)(void *)ptr, size);
}
template <class T> static inline cudaError_t cudaHostAlloc(T **ptr, size_t size, unsigned int flags)
{
	return ::cudaHostAlloc((void **)(void *)ptr, size, flags);
}
template <class T>
static inline cudaError_t cudaMallocManaged(T **devPtr, size_t size,
					    unsigned int flags = cudaMemAttachGlobal)
{
	return ::cudaMallocManaged((void **)(void *)devPtr, size, flags);
}
template <class T>
static inline cudaError_t cudaMallocAsync(T **devPtr, size_t size, cudaStream_t stream)
{
	return ::cudaMallocAsync((void **)(void *)devPtr, size, stream);
}
#endif

#endif /* SIMGPU_CUDA_RUNTIME_H */
