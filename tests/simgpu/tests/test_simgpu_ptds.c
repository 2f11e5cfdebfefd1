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
void p10(void) {}

static const dim3 one = { 1, 1, 1 };

static void test_names(void **state)
{
	(void)state;
	assert_ptr_equal((void *)cudaLaunchKernel, dlsym(RTLD_DEFAULT, "cudaLaunchKernel_ptsz"));
	assert_ptr_equal((void *)cudaMemcpy, dlsym(RTLD_DEFAULT, "cudaMemcpy_ptds"));
	assert_ptr_equal((void *)cudaMemsetAsync, dlsym(RTLD_DEFAULT, "cudaMemsetAsync_ptsz"));
	assert_ptr_equal((void *)cudaStreamSynchronize, dlsym(RTLD_DEFAULT, "cudaStreamSynchronize_ptsz"));
	assert_ptr_equal((void *)cudaEventRecord, dlsym(RTLD_DEFAULT, "cudaEventRecord_ptsz"));
	assert_ptr_equal((void *)cudaGraphLaunch, dlsym(RTLD_DEFAULT, "cudaGraphLaunch_ptsz"));
	assert_ptr_not_equal((void *)cudaLaunchKernel, dlsym(RTLD_DEFAULT, "cudaLaunchKernel"));
}

static void *thread_main(void *arg)
{
	(void)arg;
	if (cudaLaunchKernel((const void *)p10, one, one, NULL, 0, NULL) || cudaStreamSynchronize(NULL))
		return (void *)1;
	return NULL;
}

static void test_threads_do_not_serialise(void **state)
{
	pthread_t t[3];
	void *r;
	int i;

	(void)state;
	/* three threads, 10 ms each on their own default stream: 10 ms, not 30 */
	TRY_TIMING(double t0 = now_ms();
		   for (i = 0; i < 3; i++)
			   assert_int_equal(pthread_create(&t[i], NULL, thread_main, NULL), 0);
		   for (i = 0; i < 3; i++) {
			   pthread_join(t[i], &r);
			   assert_null(r);
		   }
		   WITHIN(now_ms() - t0, 10.0, 15.0));
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
