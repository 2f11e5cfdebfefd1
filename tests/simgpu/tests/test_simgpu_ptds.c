/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_simgpu_ptds.c — a program compiled with
 * CUDA_API_PER_THREAD_DEFAULT_STREAM against the simulator's header: the
 * stream calls resolve to their _ptsz/_ptds exports, and stream 0 is then
 * each host thread's own default stream.
 */
#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1
#include <dlfcn.h>
#include <pthread.h>

#include "simgpu_test.h"

void p10(void);
void p10(void)
{
}

static const dim3 one = { 1, 1, 1 };

static void test_names(void **state)
{
	(void)state;
	assert_ptr_equal((void *)cudaLaunchKernel, dlsym(RTLD_DEFAULT, "cudaLaunchKernel_ptsz"));
	assert_ptr_equal((void *)cudaMemcpy, dlsym(RTLD_DEFAULT, "cudaMemcpy_ptds"));
	assert_ptr_equal((void *)cudaMemsetAsync, dlsym(RTLD_DEFAULT, "cudaMemsetAsync_ptsz"));
	assert_ptr_equal((void *)cudaStreamSynchronize,
			 dlsym(RTLD_DEFAULT, "cudaStreamSynchronize_ptsz"));
	assert_ptr_equal((void *)cudaEventRecord, dlsym(RTLD_DEFAULT, "cudaEventRecord_ptsz"));
	assert_ptr_equal((void *)cudaGraphLaunch, dlsym(RTLD_DEFAULT, "cudaGraphLaunch_ptsz"));
	assert_ptr_not_equal((void *)cudaLaunchKernel, dlsym(RTLD_DEFAULT, "cudaLaunchKernel"));
}

/* Thread 0 holds its default stream with a gate; the others' kernels end meanwhile. */
static struct gate gate;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int queued;
static struct simgpu_times g_t, k_t[3];

static void *thread_main(void *arg)
{
	int id = (int)(intptr_t)arg;
	void *g = NULL, *k;

	if (!id && (cudaLaunchHostFunc(NULL, gate_fn, &gate) || !(g = simgpu_op_last())))
		return (void *)1;
	if (cudaLaunchKernel((const void *)p10, one, one, NULL, 0, NULL) || !(k = simgpu_op_last()))
		return (void *)2;
	if (!id) {
		pthread_mutex_lock(&mu);
		queued = 1;
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&mu);
	}
	if (cudaStreamSynchronize(NULL) || simgpu_op_times(k, &k_t[id]) ||
	    (g && simgpu_op_times(g, &g_t)))
		return (void *)3;
	simgpu_op_put(k);
	if (g)
		simgpu_op_put(g);
	return NULL;
}

static void test_threads_do_not_serialise(void **state)
{
	pthread_t t[3];
	void *r;
	int i;

	(void)state;
	/* three threads, 10 ms each on their own default stream: threads 1 and 2 finish while
	 * thread 0's stream is held, each kernel starting when it was queued */
	gate_init(&gate);
	assert_int_equal(pthread_create(&t[0], NULL, thread_main, (void *)0), 0);
	pthread_mutex_lock(&mu);
	while (!queued)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	for (i = 1; i < 3; i++)
		assert_int_equal(pthread_create(&t[i], NULL, thread_main, (void *)(intptr_t)i), 0);
	for (i = 1; i < 3; i++) {
		pthread_join(t[i], &r);
		assert_null(r);
		ASSERT_NS(k_t[i].start_ns, k_t[i].enq_ns);
		ASSERT_NS(k_t[i].end_ns - k_t[i].start_ns, 10 * MS_NS);
	}
	assert_false(gate_opened(&gate));
	gate_open(&gate);
	pthread_join(t[0], &r);
	assert_null(r);
	ASSERT_NS(k_t[0].start_ns, g_t.end_ns);
	ASSERT_NS(k_t[0].end_ns - k_t[0].start_ns, 10 * MS_NS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_threads_do_not_serialise),
	};

	setenv("SIMGPU_DEVICES", "1", 1);
	setenv("SIMGPU_KERNEL_TIMES", "p10=10000", 1);
	unsetenv("SIMGPU_INIT_ERROR");
	unsetenv("SIMGPU_LOG");
	return cmocka_run_group_tests_name("simgpu per-thread default stream", tests, NULL, NULL);
}
