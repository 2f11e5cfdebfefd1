/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_simgpu_env.c — knobs that are read once per process, each checked in
 * a forked child with its own environment: no device, an init error (no
 * driver), capacity, per-copy latency, host-side launch cost, queue depth,
 * and the SIMGPU_LOG call log (and its absence by default). The parent
 * process never calls the simulator.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "simgpu_test.h"

void env_kernel(void);
void env_kernel(void)
{
}

static const dim3 one = { 1, 1, 1 };

/* Runs fn in a child with env ("NAME=value" strings); returns its exit
 * status and what it wrote to stderr in out. */
static int run_child(const char *const *env, int (*fn)(void), char *out, size_t n)
{
	char path[] = "/tmp/simgpu-env-XXXXXX";
	int fd = mkstemp(path), status = -1;
	pid_t pid;
	ssize_t got;

	assert_true(fd >= 0);
	unlink(path);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		for (; *env; env++)
			putenv((char *)*env);
		dup2(fd, STDERR_FILENO);
		_exit(fn());
	}
	waitpid(pid, &status, 0);
	got = pread(fd, out, n - 1, 0);
	out[got > 0 ? got : 0] = '\0';
	close(fd);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fprintf(stderr, "child failed (status %#x):\n%s\n", status, out);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

#define CHILD_CHECK(cond)                                                          \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
			return 1;                                                  \
		}                                                                  \
	} while (0)

static int child_no_device(void)
{
	int n = 5;
	void *p;

	CHILD_CHECK(cudaGetDeviceCount(&n) == cudaErrorNoDevice);
	CHILD_CHECK(n == 0);
	CHILD_CHECK(cudaMalloc(&p, 16) == cudaErrorNoDevice);
	CHILD_CHECK(cudaSetDevice(0) == cudaErrorNoDevice);
	CHILD_CHECK(cudaGetLastError() == cudaErrorNoDevice);
	return 0;
}

static int child_no_driver(void)
{
	int n = 5, v = 1;
	void *p;

	CHILD_CHECK(cudaGetDeviceCount(&n) == cudaErrorInsufficientDriver);
	CHILD_CHECK(n == 0);
	CHILD_CHECK(cudaMalloc(&p, 16) == cudaErrorInsufficientDriver);
	CHILD_CHECK(cudaLaunchKernel((const void *)env_kernel, one, one, NULL, 0, NULL) ==
		    cudaErrorInsufficientDriver);
	CHILD_CHECK(cudaDeviceSynchronize() == cudaErrorInsufficientDriver);
	CHILD_CHECK(cudaDriverGetVersion(&v) == cudaSuccess && v == 0);
	CHILD_CHECK(cudaRuntimeGetVersion(&v) == cudaSuccess && v == 13000);
	CHILD_CHECK(!strcmp(cudaGetErrorName(cudaGetLastError()), "cudaErrorInsufficientDriver"));
	CHILD_CHECK(strstr(cudaGetErrorString(cudaErrorInsufficientDriver), "driver"));
	return 0;
}

static int child_init_error(void)
{
	void *p;

	CHILD_CHECK(cudaMalloc(&p, 16) == cudaErrorInitializationError);
	CHILD_CHECK(cudaFree(NULL) == cudaErrorInitializationError);
	return 0;
}

static int child_capacity(void)
{
	size_t fr, tot;
	void *p;
	int n;

	CHILD_CHECK(cudaGetDeviceCount(&n) == cudaSuccess && n == 3);
	CHILD_CHECK(cudaSetDevice(2) == cudaSuccess);
	CHILD_CHECK(cudaMemGetInfo(&fr, &tot) == cudaSuccess && tot == 3 * 1048576);
	CHILD_CHECK(cudaMalloc(&p, 3 * 1048576 + 1) == cudaErrorMemoryAllocation);
	CHILD_CHECK(cudaMalloc(&p, 3 * 1048576) == cudaSuccess);
	CHILD_CHECK(cudaMalloc(&p, 1) == cudaErrorMemoryAllocation);
	return 0;
}

static int child_latency(void)
{
	char *d, *h;
	int i;

	CHILD_CHECK(cudaMalloc((void **)&d, 4) == cudaSuccess);
	CHILD_CHECK(cudaMallocHost((void **)&h, 4) == cudaSuccess);
	/* 5 tiny copies from pinned memory, 2 ms of latency each (4 bytes add nothing at 25 GB/s),
	 * each modelled from when it was queued */
	for (i = 0; i < 5; i++) {
		uint64_t t0 = now_ns();
		struct simgpu_times t;
		void *op;

		CHILD_CHECK(cudaMemcpy(d, h, 4, cudaMemcpyHostToDevice) == cudaSuccess);
		op = simgpu_op_last();
		CHILD_CHECK(op && !simgpu_op_times(op, &t));
		simgpu_op_put(op);
		CHILD_CHECK(t.start_ns >= t0 && t.start_ns == t.enq_ns);
		CHILD_CHECK(t.end_ns - t.start_ns == 2 * MS_NS);
		CHILD_CHECK(now_ns() >= t.end_ns);
	}
	return 0;
}

static int child_launch_cost(void)
{
	cudaLaunchConfig_t cfg = { .gridDim = { 4, 1, 1 }, .blockDim = { 128, 1, 1 } };
	double t = now_ms(), cpu = thread_cpu_ms();
	int i;

	/* 10 launches at 500 us of CPU work each (the thread's CPU clock: a busy machine only
	 * stretches them on the wall clock), kernels of 10 us */
	for (i = 0; i < 5; i++)
		CHILD_CHECK(cudaLaunchKernel((const void *)env_kernel, one, one, NULL, 0, NULL) ==
			    cudaSuccess);
	for (i = 0; i < 5; i++)
		CHILD_CHECK(cudaLaunchKernelExC(&cfg, (const void *)env_kernel, NULL) ==
			    cudaSuccess);
	cpu = thread_cpu_ms() - cpu;
	t = now_ms() - t;
	/* spent once per launch: 5 ms, not 10 */
	if (cpu < 5.0 || cpu >= 10.0 || t < cpu) {
		fprintf(stderr, "10 launches: %.3f ms of CPU time (%.3f ms wall), want 5\n", cpu,
			t);
		return 1;
	}
	CHILD_CHECK(cudaDeviceSynchronize() == cudaSuccess);
	return 0;
}

static int child_queue_depth(void)
{
	struct simgpu_times k[3];
	void *op[3];
	int i;

	/* 5 ms kernels, at most 2 queued: the 3rd launch waits until the 1st ended */
	for (i = 0; i < 3; i++) {
		CHILD_CHECK(cudaLaunchKernel((const void *)env_kernel, one, one, NULL, 0, NULL) ==
			    cudaSuccess);
		CHILD_CHECK((op[i] = simgpu_op_last()) != NULL);
	}
	CHILD_CHECK(cudaDeviceSynchronize() == cudaSuccess);
	for (i = 0; i < 3; i++) {
		CHILD_CHECK(!simgpu_op_times(op[i], &k[i]));
		simgpu_op_put(op[i]);
		CHILD_CHECK(k[i].end_ns - k[i].start_ns == 5 * MS_NS);
	}
	CHILD_CHECK(k[2].enq_ns >= k[0].end_ns);
	CHILD_CHECK(k[1].start_ns == (k[1].enq_ns > k[0].end_ns ? k[1].enq_ns : k[0].end_ns));
	CHILD_CHECK(k[2].start_ns == (k[2].enq_ns > k[1].end_ns ? k[2].enq_ns : k[1].end_ns));
	CHILD_CHECK(now_ns() >= k[2].end_ns);
	return 0;
}

static int child_log(void)
{
	void *p;

	CHILD_CHECK(cudaMalloc(&p, 1000) == cudaSuccess);
	CHILD_CHECK(cudaLaunchKernel((const void *)env_kernel, (dim3){ 2, 3, 4 }, one, NULL, 64,
				     NULL) == cudaSuccess);
	CHILD_CHECK(cudaFree((char *)p + 1) == cudaErrorInvalidValue);
	CHILD_CHECK(cudaDeviceSynchronize() == cudaSuccess);
	return 0;
}

static void test_no_device(void **state)
{
	const char *env[] = { "SIMGPU_DEVICES=0", NULL };
	char out[4096];

	(void)state;
	assert_int_equal(run_child(env, child_no_device, out, sizeof(out)), 0);
}

static void test_init_errors(void **state)
{
	const char *e35[] = { "SIMGPU_INIT_ERROR=35", NULL },
		   *e3[] = { "SIMGPU_INIT_ERROR=3", NULL };
	char out[4096];

	(void)state;
	assert_int_equal(run_child(e35, child_no_driver, out, sizeof(out)), 0);
	assert_int_equal(run_child(e3, child_init_error, out, sizeof(out)), 0);
}

static void test_capacity(void **state)
{
	const char *env[] = { "SIMGPU_DEVICES=3", "SIMGPU_DEVICE_MEM_MB=3", NULL };
	char out[4096];

	(void)state;
	assert_int_equal(run_child(env, child_capacity, out, sizeof(out)), 0);
}

static void test_latency_and_launch_cost(void **state)
{
	const char *lat[] = { "SIMGPU_COPY_LATENCY_US=2000", NULL };
	const char *launch[] = { "SIMGPU_LAUNCH_US=500", "SIMGPU_KERNEL_US=10", NULL };
	const char *depth[] = { "SIMGPU_QUEUE_DEPTH=2", "SIMGPU_KERNEL_US=5000", NULL };
	char out[4096];

	(void)state;
	assert_int_equal(run_child(lat, child_latency, out, sizeof(out)), 0);
	assert_int_equal(run_child(launch, child_launch_cost, out, sizeof(out)), 0);
	assert_int_equal(run_child(depth, child_queue_depth, out, sizeof(out)), 0);
}

static void test_log(void **state)
{
	const char *on[] = { "SIMGPU_LOG=1", NULL }, *off[] = { "SIMGPU_LOG=0", NULL };
	char out[8192];

	(void)state;
	assert_int_equal(run_child(on, child_log, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "cudaMalloc(size=1000 ptr=0x"));
	assert_non_null(strstr(
		out,
		"cudaLaunchKernel(kernel=env_kernel grid=2,3,4 block=1,1,1 smem=64 stream=(nil)) = 0 cudaSuccess"));
	assert_non_null(strstr(out, ") = 1 cudaErrorInvalidValue"));
	assert_non_null(strstr(out, "cudaDeviceSynchronize() = 0 cudaSuccess"));
	assert_int_equal(run_child(off, child_log, out, sizeof(out)), 0);
	assert_string_equal(out, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_device), cmocka_unit_test(test_init_errors),
		cmocka_unit_test(test_capacity),  cmocka_unit_test(test_latency_and_launch_cost),
		cmocka_unit_test(test_log),
	};
	static const char *const knobs[] = {
		"SIMGPU_DEVICES",      "SIMGPU_DEVICE_MEM_MB",	 "SIMGPU_INIT_ERROR",
		"SIMGPU_LOG",	       "SIMGPU_LAUNCH_US",	 "SIMGPU_KERNEL_US",
		"SIMGPU_KERNEL_TIMES", "SIMGPU_COPY_LATENCY_US", "SIMGPU_QUEUE_DEPTH",
	};

	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
		unsetenv(knobs[i]);
	return cmocka_run_group_tests_name("simgpu environment", tests, NULL, NULL);
}
