/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * multi_stream — several host threads, each with its own device (thread i
 * uses device i % devices), its own streams and a per-thread default stream
 * (_ptsz), issuing copies, memsets and launches, then synchronising; with
 * two devices or more, peer copies between them. Every call is counted per
 * thread, so the report's threads table is checked too.
 *
 * usage: multi_stream [--threads N] [--iters N] [wl options]
 */
#include "wl.h"

#define KiB 1024ull

/*
 * The per-thread-default-stream entry points, called by name (headers only
 * map to them under CUDA_API_PER_THREAD_DEFAULT_STREAM, which would rename
 * every call and hide the difference this workload wants to show).
 */
extern cudaError_t cudaMemsetAsync_ptsz(void *ptr, int value, size_t count, cudaStream_t stream);
extern cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 grid, dim3 block, void **args,
					 size_t smem, cudaStream_t stream);
extern cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);

__attribute__((noinline)) void stream_kernel(float *a, int n)
{
	for (int i = 0; i < n; i++)
		a[i] *= 2;
}

static int iters = 50, ndev = 1;
static pthread_barrier_t start;

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg, dev = id % ndev;
	cudaStream_t streams[3] = { NULL, NULL, NULL };
	void *d = NULL, *h = NULL;
	size_t bytes = 64 * KiB * (size_t)(id + 1);

	pthread_barrier_wait(&start);
	wl_set_device(dev);
	for (int s = 0; s < 3; s++)
		WL(cudaStreamCreateWithFlags, &streams[s],
		   s == 2 ? cudaStreamNonBlocking : cudaStreamDefault);
	if (WL(cudaMalloc, &d, bytes) == cudaSuccess)
		wl_allocated(WL_DEVICE, d, bytes);
	if (WL(cudaMallocHost, &h, bytes) == cudaSuccess)
		wl_allocated(WL_PINNED, h, bytes);
	for (int i = 0; i < iters; i++) {
		cudaStream_t s = streams[i % 3];
		float *pd = d;
		int n = 16;
		void *args[] = { &pd, &n };
		size_t chunk = bytes / (size_t)(1 + i % 4);

		if (WL(cudaMemcpyAsync, d, h, chunk, cudaMemcpyHostToDevice, s) == cudaSuccess) {
			wl_transfer("HtoD", "pinned", false, chunk);
			wl_stream_work(s, false, WL_COPY, chunk);
		}
		if (WL(cudaLaunchKernel, (const void *)stream_kernel,
		       (dim3){ (unsigned)(id + 1), 1, 1 }, (dim3){ 128, 1, 1 }, args, 0,
		       s) == cudaSuccess) {
			wl_launched("stream_kernel");
			wl_stream_work(s, false, WL_KERNEL, 0);
		}
		if (WL(cudaMemsetAsync_ptsz, d, 0, 4 * KiB, 0) == cudaSuccess) {
			wl_memset(4 * KiB);
			wl_stream_work(0, true, WL_MEMSET, 4 * KiB);
		}
		if (WL(cudaLaunchKernel_ptsz, (const void *)stream_kernel, (dim3){ 2, 2, 1 },
		       (dim3){ 64, 1, 1 }, args, 0, 0) == cudaSuccess) {
			wl_launched("stream_kernel");
			wl_stream_work(0, true, WL_KERNEL, 0);
		}
		if (WL(cudaMemcpyAsync, h, d, 8 * KiB, cudaMemcpyDeviceToHost, s) == cudaSuccess) {
			wl_transfer("DtoH", "pinned", false, 8 * KiB);
			wl_stream_work(s, false, WL_COPY, 8 * KiB);
		}
		if (i % 10 == 9) {
			WL(cudaStreamSynchronize, s);
			wl_stream_work(s, false, WL_SYNC, 0);
		}
	}
	WL(cudaStreamSynchronize_ptsz, 0);
	wl_stream_work(0, true, WL_SYNC, 0);
	for (int s = 0; s < 3; s++) {
		WL(cudaStreamSynchronize, streams[s]);
		wl_stream_work(streams[s], false, WL_SYNC, 0);
		WL(cudaStreamDestroy, streams[s]);
	}
	if (WL(cudaFree, d) == cudaSuccess)
		wl_freed(d);
	if (WL(cudaFreeHost, h) == cudaSuccess)
		wl_freed(h);
	return NULL;
}

static void peer_copies(void)
{
	void *d0 = NULL, *d1 = NULL;
	cudaStream_t s = NULL;

	wl_set_device(0);
	if (WL(cudaMalloc, &d0, 256 * KiB) == cudaSuccess)
		wl_allocated(WL_DEVICE, d0, 256 * KiB);
	WL(cudaStreamCreate, &s);
	wl_set_device(1);
	if (WL(cudaMalloc, &d1, 128 * KiB) == cudaSuccess)
		wl_allocated(WL_DEVICE, d1, 128 * KiB);
	if (WL(cudaMemcpyPeer, d1, 1, d0, 0, 128 * KiB) == cudaSuccess) {
		wl_transfer("PtoP", "device", true, 128 * KiB);
		wl_stream_work(NULL, false, WL_COPY, 128 * KiB);
	}
	for (int i = 0; i < 3; i++)
		if (WL(cudaMemcpyPeerAsync, d0, 0, d1, 1, 32 * KiB, s) == cudaSuccess) {
			wl_transfer("PtoP", "device", false, 32 * KiB);
			wl_stream_work(s, false, WL_COPY, 32 * KiB);
		}
	WL(cudaStreamSynchronize, s);
	wl_stream_work(s, false, WL_SYNC, 0);
	WL(cudaStreamDestroy, s);
	if (WL(cudaFree, d1) == cudaSuccess)
		wl_freed(d1);
	wl_set_device(0);
	if (WL(cudaFree, d0) == cudaSuccess)
		wl_freed(d0);
}

int main(int argc, char **argv)
{
	pthread_t th[64];
	int nthreads = 4;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
	}
	if (nthreads < 1 || nthreads > 64 || iters < 1)
		wl_die("--threads 1..64, --iters >= 1");
	wl_init(argc, argv);
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1)
		ndev = 1;
	pthread_barrier_init(&start, NULL, (unsigned)nthreads);
	wl_begin();
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i))
			wl_die("pthread_create failed");
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	if (ndev >= 2)
		peer_copies();
	WL(cudaDeviceSynchronize);
	wl_end();
	return 0;
}
