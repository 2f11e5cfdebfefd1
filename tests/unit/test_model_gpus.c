/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_model_gpus.c — NVML's side of the model (src/model/gpus.c): each
 * metric's min, max, last and time-weighted mean (a sample weighs its
 * window), a metric a sample lacked left out of its stats only, process
 * rows (memory max and last, utilization only when NVML gave it), errors
 * counted once per (device, call, code), and a lost device.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "model/view.h"

static void sample(struct gp_model *m, __u32 index, __u64 t, __u64 window, __u32 valid, __u64 util,
		   __u64 mem)
{
	struct gp_gpu_sample s = {
		.index = index, .valid = valid, .mono_ns = t, .window_ns = window
	};

	s.v[GP_GM_UTIL_GPU] = util;
	s.v[GP_GM_MEM_USED] = mem;
	assert_int_equal(gp_model_gpu_sample(m, &s), 0);
}

#define BOTH ((1u << GP_GM_UTIL_GPU) | (1u << GP_GM_MEM_USED))

static void time_weighted_stats(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	const struct gp_gpu_device *d;
	const struct gp_gpu_stat *u, *mem;

	assert_non_null(m);
	/* 100 % for 100 ms, 0 % for 300 ms, 50 % for 100 ms: time mean 30 %, plain mean 50 % */
	sample(m, 0, 1100, 100, BOTH, 100, 10);
	sample(m, 0, 1400, 300, BOTH, 0, 30);
	sample(m, 0, 1500, 100, 1u << GP_GM_UTIL_GPU, 50, 999); /* memory not given: left out */
	d = gp_gpu_device_of(m, 0);
	assert_non_null(d);
	assert_null(gp_gpu_device_of(m, 1));
	u = &d->m[GP_GM_UTIL_GPU];
	mem = &d->m[GP_GM_MEM_USED];
	assert_int_equal(d->samples, 3);
	assert_int_equal(d->window_start_ns, 1000);
	assert_int_equal(d->window_ns, 500);
	assert_int_equal(d->first_ns, 1100);
	assert_int_equal(d->last_ns, 1500);
	assert_int_equal(u->n, 3);
	assert_int_equal(u->min, 0);
	assert_int_equal(u->max, 100);
	assert_int_equal(u->last, 50);
	assert_int_equal(u->last_ns, 1500);
	assert_true(gp_gpu_stat_mean(u) > 29.999 && gp_gpu_stat_mean(u) < 30.001);
	assert_int_equal(mem->n, 2);
	assert_int_equal(mem->max, 30);
	assert_int_equal(mem->last, 30);
	assert_int_equal(mem->last_ns, 1400); /* the latest sample did not give it */
	assert_true(gp_gpu_stat_mean(mem) > 24.999 &&
		    gp_gpu_stat_mean(mem) < 25.001); /* (10×100 + 30×300) / 400 */
	assert_int_equal(d->m[GP_GM_POWER].n, 0);
	gp_model_free(m);
}

static void processes_and_errors(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	const struct gp_gpu_device *d;
	const struct gp_gpu_proc_row *r;

	assert_non_null(m);
	assert_int_equal(gp_model_gpu_device(m, 0, "dev", "GPU-x", 1000), 0);
	assert_int_equal(gp_model_gpu_process(m, 0, 42, 100, 500, 20, 10), 0);
	assert_int_equal(gp_model_gpu_process(m, 0, 42, 200, 300, GP_NVML_UNKNOWN_UTIL,
					      GP_NVML_UNKNOWN_UTIL),
			 0);
	assert_int_equal(gp_model_gpu_process(m, 0, 42, 300, 400, 60, 30), 0);
	d = gp_gpu_device_of(m, 0);
	assert_int_equal(d->nprocs, 1);
	r = &d->procs[0];
	assert_int_equal(r->samples, 3);
	assert_int_equal(r->first_ns, 100);
	assert_int_equal(r->last_ns, 300);
	assert_int_equal(r->mem_max, 500);
	assert_int_equal(r->mem_last, 400);
	assert_int_equal(r->util_samples, 2); /* the unknown one is not a 0 */
	assert_int_equal(r->sm_sum, 80);
	assert_int_equal(r->sm_max, 60);
	assert_int_equal(r->sm_last, 60);
	assert_int_equal(r->mem_util_last, 30);
	assert_int_equal(r->util_last_ns, 300);
	/* errors: once per (device, call, code), counted */
	for (int i = 0; i < 3; i++)
		assert_int_equal(gp_model_gpu_error(m, 0, "nvmlDeviceGetPowerUsage", 3,
						    "Not Supported", 10 + i),
				 0);
	assert_int_equal(gp_model_gpu_error(m, 0, "nvmlDeviceGetPowerUsage", 999, "Unknown", 20),
			 0);
	assert_int_equal(
		gp_model_gpu_error(m, GP_GPU_NO_DEVICE, "nvmlDeviceGetCount_v2", 3, NULL, 5), 0);
	assert_int_equal(m->gpus.nerrors, 3);
	assert_int_equal(m->gpus.errors[0].count, 3);
	assert_int_equal(m->gpus.errors[0].first_ns, 10);
	assert_false(gp_gpu_device_of(m, 0)->lost);
	gp_model_free(m);
}

static void lost_device(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	const struct gp_gpu_device *d;

	assert_non_null(m);
	sample(m, 1, 100, 100, BOTH, 40, 7);
	assert_int_equal(gp_model_gpu_error(m, 1, "nvmlDeviceGetUtilizationRates",
					    GP_NVML_ERROR_GPU_IS_LOST, "GPU is lost", 150),
			 0);
	assert_int_equal(gp_model_gpu_error(m, 1, "nvmlDeviceGetMemoryInfo",
					    GP_NVML_ERROR_GPU_IS_LOST, "GPU is lost", 170),
			 0);
	d = gp_gpu_device_of(m, 1);
	assert_true(d->lost);
	assert_int_equal(d->lost_ns, 150); /* the first time it was said */
	assert_int_equal(d->samples, 1);   /* what was sampled before stays */
	assert_int_equal(d->m[GP_GM_UTIL_GPU].last, 40);
	/* a device never seen before that is lost gets a row saying so */
	assert_int_equal(gp_model_gpu_error(m, 3, "nvmlDeviceGetHandleByIndex_v2",
					    GP_NVML_ERROR_GPU_IS_LOST, "GPU is lost", 200),
			 0);
	assert_true(gp_gpu_device_of(m, 3)->lost);
	gp_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(time_weighted_stats),
		cmocka_unit_test(processes_and_errors),
		cmocka_unit_test(lost_device),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
