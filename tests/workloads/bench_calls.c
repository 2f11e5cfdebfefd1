/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bench_calls — the overhead benchmark's workload: N cudaLaunchKernel and N
 * cudaMemcpyAsync calls in tight loops, each loop timed by the workload
 * itself (CLOCK_MONOTONIC), printed as ns per call on one JSON line.
 * Against the real libcudart without a GPU every call fails fast (the
 * cheapest possible library entry, so probe costs stand out); against the
 * simulator the calls do real work.
 *
 * usage: bench_calls [--iters N] [--wait]
 */
#include <time.h>

#include "wl.h"

__attribute__((noinline)) void bench_kernel(float *a)
{
	a[0] = 0;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long iters = 200000;
	void *dev = NULL, *host = NULL;
	cudaStream_t stream = NULL;
	unsigned long launch_err = 0, copy_err = 0;
	double t0, t1, t2;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atol(argv[++i]);
	if (iters < 1)
		wl_die("--iters must be positive");
	wl_init(argc, argv);
	/* Set-up outside the measured loops (and before any tracer attaches). */
	cudaMalloc(&dev, 4096);
	cudaMallocHost(&host, 4096);
	cudaStreamCreate(&stream);
	wl_begin();

	{
		float *p = dev;
		void *args[] = { &p };

		t0 = now_ns();
		for (long i = 0; i < iters; i++)
			launch_err += cudaLaunchKernel((const void *)bench_kernel, (dim3){ 1, 1, 1 },
						       (dim3){ 32, 1, 1 }, args, 0, stream) != cudaSuccess;
		t1 = now_ns();
		for (long i = 0; i < iters; i++)
			copy_err += cudaMemcpyAsync(dev, host, 64, cudaMemcpyHostToDevice, stream) !=
				    cudaSuccess;
		t2 = now_ns();
	}
	cudaStreamSynchronize(stream);
	printf("{\"iters\": %ld, \"launch_ns\": %.1f, \"memcpy_async_ns\": %.1f, "
	       "\"launch_errors\": %lu, \"memcpy_async_errors\": %lu}\n",
	       iters, (t1 - t0) / (double)iters, (t2 - t1) / (double)iters, launch_err, copy_err);
	fflush(stdout);
	wl_end();
	return 0;
}
