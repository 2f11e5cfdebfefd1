/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * replay_cuda.h — the CUDA runtime and driver the replay issues its work
 * through, loaded with dlopen: libcudart.so.13, else .so.12, else
 * libcudart.so (whichever the dynamic linker finds: LD_LIBRARY_PATH picks
 * the simulator in tests), and libcuda.so.1 for the stand-in kernels.
 * Declared here with their C ABI (handles as void *, errors as int), so
 * that gpuprobed needs no CUDA headers to build.
 */
#ifndef GP_REPLAY_CUDA_H
#define GP_REPLAY_CUDA_H

#include <stddef.h>

#define GP_CUDA_STREAM_PER_THREAD_HANDLE ((void *)0x2) /* cudaStreamPerThread */
#define GP_CUDA_MEMCPY_HTOH		 0
#define GP_CUDA_MEMCPY_HTOD		 1
#define GP_CUDA_MEMCPY_DTOH		 2
#define GP_CUDA_MEMCPY_DTOD		 3

struct gp_cuda {
	void *rt, *drv;
	char rt_name[32];
	/* runtime; the ones marked optional may be NULL */
	int (*cudaSetDevice)(int);
	int (*cudaMalloc)(void **, size_t);
	int (*cudaMallocManaged)(void **, size_t, unsigned);
	int (*cudaMallocHost)(void **, size_t);
	int (*cudaMallocAsync)(void **, size_t, void *); /* optional */
	int (*cudaFree)(void *);
	int (*cudaFreeAsync)(void *, void *); /* optional */
	int (*cudaFreeHost)(void *);
	int (*cudaHostRegister)(void *, size_t, unsigned);
	int (*cudaHostUnregister)(void *);
	int (*cudaMemcpy)(void *, const void *, size_t, int);
	int (*cudaMemcpy_ptds)(void *, const void *, size_t, int); /* optional */
	int (*cudaMemcpyAsync)(void *, const void *, size_t, int, void *);
	int (*cudaMemset)(void *, int, size_t);
	int (*cudaMemset_ptds)(void *, int, size_t); /* optional */
	int (*cudaMemsetAsync)(void *, int, size_t, void *);
	int (*cudaStreamCreateWithFlags)(void **, unsigned);
	int (*cudaStreamDestroy)(void *);
	int (*cudaStreamSynchronize)(void *);
	int (*cudaStreamWaitEvent)(void *, void *, unsigned);
	int (*cudaEventCreateWithFlags)(void **, unsigned);
	int (*cudaEventRecord)(void *, void *);
	int (*cudaEventSynchronize)(void *);
	int (*cudaEventDestroy)(void *);
	int (*cudaDeviceSynchronize)(void);
	const char *(*cudaGetErrorString)(int);
	/* driver */
	int (*cuInit)(unsigned);
	int (*cuDeviceGet)(int *, int);
	int (*cuDevicePrimaryCtxRetain)(void **, int);
	int (*cuCtxSetCurrent)(void *);
	int (*cuModuleLoadData)(void **, const void *);
	int (*cuModuleGetFunction)(void **, void *, const char *);
	int (*cuModuleUnload)(void *);
	int (*cuLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			      unsigned, void *, void **, void **);
};

/* Loads both libraries and every function. 0, or -ENOENT with errmsg naming what is missing. */
int gp_cuda_open(struct gp_cuda *c, char *errmsg, size_t errlen);
void gp_cuda_close(struct gp_cuda *c);
/* "cudaErrorInvalidValue (invalid argument)"-like text for a runtime error. */
const char *gp_cuda_error(const struct gp_cuda *c, int err);
/* Makes device's primary context current on the calling thread (the runtime's, shared with the driver). */
int gp_cuda_bind_thread(const struct gp_cuda *c, int device);

#endif /* GP_REPLAY_CUDA_H */
