/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_model_streams.c — per-stream accounting through gp_model_ingest():
 * legacy vs per-thread default streams (handle 0 in _ptsz calls,
 * cudaStreamLegacy, cudaStreamPerThread), work enqueued, synchronisation
 * time, creations/destructions, event records and waits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "records.h"

#define S1  0x55550000a000ULL
#define DEV 0x700000000000ULL
#define EV  0x55550000e000ULL

static const struct gp_stream *stream(struct gp_model *m, __u64 key)
{
	const struct gp_stream *s = gp_u64map_get(&proc(m, T_PID)->streams, key);

	assert_non_null(s);
	return s;
}

static void stream_identity(void **state)
{
	assert_true(gp_stream_key(0, false, 7) == GP_STREAM_KEY_LEGACY);
	assert_true(gp_stream_key(GP_CUDA_STREAM_LEGACY, true, 7) == GP_STREAM_KEY_LEGACY);
	assert_true(gp_stream_key(0, true, 7) == (GP_STREAM_KEY_PER_THREAD | 7));
	assert_true(gp_stream_key(GP_CUDA_STREAM_PER_THREAD, false, 8) ==
		    (GP_STREAM_KEY_PER_THREAD | 8));
	assert_true(gp_stream_key(S1, true, 7) == S1);
}

static void work_by_stream(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	const __u32 g[3] = { 1, 1, 1 };
	struct gp_api_call c;

	c = rec_create(GP_API_CUDA_STREAM_CREATE_WITH_FLAGS, S1);
	feed(m, &c);
	c = rec_launch(GP_API_CUDA_LAUNCH_KERNEL, 1, 2, g, g, 0, S1, 0);
	feed(m, &c);
	c = rec_launch(GP_API_CUDA_LAUNCH_KERNEL, 1, 2, g, g, 0, S1, 1); /* failed: not enqueued */
	feed(m, &c);
	c = rec_launch(GP_API_CUDA_LAUNCH_KERNEL, 1, 2, g, g, 0, 0, 0);
	feed(m, &c);
	c = rec_launch(GP_API_CUDA_LAUNCH_KERNEL_PTSZ, 1, 2, g, g, 0, 0, 0);
	feed(m, &c);
	c = rec_launch_exc(GP_API_CUDA_LAUNCH_KERNEL_EXC, 1, 2, g, g, 0, S1);
	feed(m, &c);
	c = rec_memcpy(GP_API_CUDA_MEMCPY_ASYNC, DEV, 0x1000, 300, GP_MEMCPY_HTOD, S1, 1, 0);
	feed(m, &c);
	c = rec_memcpy(GP_API_CUDA_MEMCPY, DEV, 0x1000, 50, GP_MEMCPY_HTOD, 0xffff, 1,
		       0); /* no stream arg */
	feed(m, &c);
	c = rec_memcpy(GP_API_CUDA_MEMCPY_PTDS, DEV, 0x1000, 60, GP_MEMCPY_HTOD, 0, 1, 0);
	feed(m, &c);
	c = rec_memset(GP_API_CUDA_MEMSET_ASYNC, DEV, 70, S1, 0);
	feed(m, &c);
	c = rec_memcpy2d(GP_API_CUDA_MEMCPY_2D_ASYNC, DEV, 0x1000, 10, 10, GP_MEMCPY_HTOD, S1);
	c.hdr.flags |= GP_EVF_ARGS_PARTIAL; /* its stream could not be read */
	feed(m, &c);
	c = rec_h(GP_API_CUDA_GRAPH_LAUNCH, T_TID, 0xabc, S1, 5, 0);
	feed(m, &c);
	c = rec_h(GP_API_CUDA_STREAM_SYNCHRONIZE, T_TID, S1, 0, 1000, 0);
	feed(m, &c);
	c = rec_h(GP_API_CUDA_STREAM_SYNCHRONIZE, T_TID, S1, 0, 500,
		  400); /* blocked, then failed: still time */
	feed(m, &c);
	c = rec_h(GP_API_CUDA_STREAM_SYNCHRONIZE_PTSZ, T_TID, 0, 0, 30, 0);
	feed(m, &c);
	c = rec_h(GP_API_CUDA_STREAM_DESTROY, T_TID, S1, 0, 5, 0);
	feed(m, &c);

	const struct gp_stream *s1 = stream(m, S1);
	const struct gp_stream *legacy = stream(m, GP_STREAM_KEY_LEGACY);
	const struct gp_stream *pt = stream(m, GP_STREAM_KEY_PER_THREAD | T_TID);

	assert_int_equal(s1->created, 1);
	assert_int_equal(s1->destroyed, 1);
	assert_int_equal(s1->kernels, 2);
	assert_int_equal(s1->copies, 1);
	assert_int_equal(s1->copy_bytes, 300);
	assert_int_equal(s1->memsets, 1);
	assert_int_equal(s1->memset_bytes, 70);
	assert_int_equal(s1->graph_launches, 1);
	assert_int_equal(s1->sync_calls, 2);
	assert_int_equal(s1->sync_ns, 1500);
	assert_int_equal(legacy->kernels, 1);
	assert_int_equal(legacy->copies, 1);
	assert_int_equal(legacy->copy_bytes, 50);
	assert_int_equal(pt->kernels, 1);
	assert_int_equal(pt->copies, 1);
	assert_int_equal(pt->copy_bytes, 60);
	assert_int_equal(pt->sync_calls, 1);
	assert_int_equal(proc(m, T_PID)->streams.count, 3);
	gp_model_free(m);
}

static void events(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	struct gp_api_call c;

	c = rec_create(GP_API_CUDA_EVENT_CREATE, EV);
	feed(m, &c);
	c = rec_h(GP_API_CUDA_EVENT_RECORD, T_TID, EV, S1, 2, 0);
	feed(m, &c);
	c = rec_h(GP_API_CUDA_EVENT_RECORD_PTSZ, T_TID, EV, 0, 2, 0);
	feed(m, &c);
	c = rec_h(GP_API_CUDA_STREAM_WAIT_EVENT, T_TID, S1, EV, 2, 0);
	feed(m, &c);
	c = rec_h(GP_API_CUDA_EVENT_SYNCHRONIZE, T_TID, EV, 0, 700, 0);
	feed(m, &c);
	c = rec_h(GP_API_CUDA_EVENT_DESTROY, T_TID, EV, 0, 2, 0);
	feed(m, &c);

	const struct gp_events *e = &proc(m, T_PID)->events;

	assert_int_equal(e->created, 1);
	assert_int_equal(e->records, 2);
	assert_int_equal(e->sync_calls, 1);
	assert_int_equal(e->sync_ns, 700);
	assert_int_equal(e->destroyed, 1);
	assert_int_equal(stream(m, S1)->event_records, 1);
	assert_int_equal(stream(m, S1)->event_waits, 1);
	assert_int_equal(stream(m, GP_STREAM_KEY_PER_THREAD | T_TID)->event_records, 1);
	gp_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stream_identity),
		cmocka_unit_test(work_by_stream),
		cmocka_unit_test(events),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
