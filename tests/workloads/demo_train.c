/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * demo_train — the workload `make demo` traces: a small "training loop" on the
 * simulated GPU with the habits that make real jobs slow, so the report has
 * something to show:
 *   - each batch is copied synchronously from pageable memory (cudaMemcpy),
 *     while the labels go through a pinned buffer asynchronously;
 *   - a scratch buffer is cudaMalloc'ed and cudaFree'd every step (churn);
 *   - many small copies (per-layer parameters, 16 KiB each);
 *   - the host blocks in cudaDeviceSynchronize every step, then copies the
 *     4-byte loss back;
 *   - a data-loader thread prefetches on its own stream.
 * It also leaves a buffer allocated at exit (a leak).
 *
 * usage: demo_train [--steps N] [wl options]
 */
#include "wl.h"

#define MiB    (1024ull * 1024ull)
#define KiB    1024ull
#define LAYERS 6

__attribute__((noinline)) void conv_forward(float *x)
{
	x[0] = 1;
}
__attribute__((noinline)) void relu(float *x)
{
	x[0] = 2;
}
__attribute__((noinline)) void conv_backward(float *x)
{
	x[0] = 3;
}
__attribute__((noinline)) void sgd_update(float *x)
{
	x[0] = 4;
}
__attribute__((noinline)) void prefetch_decode(float *x)
{
	x[0] = 5;
}

static int steps = 40;

static void launch(void (*fn)(float *), const char *name, float *arg, dim3 grid, cudaStream_t s)
{
	void *args[] = { &arg };

	if (WL(cudaLaunchKernel, (const void *)fn, grid, (dim3){ 256, 1, 1 }, args, 0, s) ==
	    cudaSuccess)
		wl_launched(name);
}

/* A loader thread decoding the next batches on its own stream. */
static void *loader(void *arg)
{
	cudaStream_t s = NULL;
	void *dev = NULL, *host = NULL;

	(void)arg;
	wl_set_device(0);
	WL(cudaStreamCreateWithFlags, &s, cudaStreamNonBlocking);
	if (WL(cudaMalloc, &dev, 4 * MiB) == cudaSuccess)
		wl_allocated(WL_DEVICE, dev, 4 * MiB);
	if (WL(cudaMallocHost, &host, 4 * MiB) == cudaSuccess)
		wl_allocated(WL_PINNED, host, 4 * MiB);
	for (int i = 0; i < steps / 2; i++) {
		if (WL(cudaMemcpyAsync, dev, host, 4 * MiB, cudaMemcpyHostToDevice, s) ==
		    cudaSuccess)
			wl_transfer("HtoD", "pinned", false, 4 * MiB);
		launch(prefetch_decode, "prefetch_decode", dev, (dim3){ 512, 1, 1 }, s);
		WL(cudaStreamSynchronize, s);
	}
	if (WL(cudaFree, dev) == cudaSuccess)
		wl_freed(dev);
	if (WL(cudaFreeHost, host) == cudaSuccess)
		wl_freed(host);
	WL(cudaStreamDestroy, s);
	return NULL;
}

int main(int argc, char **argv)
{
	void *weights = NULL, *batch = NULL, *loss = NULL, *labels_pinned = NULL, *labels = NULL;
	char *host_batch, *params;
	float host_loss = 0;
	cudaStream_t s = NULL;
	pthread_t th;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = atoi(argv[++i]);
	if (steps < 1)
		wl_die("--steps must be positive");
	wl_init(argc, argv);
	host_batch = malloc(16 * MiB);
	params = malloc(LAYERS * 16 * KiB);
	if (!host_batch || !params)
		wl_die("out of memory");
	memset(host_batch, 1, 16 * MiB);
	memset(params, 2, LAYERS * 16 * KiB);

	wl_begin();
	wl_set_device(0);
	WL(cudaStreamCreate, &s);
	if (WL(cudaMalloc, &weights, 64 * MiB) == cudaSuccess)
		wl_allocated(WL_DEVICE, weights, 64 * MiB);
	if (WL(cudaMalloc, &batch, 16 * MiB) == cudaSuccess)
		wl_allocated(WL_DEVICE, batch, 16 * MiB);
	if (WL(cudaMalloc, &labels, 256 * KiB) == cudaSuccess)
		wl_allocated(WL_DEVICE, labels, 256 * KiB);
	if (WL(cudaMalloc, &loss, 4) == cudaSuccess)
		wl_allocated(WL_DEVICE, loss, 4);
	if (WL(cudaMallocHost, &labels_pinned, 256 * KiB) == cudaSuccess)
		wl_allocated(WL_PINNED, labels_pinned, 256 * KiB);
	if (pthread_create(&th, NULL, loader, NULL))
		wl_die("pthread_create failed");

	for (int step = 0; step < steps; step++) {
		void *scratch = NULL;

		if (WL(cudaMalloc, &scratch, 8 * MiB) == cudaSuccess) /* churn: every step */
			wl_allocated(WL_DEVICE, scratch, 8 * MiB);
		if (WL(cudaMemcpy, batch, host_batch, 16 * MiB, cudaMemcpyHostToDevice) ==
		    cudaSuccess)
			wl_transfer("HtoD", "pageable", true, 16 * MiB);
		if (WL(cudaMemcpyAsync, labels, labels_pinned, 256 * KiB, cudaMemcpyHostToDevice,
		       s) == cudaSuccess)
			wl_transfer("HtoD", "pinned", false, 256 * KiB);
		for (int l = 0; l < LAYERS; l++) {
			if (WL(cudaMemcpy, (char *)weights + l * 16 * KiB, params + l * 16 * KiB,
			       16 * KiB, cudaMemcpyHostToDevice) == cudaSuccess)
				wl_transfer("HtoD", "pageable", true, 16 * KiB);
			launch(conv_forward, "conv_forward", weights, (dim3){ 1024, 1, 1 }, s);
			launch(relu, "relu", batch, (dim3){ 256, 1, 1 }, s);
		}
		for (int l = 0; l < LAYERS; l++) {
			launch(conv_backward, "conv_backward", scratch, (dim3){ 1024, 1, 1 }, s);
			launch(sgd_update, "sgd_update", weights, (dim3){ 128, 1, 1 }, s);
		}
		WL(cudaDeviceSynchronize);
		if (WL(cudaMemcpy, &host_loss, loss, 4, cudaMemcpyDeviceToHost) == cudaSuccess)
			wl_transfer("DtoH", "pageable", true, 4);
		if (WL(cudaFree, scratch) == cudaSuccess)
			wl_freed(scratch);
	}
	pthread_join(th, NULL);
	/* "forgets" labels: a leak at exit */
	if (WL(cudaFree, batch) == cudaSuccess)
		wl_freed(batch);
	if (WL(cudaFree, weights) == cudaSuccess)
		wl_freed(weights);
	if (WL(cudaFree, loss) == cudaSuccess)
		wl_freed(loss);
	if (WL(cudaFreeHost, labels_pinned) == cudaSuccess)
		wl_freed(labels_pinned);
	WL(cudaStreamDestroy, s);
	wl_end();
	free(host_batch);
	free(params);
	return 0;
}
