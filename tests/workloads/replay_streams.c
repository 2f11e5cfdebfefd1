/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * replay_streams — the workload of the replay tests: three host threads,
 * two non-blocking streams and the legacy default stream, whose timing the
 * simulator's knobs decide, so that a test can predict what a replay and
 * each what-if change take.
 *
 *  main      allocates, creates the streams and events, then COPIES times:
 *            think THINK_US, a synchronous host-to-device copy of COPY_BYTES
 *            from pageable memory (legacy stream); joins the threads; a
 *            cudaDeviceSynchronize that waits for nothing new (redundant).
 *  producer  on s1: one "produce" kernel synchronised alone (an isolated
 *            duration), then ITERS times: an async pinned copy of
 *            PROD_BYTES, "produce", an event record; the consumer is told
 *            (host semaphore) after the record; think THINK_US. Ends with
 *            two stream synchronisations (the second redundant).
 *  consumer  on s2: ITERS times: waits for the producer's event i
 *            (cudaStreamWaitEvent), "consume", an async memset and an async
 *            pinned device-to-host copy, two stream synchronisations (the
 *            second redundant), think THINK_US.
 *
 * Prints "WALL_NS <n>": the traced phase's wall time (first call's entry to
 * the last call's return, as the host sees it).
 *
 * usage: replay_streams [wl options]
 */
#include <semaphore.h>
#include <time.h>

#include "wl.h"

#define MiB	   (1024ull * 1024)
#define COPIES	   10
#define COPY_BYTES (4 * MiB)
#define ITERS	   5
#define PROD_BYTES (4 * MiB)
#define CONS_BYTES (1 * MiB)
#define THINK_US   3000

__attribute__((noinline)) void produce(float *a, int n)
{
	for (int i = 0; i < n; i++)
		a[i] += 1;
}

__attribute__((noinline)) void consume(float *a, int n)
{
	for (int i = 0; i < n; i++)
		a[i] *= 2;
}

static cudaStream_t s1, s2;
static cudaEvent_t ev[ITERS];
static sem_t ready[ITERS];
static void *d_prod, *d_cons, *d_main, *h_prod, *h_cons;

static void launch(void (*k)(float *, int), const char *name, void *dptr, cudaStream_t s)
{
	float *p = dptr;
	int n = 16;
	void *args[] = { &p, &n };

	if (WL(cudaLaunchKernel, (const void *)k, (dim3){ 1, 1, 1 }, (dim3){ 32, 1, 1 }, args, 0,
	       s) == cudaSuccess) {
		wl_launched(name);
		wl_stream_work(s, false, WL_KERNEL, 0);
	}
}

static void stream_sync(cudaStream_t s)
{
	WL(cudaStreamSynchronize, s);
	wl_stream_work(s, false, WL_SYNC, 0);
}

static void *producer(void *arg)
{
	launch(produce, "produce", d_prod, s1);
	stream_sync(s1);
	for (int i = 0; i < ITERS; i++) {
		if (WL(cudaMemcpyAsync, d_prod, h_prod, PROD_BYTES, cudaMemcpyHostToDevice, s1) ==
		    cudaSuccess) {
			wl_transfer("HtoD", "pinned", false, PROD_BYTES);
			wl_stream_work(s1, false, WL_COPY, PROD_BYTES);
		}
		launch(produce, "produce", d_prod, s1);
		WL(cudaEventRecord, ev[i], s1);
		sem_post(&ready[i]);
		usleep(THINK_US);
	}
	stream_sync(s1);
	stream_sync(s1);
	return NULL;
}

static void *consumer(void *arg)
{
	for (int i = 0; i < ITERS; i++) {
		sem_wait(&ready[i]);
		WL(cudaStreamWaitEvent, s2, ev[i], 0);
		launch(consume, "consume", d_cons, s2);
		if (WL(cudaMemsetAsync, d_cons, 0, CONS_BYTES, s2) == cudaSuccess) {
			wl_memset(CONS_BYTES);
			wl_stream_work(s2, false, WL_MEMSET, CONS_BYTES);
		}
		if (WL(cudaMemcpyAsync, h_cons, d_cons, CONS_BYTES, cudaMemcpyDeviceToHost, s2) ==
		    cudaSuccess) {
			wl_transfer("DtoH", "pinned", false, CONS_BYTES);
			wl_stream_work(s2, false, WL_COPY, CONS_BYTES);
		}
		stream_sync(s2);
		stream_sync(s2);
		usleep(THINK_US);
	}
	return NULL;
}

static void alloc(int kind, void **p, size_t bytes)
{
	cudaError_t err =
		kind == WL_PINNED ? WL(cudaMallocHost, p, bytes) : WL(cudaMalloc, p, bytes);

	if (err != cudaSuccess)
		wl_die("allocation of %zu bytes failed: %d", bytes, (int)err);
	wl_allocated(kind, *p, bytes);
}

static void release(int kind, void *p)
{
	if ((kind == WL_PINNED ? WL(cudaFreeHost, p) : WL(cudaFree, p)) == cudaSuccess)
		wl_freed(p);
}

static unsigned long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	pthread_t tp, tc;
	char *pageable;
	unsigned long long t0, t1;

	wl_init(argc, argv);
	pageable = malloc(COPY_BYTES);
	if (!pageable)
		wl_die("out of memory");
	memset(pageable, 1, COPY_BYTES); /* touched: no page faults inside the copies */
	for (int i = 0; i < ITERS; i++)
		sem_init(&ready[i], 0, 0);
	wl_begin();
	t0 = mono_ns();
	alloc(WL_DEVICE, &d_main, COPY_BYTES);
	alloc(WL_DEVICE, &d_prod, PROD_BYTES);
	alloc(WL_DEVICE, &d_cons, CONS_BYTES);
	alloc(WL_PINNED, &h_prod, PROD_BYTES);
	alloc(WL_PINNED, &h_cons, CONS_BYTES);
	WL(cudaStreamCreateWithFlags, &s1, cudaStreamNonBlocking);
	WL(cudaStreamCreateWithFlags, &s2, cudaStreamNonBlocking);
	for (int i = 0; i < ITERS; i++)
		WL(cudaEventCreateWithFlags, &ev[i], cudaEventDisableTiming);
	if (pthread_create(&tp, NULL, producer, NULL) || pthread_create(&tc, NULL, consumer, NULL))
		wl_die("pthread_create failed");
	for (int i = 0; i < COPIES; i++) {
		usleep(THINK_US);
		if (WL(cudaMemcpy, d_main, pageable, COPY_BYTES, cudaMemcpyHostToDevice) ==
		    cudaSuccess) {
			wl_transfer("HtoD", "pageable", true, COPY_BYTES);
			wl_stream_work(NULL, false, WL_COPY, COPY_BYTES);
		}
	}
	pthread_join(tp, NULL);
	pthread_join(tc, NULL);
	WL(cudaDeviceSynchronize);
	for (int i = 0; i < ITERS; i++)
		WL(cudaEventDestroy, ev[i]);
	WL(cudaStreamDestroy, s1);
	WL(cudaStreamDestroy, s2);
	release(WL_DEVICE, d_main);
	release(WL_DEVICE, d_prod);
	release(WL_DEVICE, d_cons);
	release(WL_PINNED, h_prod);
	release(WL_PINNED, h_cons);
	t1 = mono_ns();
	printf("WALL_NS %llu\n", t1 - t0);
	fflush(stdout);
	wl_end();
	free(pageable);
	return 0;
}
