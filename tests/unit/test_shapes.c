/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_shapes.c — api.h's shape table and what it decides: the cookie
 * flags each API's probes carry (the path only for the two loads that take
 * one, the NCCL collectives' stack slots), the cookie's layout, stream
 * slots, stacks, in-kernel counting (never for stream/event destruction nor
 * NCCL), where each NCCL collective keeps its arguments; and the model's
 * handlers: the ones that also see nested calls, the ones the split shapes
 * got (destroys, NCCL groups).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "records.h"

/* probes/uprobes.h (not included: its struct gp_probe is not the model's) */
bool gp_uprobes_aggregatable(enum gp_api_id api);

static void every_api_has_a_shape_of_the_table(void **state)
{
	for (int s = 0; s < GP_SHAPE_MAX; s++) {
		assert_non_null(gp_shapes[s].name);
		/* what a shape reads leaves the bits that say how the session counts a call to the session */
		assert_int_equal(gp_shapes[s].ck & (GP_CK_AGG | GP_CK_GATED), 0);
	}
	assert_int_equal(gp_shapes[GP_SHAPE_NONE].ck, 0);
	assert_false(gp_shapes[GP_SHAPE_NONE].stack);
	assert_false(gp_shapes[GP_SHAPE_NONE].agg);
	for (int id = GP_API_INVALID + 1; id < GP_API_MAX; id++) {
		assert_true(gp_apis[id].shape > GP_SHAPE_NONE && gp_apis[id].shape < GP_SHAPE_MAX);
		/* every call that waits for the GPU gets its caller's stack */
		if (gp_apis[id].attr & GP_A_SYNC_CALL)
			assert_true(gp_api_wants_stack(id));
	}
	/* the hit-cost probe has no API: nothing read, no stack, not counted in the kernel */
	assert_int_equal(gp_api_cookie_flags(GP_API_INVALID), 0);
	assert_false(gp_api_wants_stack(GP_API_INVALID));
	assert_false(gp_uprobes_aggregatable(GP_API_INVALID));
	assert_int_equal(gp_api_stream_slot(GP_API_INVALID), -1);
	assert_int_equal(gp_api_queues(GP_API_MAX), GP_Q_NONE);
}

static void cookie_layout(void **state)
{
	__u32 flags = GP_CK_OUT_AT(3) | GP_CK_STR_AT(5) | GP_CK_VOID | GP_CK_AGG | GP_CK_GATED;
	__u64 c = GP_COOKIE(GP_API_CU_LAUNCH_KERNEL_EX_PTSZ, 4095, flags);

	assert_int_equal(GP_COOKIE_API(c), GP_API_CU_LAUNCH_KERNEL_EX_PTSZ);
	assert_int_equal(GP_COOKIE_PROBE(c), 4095);
	assert_int_equal(GP_COOKIE_FLAGS(c), flags);
	assert_int_equal(GP_CK_OUT_SLOT(GP_COOKIE_FLAGS(c)), 3);
	assert_int_equal(GP_CK_STR_SLOT(GP_COOKIE_FLAGS(c)), 5);
	/* where they were before the flags were widened: cookie bits 48 and 49 */
	assert_int_equal(GP_COOKIE(0, 0, GP_CK_AGG), 1ULL << 48);
	assert_int_equal(GP_COOKIE(0, 0, GP_CK_GATED), 1ULL << 49);
	assert_int_equal(GP_COOKIE(0xffff, 0xffff, 0), 0xffffffffULL);
}

/* The flags that used to be per-API exceptions in code. */
static void per_api_cookie_flags(void **state)
{
	/* the path: only the two loads that take one */
	assert_int_equal(gp_api_cookie_flags(GP_API_CU_MODULE_LOAD),
			 GP_CK_OUT_AT(0) | GP_CK_STR_AT(1));
	assert_int_equal(gp_api_cookie_flags(GP_API_CU_LIBRARY_LOAD_FROM_FILE),
			 GP_CK_OUT_AT(0) | GP_CK_STR_AT(1));
	assert_int_equal(gp_api_cookie_flags(GP_API_CU_MODULE_LOAD_DATA), GP_CK_OUT_AT(0));
	assert_int_equal(gp_api_cookie_flags(GP_API_CU_MODULE_LOAD_DATA_EX), GP_CK_OUT_AT(0));
	assert_int_equal(gp_api_cookie_flags(GP_API_CU_MODULE_LOAD_FAT_BINARY), GP_CK_OUT_AT(0));
	assert_int_equal(gp_api_cookie_flags(GP_API_CU_LIBRARY_LOAD_DATA), GP_CK_OUT_AT(0));
	/* the rest of what the programs read, one API of each kind */
	assert_int_equal(gp_api_cookie_flags(GP_API_CUDA_LAUNCH_KERNEL), GP_CK_STACK2);
	assert_int_equal(gp_api_cookie_flags(GP_API_CUDA_LAUNCH_KERNEL_EXC), GP_CK_LAUNCH_CFG);
	assert_int_equal(gp_api_cookie_flags(GP_API_CU_LAUNCH_KERNEL), GP_CK_CU_LAUNCH);
	assert_int_equal(gp_api_cookie_flags(GP_API_CU_LAUNCH_KERNEL_EX), GP_CK_LAUNCH_CFG);
	assert_int_equal(gp_api_cookie_flags(GP_API_CUDA_MEMCPY_2D_ASYNC), GP_CK_STACK2);
	assert_int_equal(gp_api_cookie_flags(GP_API_CUDA_MEMCPY_ASYNC), 0);
	assert_int_equal(gp_api_cookie_flags(GP_API_CU_MEM_CREATE), GP_CK_OUT_AT(0) | GP_CK_DEREF2);
	assert_int_equal(gp_api_cookie_flags(GP_API_CUDA_REGISTER_FUNCTION),
			 GP_CK_STR_AT(3) | GP_CK_VOID);
	assert_int_equal(gp_api_cookie_flags(GP_API_CU_MODULE_GET_FUNCTION),
			 GP_CK_OUT_AT(0) | GP_CK_STR_AT(2));
	assert_int_equal(gp_api_cookie_flags(GP_API_NCCL_COMM_SPLIT), GP_CK_OUT_AT(3));
	assert_int_equal(gp_api_cookie_flags(GP_API_NCCL_COMM_USER_RANK),
			 GP_CK_OUT_AT(1) | GP_CK_OUT32);
	assert_int_equal(gp_api_cookie_flags(GP_API_NCCL_COMM_INIT_ALL), GP_CK_NCCL_ALL);
	assert_int_equal(gp_api_cookie_flags(GP_API_NCCL_GROUP_END), 0);
}

/* Where each collective keeps its arguments: what nccl.c decodes, and what the programs must read. */
static void nccl_layouts(void **state)
{
	static const struct {
		enum gp_api_id id;
		struct gp_nccl_layout l;
	} want[] = {
		/* op, then the slots of count, dtype, redop, root or peer, comm, stream; per rank */
		{ GP_API_NCCL_ALL_REDUCE, { GP_NCCL_ALL_REDUCE, 2, 3, 4, -1, 5, 6, false } },
		{ GP_API_NCCL_BROADCAST, { GP_NCCL_BROADCAST, 2, 3, -1, 4, 5, 6, false } },
		{ GP_API_NCCL_BCAST, { GP_NCCL_BROADCAST, 1, 2, -1, 3, 4, 5, false } },
		{ GP_API_NCCL_REDUCE, { GP_NCCL_REDUCE, 2, 3, 4, 5, 6, 7, false } },
		{ GP_API_NCCL_ALL_GATHER, { GP_NCCL_ALL_GATHER, 2, 3, -1, -1, 4, 5, true } },
		{ GP_API_NCCL_REDUCE_SCATTER, { GP_NCCL_REDUCE_SCATTER, 2, 3, 4, -1, 5, 6, true } },
		{ GP_API_NCCL_ALLTOALL, { GP_NCCL_ALL_TO_ALL, 2, 3, -1, -1, 4, 5, true } },
		{ GP_API_NCCL_ALL_TO_ALL, { GP_NCCL_ALL_TO_ALL, 2, 3, -1, -1, 4, 5, true } },
		{ GP_API_NCCL_SEND, { GP_NCCL_SEND, 1, 2, -1, 3, 4, 5, false } },
		{ GP_API_NCCL_RECV, { GP_NCCL_RECV, 1, 2, -1, 3, 4, 5, false } },
	};
	size_t ncoll = 0;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct gp_nccl_layout l;

		const struct gp_nccl_layout *w = &want[i].l;

		assert_true(gp_nccl_layout(want[i].id, &l));
		assert_int_equal(l.op, w->op);
		assert_int_equal(l.count, w->count);
		assert_int_equal(l.dtype, w->dtype);
		assert_int_equal(l.redop, w->redop);
		assert_int_equal(l.root_or_peer, w->root_or_peer);
		assert_int_equal(l.comm, w->comm);
		assert_int_equal(l.stream, w->stream);
		assert_int_equal(l.per_rank_count, w->per_rank_count);
		assert_int_equal(gp_api_stream_slot(want[i].id), l.stream);
		/* slots 6..7 are on the stack: the programs read them */
		assert_int_equal(gp_api_cookie_flags(want[i].id), l.stream >= 6 ? GP_CK_STACK2 : 0);
		assert_true(gp_api_wants_stack(want[i].id));
	}
	for (int id = GP_API_INVALID + 1; id < GP_API_MAX; id++) {
		struct gp_nccl_layout l;

		/* every API of a collective's shape has its layout, and only those */
		assert_int_equal(gp_nccl_layout(id, &l), gp_api_queues(id) == GP_Q_COLL);
		ncoll += gp_api_queues(id) == GP_Q_COLL;
		/* NCCL: each call's communicator and bytes count */
		if (gp_apis[id].family == GP_FAM_NCCL)
			assert_false(gp_uprobes_aggregatable(id));
	}
	assert_int_equal(ncoll, sizeof(want) / sizeof(want[0]));
	assert_false(gp_nccl_layout(GP_API_INVALID, &(struct gp_nccl_layout){ 0 }));
	assert_false(gp_nccl_layout(GP_API_MAX, &(struct gp_nccl_layout){ 0 }));
}

static void stream_slots_stacks_aggregation(void **state)
{
	/* a synchronous copy or memset takes no stream; its async twin does */
	assert_int_equal(gp_api_stream_slot(GP_API_CUDA_MEMCPY), -1);
	assert_int_equal(gp_api_stream_slot(GP_API_CUDA_MEMCPY_ASYNC_PTSZ), 4);
	assert_int_equal(gp_api_stream_slot(GP_API_CUDA_MEMCPY_2D), -1);
	assert_int_equal(gp_api_stream_slot(GP_API_CUDA_MEMCPY_2D_ASYNC), 7);
	assert_int_equal(gp_api_stream_slot(GP_API_CUDA_MEMCPY_PEER), -1);
	assert_int_equal(gp_api_stream_slot(GP_API_CUDA_MEMCPY_PEER_ASYNC), 5);
	assert_int_equal(gp_api_stream_slot(GP_API_CU_MEMCPY_DTOH), -1);
	assert_int_equal(gp_api_stream_slot(GP_API_CU_MEMCPY_DTOH_ASYNC), 3);
	assert_int_equal(gp_api_stream_slot(GP_API_CU_MEMSET_D32), -1);
	assert_int_equal(gp_api_stream_slot(GP_API_CU_MEMSET_D32_ASYNC_PTSZ), 3);
	assert_int_equal(gp_api_stream_slot(GP_API_CUDA_MALLOC_ASYNC), 2);
	assert_int_equal(gp_api_stream_slot(GP_API_CU_MEM_FREE_ASYNC), 1);
	assert_int_equal(gp_api_stream_slot(GP_API_CUDA_LAUNCH_KERNEL_EXC), 7);
	assert_int_equal(gp_api_stream_slot(GP_API_CU_LAUNCH_KERNEL), 7);
	assert_int_equal(gp_api_stream_slot(GP_API_CU_GRAPH_LAUNCH), 1);
	assert_int_equal(gp_api_stream_slot(GP_API_CUDA_EVENT_RECORD), 1);
	assert_int_equal(gp_api_stream_slot(GP_API_CUDA_STREAM_DESTROY), 0);
	assert_int_equal(gp_api_stream_slot(GP_API_CU_STREAM_WAIT_EVENT_PTSZ), 0);
	assert_int_equal(gp_api_stream_slot(GP_API_CUDA_EVENT_SYNCHRONIZE), -1);
	assert_int_equal(gp_api_stream_slot(GP_API_CUDA_MALLOC), -1);

	/* stacks: GPU work, memory, waits; not handles nor stream/event bookkeeping */
	assert_true(gp_api_wants_stack(GP_API_CU_MEM_RELEASE));
	assert_true(gp_api_wants_stack(GP_API_CUDA_HOST_UNREGISTER));
	assert_true(gp_api_wants_stack(GP_API_CU_CTX_SYNCHRONIZE));
	assert_false(gp_api_wants_stack(GP_API_CU_MEM_MAP));
	assert_false(gp_api_wants_stack(GP_API_CUDA_STREAM_DESTROY));
	assert_false(gp_api_wants_stack(GP_API_CUDA_EVENT_RECORD));
	assert_false(gp_api_wants_stack(GP_API_CU_MODULE_LOAD));
	assert_false(gp_api_wants_stack(GP_API_NCCL_GROUP_START));

	/* counted in the kernel: launches, synchronisations, event records and waits */
	assert_true(gp_uprobes_aggregatable(GP_API_CUDA_LAUNCH_KERNEL));
	assert_true(gp_uprobes_aggregatable(GP_API_CU_LAUNCH_KERNEL_EX_PTSZ));
	assert_true(gp_uprobes_aggregatable(GP_API_CUDA_GRAPH_LAUNCH));
	assert_true(gp_uprobes_aggregatable(GP_API_CUDA_DEVICE_SYNCHRONIZE));
	assert_true(gp_uprobes_aggregatable(GP_API_CU_STREAM_SYNCHRONIZE));
	assert_true(gp_uprobes_aggregatable(GP_API_CU_EVENT_SYNCHRONIZE));
	assert_true(gp_uprobes_aggregatable(GP_API_CUDA_EVENT_RECORD));
	assert_true(gp_uprobes_aggregatable(GP_API_CUDA_STREAM_WAIT_EVENT_PTSZ));
	/* rare, and they close what a recorded create opened */
	assert_false(gp_uprobes_aggregatable(GP_API_CUDA_STREAM_DESTROY));
	assert_false(gp_uprobes_aggregatable(GP_API_CUDA_EVENT_DESTROY));
	/* state the model tracks */
	assert_false(gp_uprobes_aggregatable(GP_API_CUDA_MALLOC));
	assert_false(gp_uprobes_aggregatable(GP_API_CUDA_MEMCPY_ASYNC));
	assert_false(gp_uprobes_aggregatable(GP_API_CUDA_STREAM_CREATE));
	assert_false(gp_uprobes_aggregatable(GP_API_CUDA_SET_DEVICE));
	assert_false(gp_uprobes_aggregatable(GP_API_CU_MODULE_GET_FUNCTION));
}

/* A call inside a traced call: counted as its outer call's, but the handles it creates are the process's. */
static struct gp_api_call nested(struct gp_api_call c, enum gp_api_id outer)
{
	c.hdr.flags |= (__u32)outer << GP_EVF_PARENT_SHIFT;
	return c;
}

static void nested_calls_reach_only_the_handle_handlers(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	struct gp_api_call_ext x;
	struct gp_api_call c;

	assert_non_null(m);
	/* cudaMalloc's own cuMemAlloc_v2: no second allocation */
	c = nested(rec_alloc(GP_API_CU_MEM_ALLOC, T_TID, 0x700000000000ULL, 4096, 0),
		   GP_API_CUDA_MALLOC);
	feed(m, &c);
	/* the runtime loading its module and naming its function */
	c = nested(rec_h(GP_API_CU_MODULE_LOAD_DATA, T_TID, 0x7ffc0000, 0x500000, 10, 0),
		   GP_API_CUDA_LAUNCH_KERNEL);
	c.hdr.flags |= GP_EVF_OUT_VALID;
	c.out = 0xa0;
	feed(m, &c);
	memset(&x, 0, sizeof(x));
	x.call = nested(rec(GP_API_CU_MODULE_GET_FUNCTION, T_PID, T_TID, 600, 10, 0),
			GP_API_CUDA_LAUNCH_KERNEL);
	x.call.hdr.type = GP_EV_API_CALL_EXT;
	x.call.hdr.size = sizeof(x);
	x.call.hdr.flags |= GP_EVF_OUT_VALID;
	x.call.out = 0xf0;
	x.call.args[1] = 0xa0;
	strcpy(x.data, "scale_kernel");
	x.data_len = sizeof("scale_kernel");
	assert_int_equal(gp_model_ingest(m, &x, sizeof(x)), 0);
	c = nested(rec_h(GP_API_CU_MODULE_UNLOAD, T_TID, 0xa0, 0, 10, 0),
		   GP_API_CUDA_LAUNCH_KERNEL);
	feed(m, &c);

	const struct gp_process *p = proc(m, T_PID);

	assert_int_equal(p->mem.total.alloc_calls, 0);
	assert_int_equal(p->modules_loaded, 1);
	assert_int_equal(p->modules_unloaded, 1);
	assert_int_equal(p->functions_named, 1);
	assert_string_equal(gp_driver_function_name(p, 0xf0), "scale_kernel");
	assert_int_equal(p->api_calls, 0);
	gp_model_free(m);
}

/* The shapes split from STREAM, EVENT and NONE keep what those did by API id. */
static void destroys_and_nccl_groups(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	struct gp_api_call c;

	assert_non_null(m);
	c = rec_create(GP_API_CUDA_STREAM_CREATE, 0x5100);
	feed(m, &c);
	c = rec_h(GP_API_CUDA_STREAM_DESTROY, T_TID, 0x5100, 0, 10, 0);
	feed(m, &c);
	/* failed: not destroyed */
	c = rec_h(GP_API_CUDA_STREAM_DESTROY, T_TID, 0x5200, 0, 10, 400);
	feed(m, &c);
	c = rec_create(GP_API_CUDA_EVENT_CREATE, 0xe100);
	feed(m, &c);
	c = rec_h(GP_API_CUDA_EVENT_DESTROY, T_TID, 0xe100, 0, 10, 0);
	feed(m, &c);
	c = rec_h(GP_API_CUDA_EVENT_DESTROY, T_TID, 0xe200, 0, 10, 400);
	feed(m, &c);

	const struct gp_process *p = proc(m, T_PID);
	const struct gp_stream *s = gp_u64map_get(&p->streams, 0x5100);
	const struct gp_stream *failed = gp_u64map_get(&p->streams, 0x5200);

	assert_non_null(s);
	assert_int_equal(s->created, 1);
	assert_int_equal(s->destroyed, 1);
	assert_non_null(failed); /* the stream it named is listed, as before */
	assert_int_equal(failed->destroyed, 0);
	assert_int_equal(s->sync_calls, 0);
	assert_int_equal(p->events.created, 1);
	assert_int_equal(p->events.destroyed, 1);
	assert_int_equal(p->events.sync_calls, 0);
	assert_null(p->nccl);

	/* a group's start alone makes the process an NCCL one; its end counts the group */
	c = rec(GP_API_NCCL_GROUP_START, T_PID, T_TID, 2000, 5, 0);
	feed(m, &c);
	assert_non_null(p->nccl);
	assert_int_equal(p->nccl->group_calls, 0);
	c = rec(GP_API_NCCL_GROUP_END, T_PID, T_TID, 2010, 5, 0);
	feed(m, &c);
	c = rec(GP_API_NCCL_GROUP_END, T_PID, T_TID, 2020, 5, 3); /* failed */
	feed(m, &c);
	assert_int_equal(p->nccl->group_calls, 1);
	gp_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_api_has_a_shape_of_the_table),
		cmocka_unit_test(cookie_layout),
		cmocka_unit_test(per_api_cookie_flags),
		cmocka_unit_test(nccl_layouts),
		cmocka_unit_test(stream_slots_stacks_aggregation),
		cmocka_unit_test(nested_calls_reach_only_the_handle_handlers),
		cmocka_unit_test(destroys_and_nccl_groups),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
