// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// compat_nvcc.cu — a CUDA program built by nvcc with -cudart shared: its
// launch stubs go through __cudaRegisterFunction, __cudaPushCallConfiguration
// / __cudaPopCallConfiguration, __cudaGetKernel and __cudaLaunchKernel, and
// it has a __managed__ variable. compat.sh runs it against the simulator
// with SIMGPU_LOG=1 and counts the launches per kernel name; the program
// checks data round trips and the modelled time of 3 launches of scale.
#include <cstdio>
#include <pthread.h>

__managed__ int counter;

__global__ void scale(float *x, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] *= a;
}

template <typename T> __global__ void fill(T *x, T v, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = v;
}

// A host function that holds the stream until the host has queued what the events time, so
// that their times are the model's alone, however late a busy machine runs this thread.
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_open;

static void gate(void *)
{
	pthread_mutex_lock(&gate_mu);
	while (!gate_open)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
}

#define CK(call)                                                                             \
	do {                                                                                 \
		cudaError_t e_ = (call);                                                     \
		if (e_ != cudaSuccess) {                                                     \
			fprintf(stderr, "compat-nvcc: %s = %d %s\n", #call, e_, cudaGetErrorName(e_)); \
			return 1;                                                            \
		}                                                                            \
	} while (0)

int main()
{
	const int n = 4096;
	float *d, h[n], ms = 0;
	cudaStream_t s;
	cudaEvent_t a, b;

	for (int i = 0; i < n; i++)
		h[i] = (float)i;
	counter = 41; // host access to a managed variable
	counter++;
	CK(cudaMalloc(&d, n * sizeof(float)));
	CK(cudaStreamCreate(&s));
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	CK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaLaunchHostFunc(s, gate, nullptr));
	CK(cudaEventRecord(a, s));
	for (int i = 0; i < 3; i++)
		scale<<<n / 256, 256, 0, s>>>(d, 2.0f, n);
	CK(cudaEventRecord(b, s));
	pthread_mutex_lock(&gate_mu);
	gate_open = 1;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
	CK(cudaGetLastError());
	fill<float><<<dim3(n / 256), dim3(256)>>>(d + n, 1.0f, 0);
	fill<int><<<16, 256>>>((int *)d, 1, 0);
	fill<int><<<16, 256, 128>>>((int *)d, 1, 0);
	CK(cudaDeviceSynchronize());
	CK(cudaEventElapsedTime(&ms, a, b));
	if (ms < 8.999f || ms > 9.001f) { // SIMGPU_KERNEL_TIMES=scale=3000
		fprintf(stderr, "compat-nvcc: 3 x scale took %.3f ms, want 9\n", ms);
		return 1;
	}
	for (int i = 0; i < n; i++)
		h[i] = -1.0f;
	CK(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		if (h[i] != (float)i) { // kernels run no code: the data is what was copied in
			fprintf(stderr, "compat-nvcc: data mismatch at %d\n", i);
			return 1;
		}
	if (counter != 42) {
		fprintf(stderr, "compat-nvcc: managed variable %d\n", counter);
		return 1;
	}
	CK(cudaFree(d));
	printf("compat-nvcc: OK (%.3f ms)\n", ms);
	return 0;
}
