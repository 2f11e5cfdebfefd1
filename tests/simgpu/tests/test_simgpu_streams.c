/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_simgpu_streams.c — stream semantics: in-order execution per stream,
 * concurrency between streams, the legacy default stream's implicit
 * synchronisation with blocking streams (and not with non-blocking ones),
 * per-thread default streams, events across streams, blocking sync calls,
 * invalid handles, stream destruction with pending work, callbacks, and
 * many host threads using the simulator at once.
 * Kernels: k2 = 2 ms, k5 = 5 ms, k10 = 10 ms.
 */
#include <pthread.h>
#include <string.h>

#include "simgpu_test.h"

void k2(void);
void k2(void) {}
void k5(void);
void k5(void) {}
void k10(void);
void k10(void) {}

static const dim3 one = { 1, 1, 1 };

static cudaError_t launch(void (*k)(void), cudaStream_t s)
{
	return cudaLaunchKernel((const void *)k, one, one, NULL, 0, s);
}

static cudaError_t launch_ptsz(void (*k)(void), cudaStream_t s)
{
	return cudaLaunchKernel_ptsz((const void *)k, one, one, NULL, 0, s);
}

/* Host functions stamp the time (ms since t0) they ran at. */
static double t0;
static double stamps[16];
static int order[16], norder;
static pthread_mutex_t stamp_mu = PTHREAD_MUTEX_INITIALIZER;

static void stamp(void *arg)
{
	int i = (int)(intptr_t)arg;

	pthread_mutex_lock(&stamp_mu);
	stamps[i] = now_ms() - t0;
	order[norder++] = i;
	pthread_mutex_unlock(&stamp_mu);
}

static void reset_stamps(void)
{
	memset(stamps, 0, sizeof(stamps));
	norder = 0;
	t0 = now_ms();
}

static void test_in_order(void **state)
{
	cudaStream_t s;

	(void)state;
	CK(cudaStreamCreate(&s));
	TRY_TIMING(reset_stamps();
		   CK(cudaLaunchHostFunc(s, stamp, (void *)0));
		   CK(launch(k5, s));
		   CK(cudaLaunchHostFunc(s, stamp, (void *)1));
		   CK(launch(k2, s));
		   CK(launch(k2, s));
		   CK(cudaLaunchHostFunc(s, stamp, (void *)2));
		   CK(cudaStreamSynchronize(s));
		   assert_int_equal(norder, 3);
		   assert_int_equal(order[0], 0);
		   assert_int_equal(order[1], 1);
		   assert_int_equal(order[2], 2);
		   WITHIN(stamps[1] - stamps[0], 5.0, 8.0);
		   WITHIN(stamps[2] - stamps[1], 4.0, 7.0));
	CK(cudaStreamDestroy(s));
}

static void test_streams_concurrent(void **state)
{
	cudaStream_t a, b;

	(void)state;
	CK(cudaStreamCreate(&a));
	CK(cudaStreamCreate(&b));
	ASSERT_TIMED(10.0, 0.15, CK(launch(k10, a)); CK(launch(k10, b)); CK(cudaDeviceSynchronize()));
	CK(cudaStreamDestroy(a));
	CK(cudaStreamDestroy(b));
}

static void test_legacy_stream(void **state)
{
	cudaStream_t blk, blk2, nb;

	(void)state;
	CK(cudaStreamCreate(&blk));
	CK(cudaStreamCreate(&blk2));
	CK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));

	/* legacy work waits for earlier blocking work; later blocking work
	 * waits for the legacy work; non-blocking streams take no part */
	TRY_TIMING(reset_stamps();
		   CK(launch(k10, blk));
		   CK(launch(k2, NULL));
		   CK(cudaLaunchHostFunc(NULL, stamp, (void *)0));
		   CK(cudaLaunchHostFunc(blk2, stamp, (void *)1));
		   CK(cudaLaunchHostFunc(nb, stamp, (void *)2));
		   CK(cudaDeviceSynchronize());
		   WITHIN(stamps[0], 12.0, 16.0);
		   WITHIN(stamps[1], 12.0, 16.0);
		   WITHIN(stamps[2], 0.0, 3.0));

	/* the legacy stream does not wait for non-blocking streams */
	TRY_TIMING(reset_stamps();
		   CK(launch(k10, nb));
		   CK(launch(k2, cudaStreamLegacy));
		   CK(cudaStreamSynchronize(NULL));
		   WITHIN(now_ms() - t0, 2.0, 5.0);
		   CK_ERR(cudaStreamQuery(nb), cudaErrorNotReady);
		   CK(cudaStreamSynchronize(nb)));

	/* synchronising the legacy stream waits for blocking streams */
	TRY_TIMING(reset_stamps();
		   CK(launch(k5, blk));
		   CK(cudaStreamSynchronize(NULL));
		   WITHIN(now_ms() - t0, 5.0, 8.0));

	/* a synchronous copy is legacy-stream work: it waits for blk */
	{
		char *d, h[64];

		CK(cudaMalloc((void **)&d, 64));
		TRY_TIMING(reset_stamps();
			   CK(launch(k10, blk));
			   CK(cudaMemcpy(h, d, 64, cudaMemcpyDeviceToHost));
			   WITHIN(now_ms() - t0, 10.0, 13.0));
		/* ... but not for a non-blocking stream */
		TRY_TIMING(reset_stamps();
			   CK(launch(k10, nb));
			   CK(cudaMemcpy(h, d, 64, cudaMemcpyDeviceToHost));
			   WITHIN(now_ms() - t0, 0.0, 3.0);
			   CK(cudaDeviceSynchronize()));
		CK(cudaFree(d));
	}
	CK(cudaStreamDestroy(blk));
	CK(cudaStreamDestroy(blk2));
	CK(cudaStreamDestroy(nb));
}

static void *ptds_thread(void *arg)
{
	(void)arg;
	if (launch_ptsz(k10, NULL) || cudaStreamSynchronize_ptsz(NULL))
		return (void *)1;
	return NULL;
}

static void test_per_thread_stream(void **state)
{
	pthread_t t[2];
	void *r;
	int i;

	(void)state;
	/* per-thread default streams of two threads run concurrently */
	TRY_TIMING(reset_stamps();
		   for (i = 0; i < 2; i++)
			   assert_int_equal(pthread_create(&t[i], NULL, ptds_thread, NULL), 0);
		   for (i = 0; i < 2; i++) {
			   pthread_join(t[i], &r);
			   assert_null(r);
		   }
		   WITHIN(now_ms() - t0, 10.0, 16.0));

	/* they are blocking streams: they wait for the legacy stream */
	TRY_TIMING(reset_stamps();
		   CK(launch(k10, NULL));
		   CK(launch_ptsz(k2, NULL));
		   CK(cudaLaunchHostFunc_ptsz(NULL, stamp, (void *)0));
		   CK(cudaLaunchHostFunc(cudaStreamPerThread, stamp, (void *)1));
		   CK(cudaStreamSynchronize_ptsz(NULL));
		   WITHIN(stamps[0], 12.0, 16.0);
		   assert_true(stamps[1] >= stamps[0]));
	/* ... and the legacy stream waits for them */
	TRY_TIMING(reset_stamps();
		   CK(launch_ptsz(k10, NULL));
		   CK(cudaLaunchHostFunc(NULL, stamp, (void *)0));
		   CK(cudaStreamSynchronize(NULL));
		   WITHIN(stamps[0], 10.0, 14.0));
	CK(cudaMemcpy_ptds(stamps, stamps, 8, cudaMemcpyHostToHost));
}

static void test_events(void **state)
{
	cudaStream_t a, b;
	cudaEvent_t e, never;
	double t;

	(void)state;
	CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
	CK(cudaEventCreateWithFlags(&e, cudaEventBlockingSync));
	CK(cudaEventCreate(&never));
	CK(cudaEventQuery(never)); /* never recorded: complete */
	CK(cudaEventSynchronize(never));

	TRY_TIMING(reset_stamps();
		   CK(launch(k10, a));
		   CK(cudaEventRecord(e, a));
		   CK(launch(k5, a));
		   CK(cudaStreamWaitEvent(b, e, 0));
		   CK(cudaLaunchHostFunc(b, stamp, (void *)0));
		   CK_ERR(cudaEventQuery(e), cudaErrorNotReady);
		   t = thread_cpu_ms();
		   CK(cudaEventSynchronize(e));
		   WITHIN(thread_cpu_ms() - t, 0.0, 2.0); /* slept */
		   WITHIN(now_ms() - t0, 10.0, 14.0);
		   CK(cudaEventQuery(e));
		   CK(cudaStreamSynchronize(b));
		   WITHIN(stamps[0], 10.0, 14.0); /* after the event, not after k5 */
		   CK(cudaStreamSynchronize(a));
		   WITHIN(now_ms() - t0, 15.0, 20.0));

	/* waiting on an event recorded later does not wait for later work */
	TRY_TIMING(reset_stamps();
		   CK(cudaEventRecord(e, a));
		   CK(launch(k10, a));
		   CK(cudaStreamWaitEvent(b, e, 0));
		   CK(cudaLaunchHostFunc(b, stamp, (void *)0));
		   CK(cudaStreamSynchronize(b));
		   WITHIN(stamps[0], 0.0, 3.0);
		   CK(cudaDeviceSynchronize()));

	CK_ERR(cudaStreamWaitEvent(b, e, 0x10), cudaErrorInvalidValue);
	CK_ERR(cudaEventCreateWithFlags(&never, 0x100), cudaErrorInvalidValue);
	CK(cudaEventDestroy(e));
	CK_ERR(cudaEventRecord(e, a), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaEventQuery(e), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaEventSynchronize(e), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaStreamWaitEvent(b, e, 0), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaEventDestroy(e), cudaErrorInvalidResourceHandle);
	CK(cudaStreamDestroy(a));
	CK(cudaStreamDestroy(b));
	cudaGetLastError();
}

static void test_sync_blocks(void **state)
{
	cudaStream_t s;
	cudaEvent_t e;
	double cpu;

	(void)state;
	CK(cudaStreamCreate(&s));
	CK(cudaEventCreate(&e));
	TRY_TIMING(reset_stamps();
		   CK(launch(k10, s));
		   WITHIN(now_ms() - t0, 0.0, 2.0); /* launches are asynchronous */
		   cpu = thread_cpu_ms();
		   CK(cudaDeviceSynchronize());
		   WITHIN(now_ms() - t0, 10.0, 14.0);
		   CK(launch(k10, s));
		   CK(cudaStreamSynchronize(s));
		   WITHIN(now_ms() - t0, 20.0, 26.0);
		   CK(launch(k10, s));
		   CK(cudaEventRecord(e, s));
		   CK(cudaEventSynchronize(e));
		   WITHIN(now_ms() - t0, 30.0, 38.0);
		   WITHIN(thread_cpu_ms() - cpu, 0.0, 3.0)); /* off-CPU all along */
	CK(cudaEventDestroy(e));
	CK(cudaStreamDestroy(s));
}

static void test_invalid_handles(void **state)
{
	cudaStream_t s, garbage = (cudaStream_t)(uintptr_t)0xdead0000;
	unsigned flags = 7;
	int prio = 1, dev = -1;
	char *d;

	(void)state;
	CK(cudaMalloc((void **)&d, 64));
	CK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, -3));
	CK(cudaStreamGetFlags(s, &flags));
	assert_int_equal(flags, cudaStreamNonBlocking);
	CK(cudaStreamGetPriority(s, &prio));
	assert_int_equal(prio, -3);
	CK(cudaStreamGetDevice(s, &dev));
	assert_int_equal(dev, 0);
	CK(cudaStreamDestroy(s));
	CK_ERR(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaStreamQuery(s), cudaErrorInvalidResourceHandle);
	CK_ERR(launch(k2, s), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaMemcpyAsync(d, d, 8, cudaMemcpyDeviceToDevice, s), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaMemsetAsync(d, 0, 8, s), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaStreamDestroy(s), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaStreamSynchronize(garbage), cudaErrorInvalidResourceHandle);
	CK_ERR(launch(k2, garbage), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaEventRecord((cudaEvent_t)garbage, NULL), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaStreamDestroy(NULL), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaStreamCreateWithFlags(&s, 0x8), cudaErrorInvalidValue);
	CK_ERR(cudaStreamCreate(NULL), cudaErrorInvalidValue);
	CK_ERR(cudaLaunchKernel(NULL, one, one, NULL, 0, NULL), cudaErrorInvalidDeviceFunction);
	CK_ERR(cudaLaunchKernel((const void *)k2, (dim3){ 0, 1, 1 }, one, NULL, 0, NULL), cudaErrorInvalidConfiguration);
	CK_ERR(cudaLaunchKernel((const void *)k2, one, (dim3){ 1025, 1, 1 }, NULL, 0, NULL), cudaErrorInvalidConfiguration);
	CK_ERR(cudaLaunchKernelExC(NULL, (const void *)k2, NULL), cudaErrorInvalidValue);
	CK_ERR(cudaLaunchHostFunc(NULL, NULL, NULL), cudaErrorInvalidValue);
	CK(cudaFree(d));
	cudaGetLastError();
}

static int done_flag;

static void set_flag(void *arg)
{
	(void)arg;
	__atomic_store_n(&done_flag, 1, __ATOMIC_SEQ_CST);
}

static void callback(cudaStream_t s, cudaError_t st, void *arg)
{
	(void)s;
	(void)st;
	*(int *)arg += 1;
}

static void test_destroy_pending(void **state)
{
	cudaStream_t s;
	int calls = 0;

	(void)state;
	TRY_TIMING(CK(cudaStreamCreate(&s));
		   done_flag = 0;
		   calls = 0;
		   reset_stamps();
		   CK(launch(k10, s));
		   CK(cudaStreamAddCallback(s, callback, &calls, 0));
		   CK(cudaLaunchHostFunc(s, set_flag, NULL));
		   CK(cudaStreamDestroy(s)); /* returns at once; the work still runs */
		   WITHIN(now_ms() - t0, 0.0, 3.0);
		   assert_int_equal(__atomic_load_n(&done_flag, __ATOMIC_SEQ_CST), 0);
		   CK(cudaDeviceSynchronize());
		   WITHIN(now_ms() - t0, 10.0, 14.0);
		   assert_int_equal(__atomic_load_n(&done_flag, __ATOMIC_SEQ_CST), 1);
		   assert_int_equal(calls, 1));
}

/* ---- many host threads ------------------------------------------------------------ */
static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg, i;
	unsigned char h[4096], back[4096];
	cudaStream_t s;
	cudaEvent_t e;
	void *d;

	if (cudaStreamCreate(&s) || cudaEventCreate(&e) || cudaMalloc(&d, sizeof(h)))
		return (void *)1;
	for (i = 0; i < 100; i++) {
		memset(h, id * 31 + i, sizeof(h));
		if (cudaMemcpyAsync(d, h, sizeof(h), cudaMemcpyHostToDevice, s) ||
		    cudaLaunchKernel((const void *)k2, one, one, NULL, 0, s) || cudaEventRecord(e, s) ||
		    cudaMemcpyAsync(back, d, sizeof(back), cudaMemcpyDeviceToHost, s) || cudaStreamSynchronize(s) ||
		    cudaEventQuery(e) || memcmp(h, back, sizeof(h)))
			return (void *)2;
		if (i % 10 == 0 && (launch_ptsz(k2, NULL) || cudaStreamSynchronize_ptsz(NULL)))
			return (void *)3;
	}
	if (cudaFree(d) || cudaEventDestroy(e) || cudaStreamDestroy(s))
		return (void *)4;
	return NULL;
}

static void test_threads(void **state)
{
	pthread_t t[6];
	void *r;
	int i;

	(void)state;
	setenv("SIMGPU_KERNEL_TIMES", "", 1); /* no effect: read once at start */
	for (i = 0; i < 6; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i), 0);
	for (i = 0; i < 6; i++) {
		pthread_join(t[i], &r);
		assert_null(r);
	}
	CK(cudaDeviceSynchronize());
	CK(cudaGetLastError());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order),
		cmocka_unit_test(test_streams_concurrent),
		cmocka_unit_test(test_legacy_stream),
		cmocka_unit_test(test_per_thread_stream),
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_sync_blocks),
		cmocka_unit_test(test_invalid_handles),
		cmocka_unit_test(test_destroy_pending),
		cmocka_unit_test(test_threads),
	};

	setenv("SIMGPU_DEVICES", "1", 1);
	setenv("SIMGPU_DEVICE_MEM_MB", "256", 1);
	setenv("SIMGPU_KERNEL_US", "1000", 1);
	setenv("SIMGPU_KERNEL_TIMES", "k2=2000,k5=5000,k10=10000", 1);
	unsetenv("SIMGPU_LAUNCH_US");
	unsetenv("SIMGPU_INIT_ERROR");
	unsetenv("SIMGPU_LOG");
	return cmocka_run_group_tests_name("simgpu streams", tests, NULL, NULL);
}
