// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
// nvcc_kernels.cu — a real CUDA program, built by the e2e tests with `nvcc -cudart shared`
// when the toolkit is installed: CUDA 13 launch stubs (__cudaGetKernel/__cudaLaunchKernel)
// for a namespaced template kernel and a plain one. Handshake as the C workloads: prints
// "READY <pid>", waits for a line, launches, prints one JSON line with what it did, "DONE".
#include <cstdio>
#include <unistd.h>

namespace ml {
template <typename T> __global__ void scale(T *a, T f, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		a[i] *= f;
}
} // namespace ml

__global__ void saxpy(int n, float a, const float *x, float *y)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = a * x[i] + y[i];
}

int main()
{
	char line[16];
	float *d = nullptr;
	int ok_scale = 0, ok_saxpy = 0, err_scale = 0, err_saxpy = 0;

	printf("READY %d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	cudaMalloc(&d, 1024 * sizeof(float));
	for (int i = 0; i < 5; i++) {
		ml::scale<float><<<dim3(4, 2, 1), dim3(256, 1, 1), 128>>>(d, 2.0f, 1024);
		(cudaGetLastError() == cudaSuccess ? ok_scale : err_scale)++;
	}
	for (int i = 0; i < 3; i++) {
		saxpy<<<8, 128>>>(1024, 2.0f, d, d);
		(cudaGetLastError() == cudaSuccess ? ok_saxpy : err_saxpy)++;
	}
	cudaDeviceSynchronize();
	printf("{\"scale_ok\": %d, \"scale_err\": %d, \"saxpy_ok\": %d, \"saxpy_err\": %d}\n", ok_scale, err_scale,
	       ok_saxpy, err_saxpy);
	printf("DONE\n");
	fflush(stdout);
	return 0;
}
