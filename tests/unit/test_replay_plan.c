/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_replay_plan.c — the replay's plan built from model operations encoded
 * here (as a capture holds them): per-thread and per-stream order, objects
 * and cross-thread dependencies, think times, copy classification, kernel
 * durations from isolated synchronisations, redundant synchronisations, the
 * what-if and duration-table parsers, and the summary of a what-if's rounds.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "records.h"
#include "model/model_ops.h"
#include "replay/replay_plan.h"
#include "replay/replay_run.h"

#define PID 777
#define TA  777 /* main thread */
#define TB  778

struct oplist {
	struct {
		unsigned op;
		unsigned char *buf;
		size_t len;
	} v[256];
	size_t n, at;
};

static void add(struct oplist *l, unsigned op, ...)
{
	va_list ap;
	size_t n;

	assert_true(l->n < 256);
	va_start(ap, op);
	n = gp_op_vpack(NULL, 0, gp_model_op_format(op), ap);
	va_end(ap);
	l->v[l->n].buf = malloc(n ? n : 1);
	assert_non_null(l->v[l->n].buf);
	va_start(ap, op);
	gp_op_vpack(l->v[l->n].buf, n, gp_model_op_format(op), ap);
	va_end(ap);
	l->v[l->n].op = op;
	l->v[l->n++].len = n;
}

static void call(struct oplist *l, struct gp_api_call c)
{
	add(l, GP_MOP_INGEST, (const void *)&c, sizeof(c));
}

static int next(void *ctx, unsigned *op, const void **data, size_t *len)
{
	struct oplist *l = ctx;

	if (l->at == l->n)
		return 0;
	*op = l->v[l->at].op;
	*data = l->v[l->at].buf;
	*len = l->v[l->at++].len;
	return 1;
}

static void oplist_free(struct oplist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].buf);
}

static struct gp_rprocess *build(struct oplist *l, struct gp_rplan *plan,
				 const struct gp_kernel_times *kt)
{
	struct gp_op_source src = { .ctx = l, .next = next };
	char err[256];
	struct gp_rprocess *p;

	assert_int_equal(gp_rplan_build(&src, kt, plan, err, sizeof(err)), 0);
	p = gp_rplan_process(plan, PID);
	assert_non_null(p);
	return p;
}

/* A call of api by tid over [ts, ts + dur). */
static struct gp_api_call c_at(enum gp_api_id api, __u32 tid, __u64 ts, __u64 dur)
{
	return rec(api, PID, tid, ts, dur, 0);
}

static struct gp_api_call c_out(enum gp_api_id api, __u32 tid, __u64 ts, __u64 dur, __u64 out,
				__u64 a1)
{
	struct gp_api_call c = c_at(api, tid, ts, dur);

	c.args[0] = 0x7ffc0000;
	c.args[1] = a1;
	c.out = out;
	c.hdr.flags |= GP_EVF_OUT_VALID;
	return c;
}

static struct gp_api_call c_launch(__u32 tid, __u64 ts, __u64 dur, __u64 func, __u64 stream)
{
	struct gp_api_call c = c_at(GP_API_CUDA_LAUNCH_KERNEL, tid, ts, dur);

	c.args[0] = func;
	c.args[1] = 1 | (1ull << 32);
	c.args[2] = 1;
	c.args[3] = 32 | (1ull << 32);
	c.args[4] = 1;
	c.args[7] = stream;
	c.ret_addr = 0x401000 + func;
	return c;
}

static struct gp_api_call c_h(enum gp_api_id api, __u32 tid, __u64 ts, __u64 dur, __u64 a0,
			      __u64 a1)
{
	struct gp_api_call c = c_at(api, tid, ts, dur);

	c.args[0] = a0;
	c.args[1] = a1;
	return c;
}

static struct gp_api_call c_copy(enum gp_api_id api, __u32 tid, __u64 ts, __u64 dur, __u64 dst,
				 __u64 src, __u64 bytes, int kind, __u64 stream)
{
	struct gp_api_call c = c_at(api, tid, ts, dur);

	c.args[0] = dst;
	c.args[1] = src;
	c.args[2] = bytes;
	c.args[3] = (__u64)kind;
	c.args[4] = stream;
	return c;
}

#define DEV	  0x600000000000ull
#define PINNED	  0x7f0000000000ull
#define PAGEABLE  0x55550000ull
#define S1	  0x1111000ull
#define S2	  0x2222000ull
#define EV	  0x3333000ull
#define F_PRODUCE 0x10
#define F_CONSUME 0x20

static void header(struct oplist *l)
{
	add(l, GP_MOP_PROCESS_ADD, PID, "app", "app --x", (__u64)0, 1);
	add(l, GP_MOP_THREAD_NAME, PID, TB, "consumer");
	add(l, GP_MOP_KERNEL_NAME, PID, (__u64)F_PRODUCE, (__u64)(0x401000 + F_PRODUCE), 0,
	    "produce", "");
	add(l, GP_MOP_KERNEL_NAME, PID, (__u64)F_CONSUME, (__u64)(0x401000 + F_CONSUME), 0,
	    "consume", "");
}

/*
 * Thread A: allocates, creates s1 (non-blocking) and an event, then on s1:
 * a pinned copy, "produce", a record; later a pageable synchronous copy.
 * Thread B: creates s2, waits for the event, "consume", synchronises twice.
 * Records arrive out of entry order (as the ring buffer may hand them).
 */
static void two_threads(struct oplist *l)
{
	header(l);
	call(l, c_out(GP_API_CUDA_MALLOC, TA, 1000, 100, DEV, 1 << 20));
	call(l, c_out(GP_API_CUDA_MALLOC_HOST, TA, 2000, 100, PINNED, 1 << 20));
	call(l, c_out(GP_API_CUDA_STREAM_CREATE_WITH_FLAGS, TA, 3000, 10, S1, 1));
	call(l, c_out(GP_API_CUDA_EVENT_CREATE_WITH_FLAGS, TA, 3100, 10, EV, 2));
	call(l, c_out(GP_API_CUDA_STREAM_CREATE_WITH_FLAGS, TB, 3200, 10, S2, 1));
	call(l, c_copy(GP_API_CUDA_MEMCPY_ASYNC, TA, 10000, 20, DEV, PINNED + 4096, 65536,
		       GP_MEMCPY_HTOD, S1));
	call(l, c_launch(TA, 11000, 30, F_PRODUCE, S1));
	call(l, c_h(GP_API_CUDA_EVENT_RECORD, TA, 12000, 5, EV, S1));
	/* B's wait is handed over before A's record returned to the ring buffer */
	call(l, c_h(GP_API_CUDA_STREAM_WAIT_EVENT, TB, 13000, 5, S2, EV));
	call(l, c_launch(TB, 14000, 30, F_CONSUME, S2));
	call(l, c_h(GP_API_CUDA_STREAM_SYNCHRONIZE, TB, 15000, 5000, S2, 0));
	call(l, c_h(GP_API_CUDA_STREAM_SYNCHRONIZE, TB, 20100, 5, S2, 0));
	call(l, c_copy(GP_API_CUDA_MEMCPY, TA, 30000, 8000, DEV, PAGEABLE, 1 << 20, GP_MEMCPY_HTOD,
		       0));
	/* nested implementation of the copy above: not an operation of its own */
	{
		struct gp_api_call n = c_copy(GP_API_CU_MEMCPY_HTOD, TA, 30010, 7900, DEV, PAGEABLE,
					      1 << 20, 0, 0);

		n.hdr.flags |= (__u32)GP_API_CUDA_MEMCPY << GP_EVF_PARENT_SHIFT;
		call(l, n);
	}
	/* a failed call: host time only */
	call(l, rec(GP_API_CUDA_MEMCPY, PID, TA, 39000, 50, 1));
	call(l, c_at(GP_API_CUDA_DEVICE_SYNCHRONIZE, TA, 40000, 10));
}

static const struct gp_rop *stream_op(const struct gp_rprocess *p, int s, size_t k)
{
	for (size_t i = 0; i < p->nops; i++)
		if (p->ops[i].stream == s && !k--)
			return &p->ops[i];
	return NULL;
}

static int stream_named(const struct gp_rprocess *p, const char *label)
{
	char buf[32];

	for (size_t i = 0; i < p->nobjs; i++) {
		if (p->objs[i].kind != GP_ROBJ_STREAM)
			continue;
		gp_robj_label(&p->objs[i], buf, sizeof(buf));
		if (!strcmp(buf, label))
			return (int)i;
	}
	return -1;
}

static void test_threads_streams_order(void **state)
{
	struct oplist l = { 0 };
	struct gp_rplan plan;
	struct gp_rprocess *p;
	int s1, s2, legacy;
	char line[256];

	two_threads(&l);
	p = build(&l, &plan, NULL);
	assert_string_equal(p->comm, "app");
	assert_int_equal(p->nthreads, 2);
	assert_int_equal(p->threads[0].tid, TA);
	assert_int_equal(p->threads[1].tid, TB);
	assert_string_equal(p->threads[1].name, "consumer");
	assert_int_equal(p->nested_skipped, 1);
	assert_int_equal(p->failed_skipped, 1);
	assert_int_equal(p->nops, 11);
	assert_int_equal(p->threads[0].nops, 7);
	assert_int_equal(p->threads[1].nops, 4);
	for (size_t i = 1; i < p->nops; i++)
		assert_true(p->ops[i - 1].ts_ns <= p->ops[i].ts_ns);

	s1 = stream_named(p, "s0");
	s2 = stream_named(p, "s1");
	legacy = stream_named(p, "legacy");
	assert_true(s1 >= 0 && s2 >= 0 && legacy >= 0);
	assert_int_equal(p->objs[s1].handle, S1);
	assert_int_equal(p->objs[s1].flags, 1);
	const char *want1[] = { "copy HtoD pinned async 65536", "kernel produce",
				"event_record e0" };
	const char *want2[] = { "stream_wait_event e0", "kernel consume", "stream_sync",
				"stream_sync" };
	for (size_t k = 0; k < 3; k++) {
		gp_rop_describe(p, stream_op(p, s1, k), line, sizeof(line));
		assert_string_equal(line, want1[k]);
	}
	assert_null(stream_op(p, s1, 3));
	for (size_t k = 0; k < 4; k++) {
		gp_rop_describe(p, stream_op(p, s2, k), line, sizeof(line));
		assert_string_equal(line, want2[k]);
	}
	gp_rop_describe(p, stream_op(p, legacy, 0), line, sizeof(line));
	assert_string_equal(line, "copy HtoD pageable sync 1048576");
	assert_true(stream_op(p, legacy, 0)->legacy_sync);
	assert_null(stream_op(p, legacy, 1));
	gp_rplan_release(&plan);
	oplist_free(&l);
}

static bool has_dep(const struct gp_rop *op, int obj, __u32 need)
{
	for (unsigned d = 0; d < op->ndeps; d++)
		if (op->deps[d].obj == (__u32)obj && op->deps[d].need == need)
			return true;
	return false;
}

static void test_dependencies_and_think_times(void **state)
{
	struct oplist l = { 0 };
	struct gp_rplan plan;
	struct gp_rprocess *p;
	const struct gp_rop *rec_op, *wait, *copy, *launch;
	int ev = -1, s1;

	two_threads(&l);
	p = build(&l, &plan, NULL);
	s1 = stream_named(p, "s0");
	for (size_t i = 0; i < p->nobjs; i++)
		if (p->objs[i].kind == GP_ROBJ_EVENT)
			ev = (int)i;
	assert_true(ev >= 0);
	assert_int_equal(p->objs[ev].flags, 2);
	copy = stream_op(p, s1, 0);
	launch = stream_op(p, s1, 1);
	rec_op = stream_op(p, s1, 2);
	wait = stream_op(p, stream_named(p, "s1"), 0);
	/* the wait is issued only after the record it saw was issued, whichever thread runs first */
	assert_int_equal(rec_op->event, ev);
	assert_true(has_dep(wait, ev, 1));
	/* stream order: the launch after the copy, the record after both */
	assert_true(has_dep(launch, s1, 1));
	assert_true(has_dep(rec_op, s1, 2));
	/* the copy uses both allocations, made by their operations before it */
	assert_int_equal(p->objs[copy->mem[0]].mem, GP_RMEM_DEVICE);
	assert_int_equal(p->objs[copy->mem[1]].mem, GP_RMEM_PINNED);
	assert_int_equal(copy->off[1], 4096);
	assert_true(has_dep(copy, copy->mem[0], 1));
	assert_true(has_dep(copy, copy->mem[1], 1));
	/* think time: since the thread's previous planned call returned; the first: since the process's first call */
	assert_int_equal(p->start_ns, 1000);
	assert_int_equal(p->end_ns, 40010);
	assert_int_equal(p->ops[p->threads[0].ops[0]].think_ns, 0);
	assert_int_equal(p->ops[p->threads[0].ops[1]].think_ns, 2000 - 1100);
	assert_int_equal(copy->think_ns,
			 10000 - 2100); /* the stream and event creations are host time */
	assert_int_equal(launch->think_ns, 11000 - 10020);
	assert_int_equal(wait->think_ns,
			 13000 - 1000); /* B's first: its offset from the process's start */
	assert_int_equal(stream_op(p, stream_named(p, "s1"), 1)->think_ns, 14000 - 13005);
	/* the failed copy's 50 ns and the gap around it are think time of the device synchronisation */
	assert_int_equal(p->ops[p->nops - 1].think_ns, 40000 - 38000);
	gp_rplan_release(&plan);
	oplist_free(&l);
}

static void test_kernel_durations_and_redundant_syncs(void **state)
{
	struct oplist l = { 0 };
	struct gp_rplan plan;
	struct gp_rprocess *p;
	const struct gp_rop *sync1, *sync2, *devsync;
	int s2;

	two_threads(&l);
	p = build(&l, &plan, NULL);
	s2 = stream_named(p, "s1");
	/* "consume" followed a wait: not alone on an idle stream; "produce" was never synchronised alone */
	for (size_t k = 0; k < p->nkernels; k++) {
		assert_int_equal(p->kernels[k].launches, 1);
		assert_int_equal(p->kernels[k].source, GP_KDUR_NONE);
	}
	sync1 = stream_op(p, s2, 2);
	sync2 = stream_op(p, s2, 3);
	devsync = &p->ops[p->nops - 1];
	assert_false(sync1->redundant);
	assert_true(sync2->redundant);
	/* s1 still had its copy, kernel and record unsynchronised at the device synchronisation */
	assert_false(devsync->redundant);
	assert_int_equal(p->redundant_syncs, 1);
	gp_rplan_release(&plan);
	oplist_free(&l);

	/* a kernel alone on an idle stream, synchronised: its duration is the synchronisation's return - the launch */
	struct oplist m = { 0 };

	header(&m);
	call(&m, c_out(GP_API_CUDA_STREAM_CREATE_WITH_FLAGS, TA, 100, 10, S1, 0));
	call(&m, c_launch(TA, 1000, 20, F_PRODUCE, S1));
	call(&m, c_h(GP_API_CUDA_STREAM_SYNCHRONIZE, TA, 1100, 2900, S1, 0));
	call(&m, c_launch(TA, 5000, 20, F_PRODUCE, S1));
	call(&m, c_h(GP_API_CUDA_STREAM_SYNCHRONIZE, TA, 5050, 5950, S1, 0));
	call(&m, c_launch(TA, 12000, 20, F_PRODUCE, S1));
	{ /* a failed launch of "produce" is not replayed, nor mistaken for the next launch's kernel */
		struct gp_api_call f = c_launch(TA, 12050, 20, F_PRODUCE, S1);

		f.ret = 98;
		call(&m, f);
	}
	call(&m, c_launch(TA, 12100, 20, F_CONSUME, S1));
	{ /* the same after the later kernel row: a failed "consume", then "produce" */
		struct gp_api_call f = c_launch(TA, 12120, 20, F_CONSUME, S1);

		f.ret = 98;
		call(&m, f);
	}
	call(&m, c_launch(TA, 12150, 20, F_PRODUCE, S1));
	call(&m, c_h(GP_API_CUDA_STREAM_SYNCHRONIZE, TA, 12200, 5000, S1, 0));
	call(&m, c_at(GP_API_CUDA_DEVICE_SYNCHRONIZE, TA, 20000, 5));
	p = build(&m, &plan, NULL);
	for (size_t k = 0; k < p->nkernels; k++) {
		const struct gp_rkernel *rk = &p->kernels[k];

		if (!strcmp(rk->name, "produce")) {
			assert_int_equal(rk->launches, 4);
			assert_int_equal(rk->observations, 2);
			assert_int_equal(rk->source, GP_KDUR_INFERRED);
			assert_int_equal(
				rk->dur_ns,
				11000 - 5000); /* the median of 3000 and 6000: the upper one */
		} else {
			assert_string_equal(rk->name, "consume");
			assert_int_equal(rk->launches, 1);
			assert_int_equal(rk->observations, 0);
			assert_int_equal(rk->source, GP_KDUR_NONE);
		}
	}
	assert_true(p->ops[p->nops - 1].redundant);
	gp_rplan_release(&plan);

	/* a duration table wins over inference, matched by name */
	struct gp_kernel_times kt;
	char err[128];

	m.at = 0;
	assert_int_equal(gp_kernel_times_parse("consume=250\nproduce=1.5", &kt, err, sizeof(err)),
			 0);
	p = build(&m, &plan, &kt);
	for (size_t k = 0; k < p->nkernels; k++) {
		assert_int_equal(p->kernels[k].source, GP_KDUR_TABLE);
		assert_int_equal(p->kernels[k].dur_ns,
				 !strcmp(p->kernels[k].name, "produce") ? 1500 : 250000);
	}
	gp_rplan_release(&plan);
	gp_kernel_times_release(&kt);
	oplist_free(&m);
}

/* A device synchronisation after a synchronous copy waits for nothing; after the same copy made async, it does. */
static void test_redundant_depends_on_async_copies(void **state)
{
	struct oplist l = { 0 };
	struct gp_rplan plan;
	struct gp_rprocess *p;
	const struct gp_rop *sync;

	header(&l);
	call(&l, c_out(GP_API_CUDA_MALLOC, TA, 1000, 100, DEV, 1 << 20));
	call(&l, c_copy(GP_API_CUDA_MEMCPY, TA, 2000, 500, DEV, PAGEABLE, 4096, GP_MEMCPY_HTOD, 0));
	call(&l, c_at(GP_API_CUDA_DEVICE_SYNCHRONIZE, TA, 3000, 5));
	call(&l, c_h(GP_API_CUDA_EVENT_SYNCHRONIZE, TA, 4000, 5, EV, 0)); /* never recorded */
	p = build(&l, &plan, NULL);
	sync = &p->ops[2];
	assert_int_equal(sync->kind, GP_ROP_DEVICE_SYNC);
	assert_true(sync->redundant);
	assert_false(sync->redundant_if_async);
	assert_true(p->ops[3].redundant);
	assert_true(p->ops[3].redundant_if_async);
	assert_int_equal(p->redundant_syncs, 2);
	gp_rplan_release(&plan);
	oplist_free(&l);
}

/* Device memory the capture never saw allocated, and a handle re-created: scratch, and a new object. */
static void test_unknown_memory_and_reused_handles(void **state)
{
	struct oplist l = { 0 };
	struct gp_rplan plan;
	struct gp_rprocess *p;
	int streams = 0;

	header(&l);
	call(&l, c_out(GP_API_CUDA_STREAM_CREATE_WITH_FLAGS, TA, 100, 10, S1, 0));
	call(&l, c_copy(GP_API_CUDA_MEMCPY_ASYNC, TA, 1000, 10, DEV + 512, PINNED, 8192,
			GP_MEMCPY_HTOD, S1));
	call(&l, c_h(GP_API_CUDA_STREAM_DESTROY, TA, 2000, 10, S1, 0));
	call(&l, c_out(GP_API_CUDA_STREAM_CREATE_WITH_FLAGS, TA, 3000, 10, S1, 1));
	call(&l, c_h(GP_API_CUDA_STREAM_SYNCHRONIZE, TA, 4000, 10, S1, 0));
	call(&l, c_h(GP_API_CUDA_FREE, TA, 5000, 10, DEV, 0)); /* allocated before the capture */
	p = build(&l, &plan, NULL);
	assert_int_equal(p->nops, 2);
	assert_int_equal(p->ops[0].mem[0], -1);
	assert_int_equal(p->ops[0].hostmem, GP_HM_PAGEABLE); /* no pinned range known: pageable */
	assert_int_equal(p->scratch_device_bytes, 8192);
	assert_int_not_equal(p->ops[0].stream, p->ops[1].stream);
	for (size_t i = 0; i < p->nobjs; i++)
		streams += p->objs[i].kind == GP_ROBJ_STREAM;
	assert_int_equal(streams, 2);
	assert_int_equal(p->not_replayed[GP_API_CUDA_FREE], 1);
	gp_rplan_release(&plan);
	oplist_free(&l);
}

static void test_parsers(void **state)
{
	unsigned what;
	char err[256], name[64];
	struct gp_kernel_times kt;

	assert_int_equal(gp_whatif_parse("pinned", &what, err, sizeof(err)), 0);
	assert_int_equal(what, GP_WHATIF_PINNED);
	assert_int_equal(gp_whatif_parse("no-redundant-sync,async-copies", &what, err, sizeof(err)),
			 0);
	assert_int_equal(what, GP_WHATIF_NO_REDUNDANT_SYNC | GP_WHATIF_ASYNC_COPIES);
	gp_whatif_name(what, name, sizeof(name));
	assert_string_equal(name, "async-copies,no-redundant-sync");
	assert_int_equal(gp_whatif_parse("pinned,faster", &what, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'faster'"));
	assert_int_equal(gp_whatif_parse("", &what, err, sizeof(err)), -EINVAL);
	assert_int_equal(gp_whatif_parse("pinned,", &what, err, sizeof(err)), -EINVAL);
	assert_int_equal(gp_whatif_parse("none", &what, err, sizeof(err)), 0);
	assert_int_equal(what, GP_WHATIF_NONE);
	assert_int_equal(what & GP_WHATIF_ALL, 0); /* changes nothing */
	gp_whatif_name(what, name, sizeof(name));
	assert_string_equal(name, "none");
	assert_int_equal(gp_whatif_parse("pinned,none", &what, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "no other change"));
	assert_int_equal(gp_whatif_parse("none,pinned", &what, err, sizeof(err)), -EINVAL);

	assert_int_equal(
		gp_kernel_times_parse("# durations\n a=1 , _Z1bv=2.5\n\n", &kt, err, sizeof(err)),
		0);
	assert_int_equal(kt.n, 2);
	assert_string_equal(kt.rows[0].name, "a");
	assert_int_equal(kt.rows[1].ns, 2500);
	gp_kernel_times_release(&kt);
	assert_int_equal(gp_kernel_times_parse("a=fast", &kt, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "a=fast"));
	assert_int_equal(gp_kernel_times_parse("=3", &kt, err, sizeof(err)), -EINVAL);
	assert_int_equal(gp_kernel_times_parse("a=-1", &kt, err, sizeof(err)), -EINVAL);
}

/* The median round and the range of the rounds' savings, whatever order the rounds came in. */
static void test_whatif_summary(void **state)
{
	static const __s64 savings[] = { 5, -3, 12, 7, 5, 0, 9 }; /* sorted: -3 0 5 5 7 9 12 */
	struct gp_whatif_stats st = { .rounds = 7 };

	for (unsigned i = 0; i < st.rounds; i++)
		st.round[i] = (struct gp_whatif_round){ .baseline_ns = (__u64)(100 + savings[i]),
							.changed_ns = 100,
							.changed_first = i & 1 };
	gp_whatif_summarize(&st);
	assert_int_equal(st.saving_ns, 5);
	assert_int_equal(
		st.median,
		4); /* of equal savings the earlier round sorts first: round 4 is the middle */
	assert_int_equal(st.saving_min_ns, -3);
	assert_int_equal(st.saving_max_ns, 12);

	st.rounds = 1; /* one round: its saving, no range */
	gp_whatif_summarize(&st);
	assert_int_equal(st.median, 0);
	assert_int_equal(st.saving_ns, 5);
	assert_int_equal(st.saving_min_ns, 5);
	assert_int_equal(st.saving_max_ns, 5);

	st.rounds = 3; /* a round whose changed replay was the slower: a negative saving */
	st.round[0] = (struct gp_whatif_round){ .baseline_ns = 100, .changed_ns = 130 };
	st.round[1] = (struct gp_whatif_round){ .baseline_ns = 100, .changed_ns = 90 };
	st.round[2] = (struct gp_whatif_round){ .baseline_ns = 100, .changed_ns = 101 };
	gp_whatif_summarize(&st);
	assert_int_equal(st.median, 2);
	assert_int_equal(st.saving_ns, -1);
	assert_int_equal(st.saving_min_ns, -30);
	assert_int_equal(st.saving_max_ns, 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_streams_order),
		cmocka_unit_test(test_dependencies_and_think_times),
		cmocka_unit_test(test_kernel_durations_and_redundant_syncs),
		cmocka_unit_test(test_redundant_depends_on_async_copies),
		cmocka_unit_test(test_unknown_memory_and_reused_handles),
		cmocka_unit_test(test_parsers),
		cmocka_unit_test(test_whatif_summary),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
