/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * compat_toolkit.c — a plain C program compiled by gcc against the CUDA
 * toolkit's own cuda_runtime_api.h (not the simulator's), to check that
 * the simulator honours the real types, struct layouts and signatures.
 * compat.sh links it against the real libcudart.so.13 and runs it with
 * LD_LIBRARY_PATH pointing at the simulator; SIMGPU_DEVICE_MEM_MB=1234
 * proves which library answered. Exits 3 when there is no usable device
 * (the real runtime without a GPU).
 */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void compat_kernel(float *x, int n);
void compat_kernel(float *x, int n)
{
	(void)x;
	(void)n;
}

/* A host function that holds the stream until the host has queued what the events time, so
 * that their times are the model's alone, however late a busy machine runs this thread. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_open;

static void gate(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&gate_mu);
	while (!gate_open)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
}

#define CK(call)                                                                   \
	do {                                                                       \
		cudaError_t e_ = (call);                                           \
		if (e_ != cudaSuccess) {                                           \
			fprintf(stderr, "compat-toolkit: %s = %d %s\n", #call, e_, \
				cudaGetErrorName(e_));                             \
			return 1;                                                  \
		}                                                                  \
	} while (0)

int main(void)
{
	enum { N = 1 << 16 };
	struct cudaPointerAttributes at;
	cudaLaunchConfig_t cfg;
	cudaStream_t s;
	cudaEvent_t a, b;
	cudaGraph_t g;
	cudaGraphExec_t x;
	float *d, *h, *back, ms = 0;
	size_t fr, tot;
	int n = 0, v = 0, i;
	void *args[2];
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess || !n) {
		printf("compat-toolkit: no device: cudaGetDeviceCount = %d\n", e);
		return 3;
	}
	CK(cudaRuntimeGetVersion(&v));
	CK(cudaMemGetInfo(&fr, &tot));
	if (tot != 1234ull << 20) {
		fprintf(stderr, "compat-toolkit: total memory %zu: not the simulator\n", tot);
		return 1;
	}
	CK(cudaMalloc((void **)&d, N * sizeof(float)));
	CK(cudaMallocHost((void **)&h, N * sizeof(float)));
	CK(cudaPointerGetAttributes(&at, d));
	if (at.type != cudaMemoryTypeDevice || at.devicePointer != d || at.hostPointer) {
		fprintf(stderr, "compat-toolkit: bad cudaPointerAttributes\n");
		return 1;
	}
	for (i = 0; i < N; i++)
		h[i] = (float)i;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	CK(cudaLaunchHostFunc(s, gate, NULL));
	CK(cudaMemcpyAsync(d, h, N * sizeof(float), cudaMemcpyHostToDevice, s));
	CK(cudaEventRecord(a, s));
	n = N;
	args[0] = &d;
	args[1] = &n;
	CK(cudaLaunchKernel((const void *)compat_kernel, (dim3){ 64, 1, 1 }, (dim3){ 256, 1, 1 },
			    args, 0, s));
	memset(&cfg, 0, sizeof(cfg));
	cfg.gridDim = (dim3){ 64, 1, 1 };
	cfg.blockDim = (dim3){ 256, 1, 1 };
	cfg.stream = s;
	CK(cudaLaunchKernelExC(&cfg, (const void *)compat_kernel, args));
	CK(cudaEventRecord(b, s));
	back = calloc(N, sizeof(float));
	CK(cudaMemcpyAsync(back, d, N * sizeof(float), cudaMemcpyDeviceToHost, s));
	pthread_mutex_lock(&gate_mu);
	gate_open = 1;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
	CK(cudaStreamSynchronize(s));
	for (i = 0; i < N; i++)
		if (back[i] != (float)i) {
			fprintf(stderr, "compat-toolkit: data mismatch at %d\n", i);
			return 1;
		}
	CK(cudaEventElapsedTime(&ms, a, b));
	if (ms < 3.999f || ms > 4.001f) { /* two 2 ms kernels (SIMGPU_KERNEL_US=2000) */
		fprintf(stderr, "compat-toolkit: elapsed %.3f ms, want 4\n", ms);
		return 1;
	}
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	CK(cudaLaunchKernel((const void *)compat_kernel, (dim3){ 1, 1, 1 }, (dim3){ 1, 1, 1 }, args,
			    0, s));
	CK(cudaStreamEndCapture(s, &g));
	CK(cudaGraphInstantiate(&x, g, 0));
	CK(cudaGraphLaunch(x, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));
	e = cudaMemcpy(d, h, 4, (enum cudaMemcpyKind)9);
	if (e != cudaErrorInvalidMemcpyDirection || cudaGetLastError() != e ||
	    cudaGetLastError() != cudaSuccess) {
		fprintf(stderr, "compat-toolkit: bad error handling (%d)\n", e);
		return 1;
	}
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
	CK(cudaStreamDestroy(s));
	CK(cudaFree(d));
	CK(cudaFreeHost(h));
	free(back);
	printf("compat-toolkit: OK (runtime %d, %.3f ms)\n", v, ms);
	return 0;
}
