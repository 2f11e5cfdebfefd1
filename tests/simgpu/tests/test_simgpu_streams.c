/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_simgpu_streams.c — stream semantics: in-order execution per stream,
 * concurrency between streams, the legacy default stream's implicit
 * synchronisation with blocking streams (and not with non-blocking ones),
 * per-thread default streams, events across streams, blocking sync calls,
 * invalid handles, stream destruction with pending work, callbacks, and
 * many host threads using the simulator at once.
 * Kernels: k2 = 2 ms, k5 = 5 ms, k10 = 10 ms.
 *
 * Times are the model's (simgpu.h), exact: a gate holds the stream while the
 * host queues, so that each item starts at the modelled end of what it waits
 * for. "Does not wait" is shown against a gated stream, which cannot make
 * progress until the test opens its gate; a host wait never returns before
 * the modelled end it waits for.
 */
#include <pthread.h>
#include <string.h>

#include "simgpu_test.h"
#include "gpu_model.h"

void k2(void);
void k2(void)
{
}
void k5(void);
void k5(void)
{
}
void k10(void);
void k10(void)
{
}

static const dim3 one = { 1, 1, 1 };

static cudaError_t launch(void (*k)(void), cudaStream_t s)
{
	return cudaLaunchKernel((const void *)k, one, one, NULL, 0, s);
}

static cudaError_t launch_ptsz(void (*k)(void), cudaStream_t s)
{
	return cudaLaunchKernel_ptsz((const void *)k, one, one, NULL, 0, s);
}

/* Host functions stamp the host time they ran at. */
static uint64_t stamps[16];
static int order[16], norder;
static pthread_mutex_t stamp_mu = PTHREAD_MUTEX_INITIALIZER;

static void stamp(void *arg)
{
	int i = (int)(intptr_t)arg;

	pthread_mutex_lock(&stamp_mu);
	stamps[i] = now_ns();
	order[norder++] = i;
	pthread_mutex_unlock(&stamp_mu);
}

static void reset_stamps(void)
{
	memset(stamps, 0, sizeof(stamps));
	norder = 0;
}

/* A host function item: modelled from when its worker ran it to when it returned. */
static void check_stamp(const struct simgpu_times *h, int i)
{
	if (stamps[i] < h->start_ns || stamps[i] > h->end_ns)
		fail_msg("host function %d ran at %.6f ms, outside its modelled [%.6f, %.6f] ms", i,
			 stamps[i] / 1e6, h->start_ns / 1e6, h->end_ns / 1e6);
}

static void check_kernel(const struct simgpu_times *k, uint64_t start, uint64_t dur)
{
	ASSERT_NS(k->start_ns, start);
	ASSERT_NS(k->end_ns - k->start_ns, dur);
}

static void test_in_order(void **state)
{
	struct simgpu_times g, h0, a, h1, b, c, h2;
	void *op[7];
	struct gate gate;
	cudaStream_t s;

	(void)state;
	CK(cudaStreamCreate(&s));
	reset_stamps();
	op[0] = gate_queue(&gate, s);
	op[1] = QUEUED(cudaLaunchHostFunc(s, stamp, (void *)0));
	op[2] = QUEUED(launch(k5, s));
	op[3] = QUEUED(cudaLaunchHostFunc(s, stamp, (void *)1));
	op[4] = QUEUED(launch(k2, s));
	op[5] = QUEUED(launch(k2, s));
	op[6] = QUEUED(cudaLaunchHostFunc(s, stamp, (void *)2));
	gate_open(&gate);
	CK(cudaStreamSynchronize(s));
	assert_int_equal(norder, 3);
	assert_int_equal(order[0], 0);
	assert_int_equal(order[1], 1);
	assert_int_equal(order[2], 2);
	g = op_done(op[0]);
	h0 = op_done(op[1]);
	a = op_done(op[2]);
	h1 = op_done(op[3]);
	b = op_done(op[4]);
	c = op_done(op[5]);
	h2 = op_done(op[6]);
	/* each item starts at the modelled end of the one before it */
	ASSERT_NS(h0.start_ns, g.end_ns);
	check_stamp(&h0, 0);
	check_kernel(&a, h0.end_ns, 5 * MS_NS);
	ASSERT_NS(h1.start_ns, a.end_ns);
	check_stamp(&h1, 1);
	check_kernel(&b, h1.end_ns, 2 * MS_NS);
	check_kernel(&c, b.end_ns, 2 * MS_NS);
	ASSERT_NS(h2.start_ns, c.end_ns);
	check_stamp(&h2, 2);
	CK(cudaStreamDestroy(s));
}

static void test_streams_concurrent(void **state)
{
	struct simgpu_times ka, kb;
	cudaStream_t a, b;
	struct gate gate;
	void *ga, *opa, *opb;
	uint64_t t;

	(void)state;
	CK(cudaStreamCreate(&a));
	CK(cudaStreamCreate(&b));
	/* b's kernel runs and ends while a's cannot start */
	ga = gate_queue(&gate, a);
	opa = QUEUED(launch(k10, a));
	opb = QUEUED(launch(k10, b));
	CK(cudaStreamSynchronize(b));
	t = now_ns();
	assert_false(gate_opened(&gate));
	CK_ERR(cudaStreamQuery(a), cudaErrorNotReady);
	kb = op_done(opb);
	check_kernel(&kb, kb.enq_ns, 10 * MS_NS);
	ASSERT_NS_GE(t, kb.end_ns);
	gate_open(&gate);
	CK(cudaDeviceSynchronize());
	ka = op_done(opa);
	check_kernel(&ka, op_done(ga).end_ns, 10 * MS_NS);
	CK(cudaStreamDestroy(a));
	CK(cudaStreamDestroy(b));
}

static void test_legacy_stream(void **state)
{
	struct simgpu_times kb, kl, h0, h1, h2, cp;
	cudaStream_t blk, blk2, nb;
	void *op[6];
	struct gate gate;

	(void)state;
	CK(cudaStreamCreate(&blk));
	CK(cudaStreamCreate(&blk2));
	CK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));

	/* legacy work waits for earlier blocking work; later blocking work
	 * waits for the legacy work; non-blocking streams take no part */
	reset_stamps();
	op[0] = gate_queue(&gate, blk);
	op[1] = QUEUED(launch(k10, blk));
	op[2] = QUEUED(launch(k2, NULL));
	op[3] = QUEUED(cudaLaunchHostFunc(NULL, stamp, (void *)0));
	op[4] = QUEUED(cudaLaunchHostFunc(blk2, stamp, (void *)1));
	op[5] = QUEUED(cudaLaunchHostFunc(nb, stamp, (void *)2));
	CK(cudaStreamSynchronize(nb));
	assert_false(gate_opened(&gate));
	h2 = op_done(op[5]);
	check_stamp(&h2, 2);
	assert_int_equal(norder, 1);
	gate_open(&gate);
	CK(cudaDeviceSynchronize());
	kb = op_done(op[1]);
	check_kernel(&kb, op_done(op[0]).end_ns, 10 * MS_NS);
	kl = op_done(op[2]);
	check_kernel(&kl, kb.end_ns, 2 * MS_NS);
	h0 = op_done(op[3]);
	ASSERT_NS(h0.start_ns, kl.end_ns);
	check_stamp(&h0, 0);
	h1 = op_done(op[4]);
	ASSERT_NS(h1.start_ns, h0.end_ns);
	check_stamp(&h1, 1);

	/* the legacy stream does not wait for non-blocking streams */
	op[0] = gate_queue(&gate, nb);
	op[1] = QUEUED(launch(k10, nb));
	op[2] = QUEUED(launch(k2, cudaStreamLegacy));
	CK(cudaStreamSynchronize(NULL));
	assert_false(gate_opened(&gate));
	CK_ERR(cudaStreamQuery(nb), cudaErrorNotReady);
	kl = op_done(op[2]);
	check_kernel(&kl, kl.enq_ns, 2 * MS_NS);
	gate_open(&gate);
	CK(cudaStreamSynchronize(nb));
	op_done(op[0]);
	op_done(op[1]);

	/* synchronising the legacy stream waits for blocking streams */
	op[0] = QUEUED(launch(k5, blk));
	CK(cudaStreamSynchronize(NULL));
	kb = op_done(op[0]);
	ASSERT_NS_GE(now_ns(), kb.end_ns);

	/* a synchronous copy is legacy-stream work: it waits for blk */
	{
		struct opener o;
		char *d, h[64];

		CK(cudaMalloc((void **)&d, 64));
		op[0] = gate_queue(&gate, blk);
		op[1] = QUEUED(launch(k10, blk));
		gate_open_when_blocked(&o, &gate);
		op[2] = QUEUED(cudaMemcpy(h, d, 64, cudaMemcpyDeviceToHost));
		opener_join(&o);
		op_done(op[0]);
		kb = op_done(op[1]);
		cp = op_done(op[2]);
		ASSERT_NS(cp.start_ns, kb.end_ns);
		ASSERT_NS(cp.end_ns - cp.start_ns, sg_copy_ns(SG_PATH_DTOH_PAGEABLE, 64));
		ASSERT_NS_GE(now_ns(), cp.end_ns);
		/* ... but not for a non-blocking stream */
		op[0] = gate_queue(&gate, nb);
		op[1] = QUEUED(launch(k10, nb));
		op[2] = QUEUED(cudaMemcpy(h, d, 64, cudaMemcpyDeviceToHost));
		assert_false(gate_opened(&gate));
		cp = op_done(op[2]);
		ASSERT_NS(cp.start_ns, cp.enq_ns);
		gate_open(&gate);
		CK(cudaDeviceSynchronize());
		op_done(op[0]);
		op_done(op[1]);
		CK(cudaFree(d));
	}
	CK(cudaStreamDestroy(blk));
	CK(cudaStreamDestroy(blk2));
	CK(cudaStreamDestroy(nb));
}

/* Per-thread default streams of two threads: the first holds its stream with a gate. */
static struct {
	struct gate gate;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int queued;
	struct simgpu_times g, k;
} pt = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static void *ptds_gated(void *arg)
{
	void *g, *k;

	(void)arg;
	gate_init(&pt.gate);
	if (cudaLaunchHostFunc_ptsz(NULL, gate_fn, &pt.gate) || !(g = simgpu_op_last()))
		return (void *)1;
	if (launch_ptsz(k10, NULL) || !(k = simgpu_op_last()))
		return (void *)2;
	pthread_mutex_lock(&pt.mu);
	pt.queued = 1;
	pthread_cond_signal(&pt.cv);
	pthread_mutex_unlock(&pt.mu);
	if (cudaStreamSynchronize_ptsz(NULL) || simgpu_op_times(g, &pt.g) ||
	    simgpu_op_times(k, &pt.k))
		return (void *)3;
	simgpu_op_put(g);
	simgpu_op_put(k);
	return NULL;
}

static void *ptds_free(void *arg)
{
	struct simgpu_times *t = arg;
	void *k;

	if (launch_ptsz(k10, NULL) || !(k = simgpu_op_last()) || cudaStreamSynchronize_ptsz(NULL) ||
	    simgpu_op_times(k, t))
		return (void *)1;
	simgpu_op_put(k);
	return NULL;
}

static void test_per_thread_stream(void **state)
{
	struct simgpu_times kt, kl, kp, h0, h1, h;
	struct gate gate;
	pthread_t t[2];
	void *r, *op[5];

	(void)state;
	/* per-thread default streams of two threads run concurrently: the second thread's
	 * kernel ends while the first thread's stream is held */
	pt.queued = 0;
	assert_int_equal(pthread_create(&t[0], NULL, ptds_gated, NULL), 0);
	pthread_mutex_lock(&pt.mu);
	while (!pt.queued)
		pthread_cond_wait(&pt.cv, &pt.mu);
	pthread_mutex_unlock(&pt.mu);
	assert_int_equal(pthread_create(&t[1], NULL, ptds_free, &kt), 0);
	pthread_join(t[1], &r);
	assert_null(r);
	assert_false(gate_opened(&pt.gate));
	check_kernel(&kt, kt.enq_ns, 10 * MS_NS);
	gate_open(&pt.gate);
	pthread_join(t[0], &r);
	assert_null(r);
	check_kernel(&pt.k, pt.g.end_ns, 10 * MS_NS);

	/* they are blocking streams: they wait for the legacy stream */
	reset_stamps();
	op[0] = gate_queue(&gate, NULL);
	op[1] = QUEUED(launch(k10, NULL));
	op[2] = QUEUED(launch_ptsz(k2, NULL));
	op[3] = QUEUED(cudaLaunchHostFunc_ptsz(NULL, stamp, (void *)0));
	op[4] = QUEUED(cudaLaunchHostFunc(cudaStreamPerThread, stamp, (void *)1));
	gate_open(&gate);
	CK(cudaStreamSynchronize_ptsz(NULL));
	kl = op_done(op[1]);
	check_kernel(&kl, op_done(op[0]).end_ns, 10 * MS_NS);
	kp = op_done(op[2]);
	check_kernel(&kp, kl.end_ns, 2 * MS_NS);
	h0 = op_done(op[3]);
	ASSERT_NS(h0.start_ns, kp.end_ns);
	check_stamp(&h0, 0);
	h1 = op_done(op[4]);
	ASSERT_NS(h1.start_ns, h0.end_ns); /* the same stream */
	check_stamp(&h1, 1);
	/* ... and the legacy stream waits for them */
	op[0] = gate_queue(&gate, cudaStreamPerThread);
	op[1] = QUEUED(launch_ptsz(k10, NULL));
	op[2] = QUEUED(cudaLaunchHostFunc(NULL, stamp, (void *)2));
	gate_open(&gate);
	CK(cudaStreamSynchronize(NULL));
	kp = op_done(op[1]);
	check_kernel(&kp, op_done(op[0]).end_ns, 10 * MS_NS);
	h = op_done(op[2]);
	ASSERT_NS(h.start_ns, kp.end_ns);
	check_stamp(&h, 2);
	CK(cudaMemcpy_ptds(stamps, stamps, 8, cudaMemcpyHostToHost));
}

static void test_events(void **state)
{
	struct simgpu_times k1, k2, w, h;
	cudaStream_t a, b;
	cudaEvent_t e, never;
	struct gate gate;
	struct opener o;
	struct span sp;
	void *op[5];
	uint64_t te;

	(void)state;
	CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
	CK(cudaEventCreateWithFlags(&e, cudaEventBlockingSync));
	CK(cudaEventCreate(&never));
	CK(cudaEventQuery(never)); /* never recorded: complete */
	CK(cudaEventSynchronize(never));
	assert_int_equal(simgpu_event_time(never, &te), -ENOENT);

	reset_stamps();
	op[0] = gate_queue(&gate, a);
	op[1] = QUEUED(launch(k10, a));
	CK(cudaEventRecord(e, a));
	op[2] = QUEUED(launch(k5, a));
	op[3] = QUEUED(cudaStreamWaitEvent(b, e, 0));
	op[4] = QUEUED(cudaLaunchHostFunc(b, stamp, (void *)0));
	CK_ERR(cudaEventQuery(e), cudaErrorNotReady);
	assert_int_equal(simgpu_event_time(e, &te), -EBUSY);
	gate_open_when_blocked(&o, &gate);
	span_begin(&sp);
	CK(cudaEventSynchronize(e));
	span_end(&sp);
	opener_join(&o);
	ASSERT_SLEPT(&sp);
	CK(cudaEventQuery(e));
	k1 = op_done(op[1]);
	check_kernel(&k1, op_done(op[0]).end_ns, 10 * MS_NS);
	te = event_time(e);
	ASSERT_NS(te, k1.end_ns);
	ASSERT_NS_GE(now_ns(), te);
	CK(cudaStreamSynchronize(b));
	w = op_done(op[3]);
	h = op_done(op[4]);
	ASSERT_NS(w.start_ns, te);
	ASSERT_NS(h.start_ns, te); /* after the event, not after k5 */
	check_stamp(&h, 0);
	CK(cudaStreamSynchronize(a));
	k2 = op_done(op[2]);
	check_kernel(&k2, te, 5 * MS_NS);
	ASSERT_NS_GE(now_ns(), k2.end_ns);

	/* waiting on an event recorded later does not wait for later work */
	reset_stamps();
	op[0] = gate_queue(&gate, a);
	CK(cudaEventRecord(e, a));
	op[1] = QUEUED(launch(k10, a));
	CK(cudaStreamWaitEvent(b, e, 0));
	op[2] = QUEUED(cudaLaunchHostFunc(b, stamp, (void *)0));
	gate_open(&gate);
	CK(cudaStreamSynchronize(b));
	te = event_time(e);
	ASSERT_NS(te, op_done(op[0]).end_ns);
	h = op_done(op[2]);
	ASSERT_NS(h.start_ns, te);
	check_stamp(&h, 0);
	CK(cudaDeviceSynchronize());
	k1 = op_done(op[1]);
	check_kernel(&k1, te, 10 * MS_NS);

	CK_ERR(cudaStreamWaitEvent(b, e, 0x10), cudaErrorInvalidValue);
	CK_ERR(cudaEventCreateWithFlags(&never, 0x100), cudaErrorInvalidValue);
	CK(cudaEventDestroy(e));
	assert_int_equal(simgpu_event_time(e, &te), -EINVAL);
	CK_ERR(cudaEventRecord(e, a), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaEventQuery(e), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaEventSynchronize(e), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaStreamWaitEvent(b, e, 0), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaEventDestroy(e), cudaErrorInvalidResourceHandle);
	CK(cudaStreamDestroy(a));
	CK(cudaStreamDestroy(b));
	cudaGetLastError();
}

/* Each synchronisation call blocks off-CPU until the kernel's modelled end. */
enum sync_kind { SYNC_DEVICE, SYNC_STREAM, SYNC_EVENT };

static void check_sync_blocks(cudaStream_t s, cudaEvent_t e, enum sync_kind kind)
{
	struct simgpu_times k;
	struct gate gate;
	struct opener o;
	struct span sp;
	void *g, *op;

	g = gate_queue(&gate, s);
	op = QUEUED(launch(k10, s)); /* returns while the stream is held: asynchronous */
	if (kind == SYNC_EVENT)
		CK(cudaEventRecord(e, s));
	CK_ERR(cudaStreamQuery(s), cudaErrorNotReady);
	gate_open_when_blocked(&o, &gate);
	span_begin(&sp);
	if (kind == SYNC_DEVICE)
		CK(cudaDeviceSynchronize());
	else if (kind == SYNC_STREAM)
		CK(cudaStreamSynchronize(s));
	else
		CK(cudaEventSynchronize(e));
	span_end(&sp);
	opener_join(&o);
	k = op_done(op);
	check_kernel(&k, op_done(g).end_ns, 10 * MS_NS);
	ASSERT_NS_GE(now_ns(), k.end_ns);
	ASSERT_SLEPT(&sp);
	if (kind == SYNC_EVENT)
		ASSERT_NS(event_time(e), k.end_ns);
}

static void test_sync_blocks(void **state)
{
	cudaStream_t s;
	cudaEvent_t e;

	(void)state;
	CK(cudaStreamCreate(&s));
	CK(cudaEventCreate(&e));
	check_sync_blocks(s, e, SYNC_DEVICE);
	check_sync_blocks(s, e, SYNC_STREAM);
	check_sync_blocks(s, e, SYNC_EVENT);
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
	CK_ERR(cudaMemcpyAsync(d, d, 8, cudaMemcpyDeviceToDevice, s),
	       cudaErrorInvalidResourceHandle);
	CK_ERR(cudaMemsetAsync(d, 0, 8, s), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaStreamDestroy(s), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaStreamSynchronize(garbage), cudaErrorInvalidResourceHandle);
	CK_ERR(launch(k2, garbage), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaEventRecord((cudaEvent_t)garbage, NULL), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaStreamDestroy(NULL), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaStreamCreateWithFlags(&s, 0x8), cudaErrorInvalidValue);
	CK_ERR(cudaStreamCreate(NULL), cudaErrorInvalidValue);
	CK_ERR(cudaLaunchKernel(NULL, one, one, NULL, 0, NULL), cudaErrorInvalidDeviceFunction);
	CK_ERR(cudaLaunchKernel((const void *)k2, (dim3){ 0, 1, 1 }, one, NULL, 0, NULL),
	       cudaErrorInvalidConfiguration);
	CK_ERR(cudaLaunchKernel((const void *)k2, one, (dim3){ 1025, 1, 1 }, NULL, 0, NULL),
	       cudaErrorInvalidConfiguration);
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
	struct simgpu_times k;
	struct gate gate;
	cudaStream_t s;
	void *g, *op;
	int calls = 0;

	(void)state;
	CK(cudaStreamCreate(&s));
	done_flag = 0;
	g = gate_queue(&gate, s);
	op = QUEUED(launch(k10, s));
	CK(cudaStreamAddCallback(s, callback, &calls, 0));
	CK(cudaLaunchHostFunc(s, set_flag, NULL));
	CK(cudaStreamDestroy(s)); /* returns at once, the stream held; the work still runs */
	assert_false(gate_opened(&gate));
	assert_int_equal(__atomic_load_n(&done_flag, __ATOMIC_SEQ_CST), 0);
	gate_open(&gate);
	CK(cudaDeviceSynchronize());
	k = op_done(op);
	check_kernel(&k, op_done(g).end_ns, 10 * MS_NS);
	assert_int_equal(__atomic_load_n(&done_flag, __ATOMIC_SEQ_CST), 1);
	assert_int_equal(calls, 1);
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
		    cudaLaunchKernel((const void *)k2, one, one, NULL, 0, s) ||
		    cudaEventRecord(e, s) ||
		    cudaMemcpyAsync(back, d, sizeof(back), cudaMemcpyDeviceToHost, s) ||
		    cudaStreamSynchronize(s) || cudaEventQuery(e) || memcmp(h, back, sizeof(h)))
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
		cmocka_unit_test(test_in_order),	cmocka_unit_test(test_streams_concurrent),
		cmocka_unit_test(test_legacy_stream),	cmocka_unit_test(test_per_thread_stream),
		cmocka_unit_test(test_events),		cmocka_unit_test(test_sync_blocks),
		cmocka_unit_test(test_invalid_handles), cmocka_unit_test(test_destroy_pending),
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
