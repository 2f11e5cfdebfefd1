/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_simgpu_timing.c — the timing model: copy durations per path
 * (pinned / pageable, each direction, device to device, memset), kernel
 * durations (default, per name, mangled and plain), no drift over many
 * back-to-back operations, event timings, and
 * that synchronisation blocks off-CPU while async calls return at once.
 * Bandwidths are set low so that durations are milliseconds.
 */
#include <string.h>

#include "simgpu_test.h"
#include "gpu_model.h"

#define MB (1000 * 1000)
#define TOL 0.15

/* kernels of a gcc-built program are host functions found by dladdr() */
void slow_kernel(void);
void slow_kernel(void) {}
void _Z4fastv(void);
void _Z4fastv(void) {}
void default_kernel(void);
void default_kernel(void) {}

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

/* Bandwidths stay far below the host's own memcpy speed, which the
 * simulator cannot beat: it really moves the bytes. */
static void test_copy_paths(void **state)
{
	(void)state;
	/* HtoD pinned 2 GB/s: 20 MB = 10 ms; pageable 1 GB/s: 10 MB = 10 ms */
	ASSERT_TIMED(10.0, TOL, CK(cudaMemcpy(dev, pinned, 20 * MB, cudaMemcpyHostToDevice)));
	ASSERT_TIMED(10.0, TOL, CK(cudaMemcpy(dev, pageable, 10 * MB, cudaMemcpyHostToDevice)));
	/* DtoH pinned 1.5 GB/s: 12 MB = 8 ms; pageable 0.5 GB/s: 4 MB = 8 ms */
	ASSERT_TIMED(8.0, TOL, CK(cudaMemcpy(pinned, dev, 12 * MB, cudaMemcpyDeviceToHost)));
	ASSERT_TIMED(8.0, TOL, CK(cudaMemcpy(pageable, dev, 4 * MB, cudaMemcpyDeviceToHost)));
	/* cudaMemcpyDefault infers the same paths */
	ASSERT_TIMED(8.0, TOL, CK(cudaMemcpy(pageable, dev, 4 * MB, cudaMemcpyDefault)));
	ASSERT_TIMED(10.0, TOL, CK(cudaMemcpy(dev, pinned, 20 * MB, cudaMemcpyDefault)));
	/* DtoD 1 GB/s: 2 x 4 MB = 8 ms (within one allocation) */
	ASSERT_TIMED(8.0, TOL, CK(cudaMemcpy(dev, dev + 32 * MB, 4 * MB, cudaMemcpyDeviceToDevice));
		     CK(cudaMemcpy(dev + 32 * MB, dev, 4 * MB, cudaMemcpyDefault)));
	/* memset 0.8 GB/s: 4.8 MB = 6 ms */
	ASSERT_TIMED(6.0, TOL, CK(cudaMemset(dev, 0, 4800 * 1000)));
	/* 2D: width x height bytes, pinned: 400 rows of 50 KB = 20 MB = 10 ms */
	ASSERT_TIMED(10.0, TOL, CK(cudaMemcpy2D(dev, 65536, pinned, 65536, 50 * 1000, 400, cudaMemcpyHostToDevice)));
	assert_int_equal(sg_copy_ns(SG_PATH_HTOD_PINNED, 2000), 1000);
}

static void test_async_returns_sync_blocks(void **state)
{
	cudaStream_t s;
	double t, cpu;

	(void)state;
	CK(cudaStreamCreate(&s));
	t = now_ms();
	CK(cudaMemcpyAsync(dev, pinned, 20 * MB, cudaMemcpyHostToDevice, s)); /* 10 ms */
	CK(cudaMemcpyAsync(pinned, dev, 15 * MB, cudaMemcpyDeviceToHost, s)); /* 10 ms */
	assert_true(now_ms() - t < 2.0);
	CK_ERR(cudaStreamQuery(s), cudaErrorNotReady);
	cpu = thread_cpu_ms();
	CK(cudaStreamSynchronize(s));
	ASSERT_BETWEEN(now_ms() - t, 20.0, 30.0);
	/* sleeping, not spinning */
	assert_true(thread_cpu_ms() - cpu < 2.0);
	CK(cudaStreamQuery(s));
	CK(cudaStreamDestroy(s));
}

static void test_kernel_durations(void **state)
{
	cudaEvent_t a, b;
	float ms = 0;
	int i;

	(void)state;
	assert_int_equal(sg_kernel_ns("slow_kernel"), 8000000);
	assert_int_equal(sg_kernel_ns("_Z4fastv"), 3000000);     /* by its plain name */
	assert_int_equal(sg_kernel_ns("_Z4slowPfi"), 4000000);   /* by its mangled name */
	assert_int_equal(sg_kernel_ns("_ZN2ns4slowEv"), 2000000); /* qualified plain name */
	assert_int_equal(sg_kernel_ns("_ZN3foo4fastEv"), 3000000); /* last component */
	assert_int_equal(sg_kernel_ns("other"), 1000000);        /* SIMGPU_KERNEL_US */
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
	ASSERT_TIMED(8.0, TOL, CK(cudaEventRecord(a, NULL));
		     CK(cudaLaunchKernel((const void *)slow_kernel, (dim3){ 1, 1, 1 }, (dim3){ 32, 1, 1 }, NULL, 0, NULL));
		     CK(cudaEventRecord(b, NULL)); CK(cudaEventSynchronize(b)));
	CK(cudaEventElapsedTime(&ms, a, b));
	ASSERT_NEAR(ms, 8.0, 0.02);

	/* no drift: 20 back-to-back 1 ms kernels take 20 ms */
	ASSERT_TIMED(20.0, TOL, CK(cudaEventRecord(a, NULL));
		     for (i = 0; i < 20; i++) CK(cudaLaunchKernel((const void *)default_kernel, (dim3){ 1, 1, 1 },
								  (dim3){ 1, 1, 1 }, NULL, 0, NULL));
		     CK(cudaEventRecord(b, NULL)); CK(cudaDeviceSynchronize()));
	CK(cudaEventElapsedTime(&ms, a, b));
	ASSERT_NEAR(ms, 20.0, 0.03);

	ASSERT_TIMED(6.0, TOL,
		     CK(cudaLaunchKernel((const void *)_Z4fastv, (dim3){ 1, 1, 1 }, (dim3){ 1, 1, 1 }, NULL, 0, NULL));
		     CK(cudaLaunchKernel((const void *)_Z4fastv, (dim3){ 1, 1, 1 }, (dim3){ 1, 1, 1 }, NULL, 0, NULL));
		     CK(cudaDeviceSynchronize()));
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
}

static void test_event_timing_across_streams(void **state)
{
	cudaStream_t s1, s2;
	cudaEvent_t a, b, c;
	float ms;

	(void)state;
	CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	CK(cudaEventCreateWithFlags(&c, cudaEventDisableTiming));
	CK(cudaEventRecord(a, s1));
	CK(cudaLaunchKernel((const void *)slow_kernel, (dim3){ 1, 1, 1 }, (dim3){ 1, 1, 1 }, NULL, 0, s1));
	CK(cudaEventRecord(c, s1));
	CK(cudaStreamWaitEvent(s2, c, 0));
	CK(cudaLaunchKernel((const void *)_Z4fastv, (dim3){ 1, 1, 1 }, (dim3){ 1, 1, 1 }, NULL, 0, s2));
	CK(cudaEventRecord(b, s2));
	CK_ERR(cudaEventElapsedTime(&ms, a, b), cudaErrorNotReady);
	CK(cudaEventSynchronize(b));
	CK(cudaEventElapsedTime(&ms, a, b));
	ASSERT_NEAR(ms, 11.0, 0.03); /* 8 ms on s1, then 3 ms on s2 */
	CK_ERR(cudaEventElapsedTime(&ms, a, c), cudaErrorInvalidResourceHandle);
	CK_ERR(cudaEventElapsedTime(NULL, a, b), cudaErrorInvalidValue);
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
	CK(cudaEventDestroy(c));
	CK(cudaStreamDestroy(s1));
	CK(cudaStreamDestroy(s2));
	cudaGetLastError();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_paths),
		cmocka_unit_test(test_async_returns_sync_blocks),
		cmocka_unit_test(test_kernel_durations),
		cmocka_unit_test(test_event_timing_across_streams),
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
	setenv("SIMGPU_KERNEL_TIMES", "slow_kernel=8000,fast=3000,_Z4slowPfi=4000,ns::slow=2000", 1);
	setenv("SIMGPU_LAUNCH_US", "0", 1);
	unsetenv("SIMGPU_INIT_ERROR");
	unsetenv("SIMGPU_LOG");
	return cmocka_run_group_tests_name("simgpu timing", tests, setup, teardown);
}
