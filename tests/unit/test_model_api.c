/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_model_api.c — the per-API statistics gp_model_ingest() keeps:
 * calls, errors per code, times; record validation (malformed records are
 * rejected and counted); processes created by records and by
 * gp_model_process_add; a reused pid after exit; loss counter names.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "records.h"

static void calls_times_and_error_codes(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	struct gp_api_call c;

	assert_non_null(m);
	for (int i = 0; i < 10; i++) {
		c = rec(GP_API_CUDA_DEVICE_SYNCHRONIZE, T_PID, T_TID, 100 * (__u64)i,
			1000 + (__u64)i * 100, 0);
		feed(m, &c);
	}
	c = rec(GP_API_CUDA_DEVICE_SYNCHRONIZE, T_PID, T_TID, 5000, 10, 35);
	feed(m, &c);
	c = rec(GP_API_CUDA_DEVICE_SYNCHRONIZE, T_PID, T_TID, 5000, 10, 35);
	feed(m, &c);
	c = rec(GP_API_CUDA_DEVICE_SYNCHRONIZE, T_PID, T_TID, 5000, 10, 4242); /* unknown code */
	feed(m, &c);

	const struct gp_process *p = proc(m, T_PID);
	const struct gp_api_stats *st = p->api[GP_API_CUDA_DEVICE_SYNCHRONIZE];

	assert_non_null(st);
	assert_int_equal(st->time.count, 13);
	assert_int_equal(st->errors, 3);
	assert_int_equal(st->ncodes, 2);
	for (size_t i = 0; i < st->ncodes; i++)
		assert_int_equal(st->codes[i].count, st->codes[i].code == 35 ? 2 : 1);
	assert_int_equal(st->time.min, 10);
	assert_int_equal(st->time.max, 1900);
	assert_int_equal(st->time.sum, 14500 + 30);
	assert_int_equal(p->api_calls, 13);
	assert_int_equal(p->api_total_ns, 14530);
	assert_null(p->api[GP_API_CUDA_MALLOC]);
	gp_model_free(m);
}

static void error_names(void **state)
{
	assert_string_equal(gp_cuda_error_name(0), "cudaSuccess");
	assert_string_equal(gp_cuda_error_name(1), "cudaErrorInvalidValue");
	assert_string_equal(gp_cuda_error_name(2), "cudaErrorMemoryAllocation");
	assert_string_equal(gp_cuda_error_name(3), "cudaErrorInitializationError");
	assert_string_equal(gp_cuda_error_name(21), "cudaErrorInvalidMemcpyDirection");
	assert_string_equal(gp_cuda_error_name(35), "cudaErrorInsufficientDriver");
	assert_string_equal(gp_cuda_error_name(100), "cudaErrorNoDevice");
	assert_string_equal(gp_cuda_error_name(101), "cudaErrorInvalidDevice");
	assert_string_equal(gp_cuda_error_name(400), "cudaErrorInvalidResourceHandle");
	assert_string_equal(gp_cuda_error_name(600), "cudaErrorNotReady");
	assert_string_equal(gp_cuda_error_name(999), "cudaErrorUnknown");
	assert_null(gp_cuda_error_name(4242));
	assert_null(gp_cuda_error_name(-1));
}

static void malformed_records_are_counted(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	struct gp_api_call good = rec(GP_API_CUDA_MALLOC, T_PID, T_TID, 1, 1, 0), c;

	assert_non_null(m);
	assert_int_equal(gp_model_ingest(m, &good, sizeof(good) - 1), -EINVAL); /* short */
	assert_int_equal(gp_model_ingest(m, &good, 10), -EINVAL); /* shorter than a header */
	assert_int_equal(gp_model_ingest(m, NULL, 0), -EINVAL);
	c = good;
	c.hdr.type = 99;
	assert_int_equal(gp_model_ingest(m, &c, sizeof(c)), -EINVAL);
	c = good;
	c.hdr.size = 64;
	assert_int_equal(gp_model_ingest(m, &c, sizeof(c)), -EINVAL);
	c = good;
	c.api = 0;
	assert_int_equal(gp_model_ingest(m, &c, sizeof(c)), -EINVAL);
	c = good;
	c.api = GP_API_MAX;
	assert_int_equal(gp_model_ingest(m, &c, sizeof(c)), -EINVAL);
	assert_int_equal(gp_model_drop_get(m, "malformed_records"), 7);
	assert_int_equal(m->nprocs, 0); /* nothing of them was kept */
	feed(m, &good);
	assert_int_equal(gp_model_drop_get(m, "malformed_records"), 7);
	gp_model_free(m);
}

static void processes_by_record_and_by_add(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	struct gp_api_call c = rec(GP_API_CUDA_SET_DEVICE, 77, 78, 1, 1, 0);

	feed(m, &c); /* unknown pid: created with empty metadata */
	assert_int_equal(m->nprocs, 1);
	assert_string_equal(proc(m, 77)->comm, "");
	assert_int_equal(gp_model_process_add(m, 77, "train", "python train.py", 123, false), 0);
	assert_int_equal(m->nprocs, 1); /* updated in place, statistics kept */
	assert_string_equal(proc(m, 77)->comm, "train");
	assert_int_equal(proc(m, 77)->api_calls, 1);
	assert_int_equal(gp_model_process_exited(m, 77, 999), 0);
	assert_int_equal(gp_model_process_exited(m, 78, 999), -ENOENT);
	/* the pid comes back as a new process */
	assert_int_equal(gp_model_process_add(m, 77, "other", "", 2000, true), 0);
	assert_int_equal(m->nprocs, 2);
	assert_int_equal(proc(m, 77)->api_calls, 0);
	assert_true(m->procs[0]->exited);
	assert_int_equal(
		gp_model_library_add(m, 77, "/usr/lib/libcudart.so.13", GP_FAM_CUDART, false, NULL),
		0);
	assert_int_equal(
		gp_model_library_add(m, 77, "/usr/lib/libcudart.so.13", GP_FAM_CUDART, false, NULL),
		0);
	assert_int_equal(proc(m, 77)->nlibs, 1);
	assert_int_equal(gp_model_thread_name(m, 77, 80, "worker"), 0);
	assert_string_equal(((struct gp_thread *)gp_u64map_get(&proc(m, 77)->threads, 80))->name,
			    "worker");
	gp_model_free(m);
}

static void drop_counters(void **state)
{
	struct gp_model *m = gp_model_new(NULL);

	assert_string_equal(gp_bpf_drop_name(GP_DROP_RINGBUF_FULL), "ringbuf_full");
	assert_string_equal(gp_bpf_drop_name(GP_DROP_RETURN_NO_ENTRY), "return_without_entry");
	assert_string_equal(gp_bpf_drop_name(GP_DROP_ARG_READ), "arg_read");
	assert_null(gp_bpf_drop_name(GP_BPF_DROP_MAX));
	/* every known counter exists from the start, at zero */
	assert_int_equal(m->ndrops, GP_BPF_DROP_MAX + 6);
	gp_model_drop_set(m, "ringbuf_full", 5);
	gp_model_drop_set(m, "ringbuf_full", 7); /* set, not add */
	gp_model_drop_set(m, "collector_parse", 1);
	assert_int_equal(gp_model_drop_get(m, "ringbuf_full"), 7);
	assert_int_equal(gp_model_drop_get(m, "collector_parse"), 1);
	assert_int_equal(m->ndrops, GP_BPF_DROP_MAX + 7);
	gp_model_free(m);
	gp_model_free(NULL);
}

static void probes(void **state)
{
	struct gp_model *m = gp_model_new(NULL);

	assert_int_equal(gp_model_probe_add(m, 3, "/usr/lib/libcudart.so.13", 0, "cudaMalloc",
					    0x1234, GP_API_CUDA_MALLOC),
			 0);
	assert_int_equal(gp_model_probe_hits(m, 3, 10, 9), 0);
	assert_int_equal(gp_model_probe_hits(m, 4, 10, 9), -ENOENT);
	assert_int_equal(gp_model_probe_add(m, GP_MAX_PROBES, "x", 0, "y", 0, GP_API_CUDA_MALLOC),
			 -EINVAL);
	assert_int_equal(m->probes[3]->return_hits, 9);
	gp_model_free(m);
}

static void threads_first_last_and_time(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	struct gp_api_call c;

	c = rec(GP_API_CUDA_DEVICE_SYNCHRONIZE, T_PID, 11, 5000, 100, 0);
	feed(m, &c);
	c = rec(GP_API_CUDA_DEVICE_SYNCHRONIZE, T_PID, 11, 1000, 50, 2);
	feed(m, &c); /* records need not arrive in time order */
	c = rec(GP_API_CUDA_DEVICE_SYNCHRONIZE, T_PID, 12, 3000, 10, 0);
	feed(m, &c);

	const struct gp_thread *t = gp_u64map_get(&proc(m, T_PID)->threads, 11);

	assert_non_null(t);
	assert_int_equal(t->calls, 2);
	assert_int_equal(t->errors, 1);
	assert_int_equal(t->host_ns, 150);
	assert_int_equal(t->first_ns, 1000);
	assert_int_equal(t->last_ns, 5100);
	assert_int_equal(t->device, -1);
	assert_int_equal(proc(m, T_PID)->threads.count, 2);
	gp_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(calls_times_and_error_codes),
		cmocka_unit_test(error_names),
		cmocka_unit_test(malformed_records_are_counted),
		cmocka_unit_test(processes_by_record_and_by_add),
		cmocka_unit_test(drop_counters),
		cmocka_unit_test(probes),
		cmocka_unit_test(threads_first_last_and_time),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
