/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_simgpu_timing.c — the timing model: copy durations per path
 * (pinned / pageable, each direction, device to device, memset), kernel
 * durations (default, per name, mangled and plain), no drift over many
 * back-to-back operations, event timings, the thread's clock of its calls
 * (simgpu_call_clock), and that synchronisation blocks off-CPU while async calls return at once.
 * Bandwidths are set low so that durations are milliseconds.
 *
 * Durations are checked exactly on the model's timestamps (simgpu.h): each
 * item's modelled end less its start, event times with a gate holding the
 * stream while the host queues. Host waits are checked never to return
 * before the modelled end.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "simgpu_test.h"
#include "gpu_model.h"

#define MB (1000 * 1000)

/* kernels of a gcc-built program are host functions found by dladdr() */
void slow_kernel(void);
void slow_kernel(void)
{
}
void _Z4fastv(void);
void _Z4fastv(void)
{
}
void default_kernel(void);
void default_kernel(void)
{
}

static char *dev, *pinned, *pageable;

static int setup(void **state)
{
	(void)state;
	if (cudaMalloc((void **)&dev, 64 * MB) || cudaMallocHost((void **)&pinned, 64 * MB))
		return -1;
	pageable = malloc(64 * MB);
	memset(pageable, 1, 64 * MB);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	cudaFree(dev);
	cudaFreeHost(pinned);
	free(pageable);
	return 0;
}

/*
 * A synchronous copy or memset: the item it queued lasts exactly want_ns, it started no
 * earlier than the call, and the call returned no earlier than its end. A synchronous copy
 * from pageable memory is ready from the call's start (its staging overlaps the transfer):
 * it ends at start + want_ns, or when it was queued if the staging took longer.
 */
#define SYNC_TIMED(want_ns, call)                                                       \
	do {                                                                            \
		uint64_t st_t0_ = now_ns(), st_t1_;                                     \
		void *st_op_ = QUEUED(call);                                            \
		struct simgpu_times st_ = op_done(st_op_);                              \
                                                                                        \
		st_t1_ = now_ns();                                                      \
		ASSERT_NS_GE(st_.start_ns, st_t0_);                                     \
		ASSERT_NS_GE(st_t1_, st_.end_ns);                                       \
		if (st_.start_ns < st_.enq_ns && st_.start_ns + (want_ns) < st_.enq_ns) \
			ASSERT_NS(st_.end_ns, st_.enq_ns);                              \
		else                                                                    \
			ASSERT_NS(st_.end_ns - st_.start_ns, (uint64_t)(want_ns));      \
	} while (0)

/* Bandwidths stay far below the host's own memcpy speed, which the
 * simulator cannot beat: it really moves the bytes. */
static void test_copy_paths(void **state)
{
	(void)state;
	/* HtoD pinned 2 GB/s: 20 MB = 10 ms; pageable 1 GB/s: 10 MB = 10 ms */
	SYNC_TIMED(10 * MS_NS, cudaMemcpy(dev, pinned, 20 * MB, cudaMemcpyHostToDevice));
	SYNC_TIMED(10 * MS_NS, cudaMemcpy(dev, pageable, 10 * MB, cudaMemcpyHostToDevice));
	/* DtoH pinned 1.5 GB/s: 12 MB = 8 ms; pageable 0.5 GB/s: 4 MB = 8 ms */
	SYNC_TIMED(8 * MS_NS, cudaMemcpy(pinned, dev, 12 * MB, cudaMemcpyDeviceToHost));
	SYNC_TIMED(8 * MS_NS, cudaMemcpy(pageable, dev, 4 * MB, cudaMemcpyDeviceToHost));
	/* cudaMemcpyDefault infers the same paths */
	SYNC_TIMED(8 * MS_NS, cudaMemcpy(pageable, dev, 4 * MB, cudaMemcpyDefault));
	SYNC_TIMED(10 * MS_NS, cudaMemcpy(dev, pinned, 20 * MB, cudaMemcpyDefault));
	/* DtoD 1 GB/s: 4 MB = 4 ms (within one allocation) */
	SYNC_TIMED(4 * MS_NS, cudaMemcpy(dev, dev + 32 * MB, 4 * MB, cudaMemcpyDeviceToDevice));
	SYNC_TIMED(4 * MS_NS, cudaMemcpy(dev + 32 * MB, dev, 4 * MB, cudaMemcpyDefault));
	/* memset 0.8 GB/s: 4.8 MB = 6 ms */
	SYNC_TIMED(6 * MS_NS, cudaMemset(dev, 0, 4800 * 1000));
	/* 2D: width x height bytes, pinned: 400 rows of 50 KB = 20 MB = 10 ms */
	SYNC_TIMED(10 * MS_NS,
		   cudaMemcpy2D(dev, 65536, pinned, 65536, 50 * 1000, 400, cudaMemcpyHostToDevice));
	assert_int_equal(sg_copy_ns(SG_PATH_HTOD_PINNED, 2000), 1000);
}

static void test_async_returns_sync_blocks(void **state)
{
	struct simgpu_times a, b;
	struct gate gate;
	struct opener o;
	struct span sp;
	cudaStream_t s;
	void *g, *op[2];

	(void)state;
	CK(cudaStreamCreate(&s));
	g = gate_queue(&gate, s);
	/* they return while the stream is held */
	/* 10 ms each */
	op[0] = QUEUED(cudaMemcpyAsync(dev, pinned, 20 * MB, cudaMemcpyHostToDevice, s));
	op[1] = QUEUED(cudaMemcpyAsync(pinned, dev, 15 * MB, cudaMemcpyDeviceToHost, s));
	CK_ERR(cudaStreamQuery(s), cudaErrorNotReady);
	gate_open_when_blocked(&o, &gate);
	span_begin(&sp);
	CK(cudaStreamSynchronize(s));
	span_end(&sp);
	opener_join(&o);
	a = op_done(op[0]);
	b = op_done(op[1]);
	ASSERT_NS(a.start_ns, op_done(g).end_ns);
	ASSERT_NS(a.end_ns - a.start_ns, 10 * MS_NS);
	ASSERT_NS(b.start_ns, a.end_ns);
	ASSERT_NS(b.end_ns - b.start_ns, 10 * MS_NS);
	ASSERT_NS_GE(now_ns(), b.end_ns);
	/* sleeping, not spinning */
	ASSERT_SLEPT(&sp);
	CK(cudaStreamQuery(s));
	CK(cudaStreamDestroy(s));
}

static void launch1(const void *k)
{
	CK(cudaLaunchKernel(k, (dim3){ 1, 1, 1 }, (dim3){ 32, 1, 1 }, NULL, 0, NULL));
}

static void test_kernel_durations(void **state)
{
	struct simgpu_times k1, k2;
	cudaEvent_t a, b;
	struct gate gate;
	float ms = 0;
	void *g, *op[2];
	int i;

	(void)state;
	assert_int_equal(sg_kernel_ns("slow_kernel"), 8000000);
	assert_int_equal(sg_kernel_ns("_Z4fastv"), 3000000);	   /* by its plain name */
	assert_int_equal(sg_kernel_ns("_Z4slowPfi"), 4000000);	   /* by its mangled name */
	assert_int_equal(sg_kernel_ns("_ZN2ns4slowEv"), 2000000);  /* qualified plain name */
	assert_int_equal(sg_kernel_ns("_ZN3foo4fastEv"), 3000000); /* last component */
	assert_int_equal(sg_kernel_ns("other"), 1000000);	   /* SIMGPU_KERNEL_US */
	{
		char buf[64];

		sg_plain_name("_Z4fillIfEvPT_S0_i", buf, sizeof(buf));
		assert_string_equal(buf, "fill");
		sg_plain_name("_ZNK2ns5Inner3runEv", buf, sizeof(buf));
		assert_string_equal(buf, "ns::Inner::run");
		sg_plain_name("plain_c_kernel", buf, sizeof(buf));
		assert_string_equal(buf, "plain_c_kernel");
		sg_plain_name("_Z99x", buf, sizeof(buf));
		assert_string_equal(buf, "_Z99x");
	}

	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	g = gate_queue(&gate, NULL);
	CK(cudaEventRecord(a, NULL));
	launch1((const void *)slow_kernel);
	CK(cudaEventRecord(b, NULL));
	gate_open(&gate);
	CK(cudaEventSynchronize(b));
	ASSERT_NS_GE(now_ns(), event_time(b));
	ASSERT_NS(event_time(a), op_done(g).end_ns);
	ASSERT_NS(event_time(b) - event_time(a), 8 * MS_NS);
	CK(cudaEventElapsedTime(&ms, a, b));
	assert_true(ms == 8.0f);

	/* no drift: 20 back-to-back 1 ms kernels take 20 ms */
	g = gate_queue(&gate, NULL);
	CK(cudaEventRecord(a, NULL));
	for (i = 0; i < 20; i++)
		launch1((const void *)default_kernel);
	CK(cudaEventRecord(b, NULL));
	gate_open(&gate);
	CK(cudaDeviceSynchronize());
	ASSERT_NS(event_time(a), op_done(g).end_ns);
	ASSERT_NS(event_time(b) - event_time(a), 20 * MS_NS);
	CK(cudaEventElapsedTime(&ms, a, b));
	assert_true(ms == 20.0f);

	g = gate_queue(&gate, NULL);
	launch1((const void *)_Z4fastv);
	op[0] = last_op();
	launch1((const void *)_Z4fastv);
	op[1] = last_op();
	gate_open(&gate);
	CK(cudaDeviceSynchronize());
	k1 = op_done(op[0]);
	k2 = op_done(op[1]);
	ASSERT_NS(k1.start_ns, op_done(g).end_ns);
	ASSERT_NS(k1.end_ns - k1.start_ns, 3 * MS_NS);
	ASSERT_NS(k2.start_ns, k1.end_ns);
	ASSERT_NS(k2.end_ns - k2.start_ns, 3 * MS_NS);
	ASSERT_NS_GE(now_ns(), k2.end_ns);
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
}

static void test_event_timing_across_streams(void **state)
{
	cudaStream_t s1, s2;
	cudaEvent_t a, b, c;
	struct gate gate;
	float ms;
	void *g;

	(void)state;
	CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	CK(cudaEventCreateWithFlags(&c, cudaEventDisableTiming));
	g = gate_queue(&gate, s1);
	CK(cudaEventRecord(a, s1));
	CK(cudaLaunchKernel((const void *)slow_kernel, (dim3){ 1, 1, 1 }, (dim3){ 1, 1, 1 }, NULL,
			    0, s1));
	CK(cudaEventRecord(c, s1));
	CK(cudaStreamWaitEvent(s2, c, 0));
	CK(cudaLaunchKernel((const void *)_Z4fastv, (dim3){ 1, 1, 1 }, (dim3){ 1, 1, 1 }, NULL, 0,
			    s2));
	CK(cudaEventRecord(b, s2));
	CK_ERR(cudaEventElapsedTime(&ms, a, b), cudaErrorNotReady);
	gate_open(&gate);
	CK(cudaEventSynchronize(b));
	ASSERT_NS(event_time(a), op_done(g).end_ns);
	ASSERT_NS(event_time(c) - event_time(a), 8 * MS_NS);
	ASSERT_NS(event_time(b) - event_time(c), 3 * MS_NS);
	CK(cudaEventElapsedTime(&ms, a, b));
	assert_true(ms == 11.0f); /* 8 ms on s1, then 3 ms on s2 */
	CK_ERR(cudaEventElapsedTime(&ms, a, c), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaEventElapsedTime(NULL, a, b), cudaErrorInvalidValue);
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
	CK(cudaEventDestroy(c));
	CK(cudaStreamDestroy(s1));
	CK(cudaStreamDestroy(s2));
	cudaGetLastError();
}

static uint64_t mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The thread's clock of its calls: read inside the call (between the caller's reads around it), started over. */
static void test_call_clock(void **state)
{
	struct simgpu_call_clock c;
	uint64_t t0, t1;

	(void)state;
	simgpu_call_clock(&c); /* whatever setup left */
	assert_int_equal(simgpu_call_clock(&c), -ENODATA);
	assert_true(c.first_ns == 0 && c.last_ns == 0);
	t0 = mono_now();
	CK(cudaMemcpy(dev, pageable, 1 * MB,
		      cudaMemcpyHostToDevice)); /* the runtime calls the driver */
	t1 = mono_now();
	assert_int_equal(simgpu_call_clock(&c), 0);
	assert_true(t0 <= c.first_ns && c.first_ns < c.last_ns && c.last_ns <= t1);
	/* the copy's modelled time (1 MB at 1 GB/s: 1 ms) lies between the two reads */
	assert_true(c.last_ns - c.first_ns >= 1000000);
	assert_int_equal(simgpu_call_clock(&c), -ENODATA);
	assert_int_equal(simgpu_call_clock(NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_paths),
		cmocka_unit_test(test_async_returns_sync_blocks),
		cmocka_unit_test(test_kernel_durations),
		cmocka_unit_test(test_event_timing_across_streams),
		cmocka_unit_test(test_call_clock),
	};

	setenv("SIMGPU_DEVICES", "1", 1);
	setenv("SIMGPU_DEVICE_MEM_MB", "1024", 1);
	setenv("SIMGPU_BW_HTOD_PINNED_GBPS", "2", 1);
	setenv("SIMGPU_BW_HTOD_PAGEABLE_GBPS", "1", 1);
	setenv("SIMGPU_BW_DTOH_PINNED_GBPS", "1.5", 1);
	setenv("SIMGPU_BW_DTOH_PAGEABLE_GBPS", "0.5", 1);
	setenv("SIMGPU_BW_DTOD_GBPS", "1", 1);
	setenv("SIMGPU_BW_MEMSET_GBPS", "0.8", 1);
	setenv("SIMGPU_COPY_LATENCY_US", "0", 1);
	setenv("SIMGPU_KERNEL_US", "1000", 1);
	setenv("SIMGPU_KERNEL_TIMES", "slow_kernel=8000,fast=3000,_Z4slowPfi=4000,ns::slow=2000",
	       1);
	setenv("SIMGPU_LAUNCH_US", "0", 1);
	unsetenv("SIMGPU_INIT_ERROR");
	unsetenv("SIMGPU_LOG");
	return cmocka_run_group_tests_name("simgpu timing", tests, setup, teardown);
}
