/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ingest.c — gp_model_ingest(): validates one record, folds it into the API
 * statistics and the calling thread, and hands it to its shape's handler
 * (api.h's GP_SHAPE_TABLE, shapes.h: memory, transfers, kernels, driver
 * handles, NCCL, streams), then counts the GPU work it queued per layer and
 * per stream. A call made inside another traced call is that call's
 * implementation: listed (nesting.c), never counted twice. Each outermost
 * call is then shown, decoded, to the observers, in the order they were added
 * (the timeline, the SQL export).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"
#include "model/model_ops.h"

static struct gp_api_stats *api_stats_get(struct gp_process *p, enum gp_api_id api)
{
	if (!p->api[api])
		p->api[api] = calloc(1, sizeof(*p->api[api]));
	return p->api[api];
}

static void count_error(struct gp_api_stats *st, __s32 code)
{
	st->errors++;
	for (size_t i = 0; i < st->ncodes; i++) {
		if (st->codes[i].code == code) {
			st->codes[i].count++;
			return;
		}
	}

	struct gp_errcount *codes = realloc(st->codes, (st->ncodes + 1) * sizeof(*codes));

	if (!codes)
		return; /* the error still counts; only its code is lost */
	st->codes = codes;
	codes[st->ncodes++] = (struct gp_errcount){ .code = code, .count = 1 };
}

static struct gp_thread *count_thread(struct gp_process *p, const struct gp_api_call *c)
{
	struct gp_thread *t = gp_process_thread_get(p, c->hdr.tid);

	if (!t)
		return NULL;
	if (!t->calls || c->hdr.ts_ns < t->first_ns)
		t->first_ns = c->hdr.ts_ns;
	if (c->hdr.ts_ns + c->dur_ns > t->last_ns)
		t->last_ns = c->hdr.ts_ns + c->dur_ns;
	t->calls++;
	t->host_ns += c->dur_ns;
	if (c->ret)
		t->errors++;
	return t;
}

/*
 * Each shape's handler (shapes.h), and whether it also sees the calls made
 * inside another traced call: from the table, so that every shape has both.
 */
static const struct {
	void (*handler)(struct gp_shape_call *x);
	bool nested;
} shape_model[GP_SHAPE_MAX] = {
#define GP_SHAPE_MODEL(name, ck, stream, stack, agg, nest, queues, h) \
	[GP_SHAPE_##name] = { .handler = gp_shape_##h, .nested = nest },
	GP_SHAPE_TABLE(GP_SHAPE_MODEL)
#undef GP_SHAPE_MODEL
};

void gp_shape_none(struct gp_shape_call *x)
{
}

void gp_shape_set_device(struct gp_shape_call *x)
{
	struct gp_thread *t = gp_u64map_get(&x->p->threads, x->c->hdr.tid);

	if (t && !x->c->ret)
		t->device = (__s32)x->c->args[0]; /* int in edi: the low 32 bits of rdi */
}

/* The combined GPU work view: what each layer queued by itself. */
static void count_work(struct gp_process *p, const struct gp_api_call *c)
{
	const struct gp_api_info *a = &gp_apis[c->api];
	struct gp_layer_work *w;

	if (c->ret || a->family < GP_FAM_CUDART || a->family > GP_FAM_NCCL)
		return;
	w = &p->work[a->family];
	switch (gp_shapes[a->shape].queues) {
	case GP_Q_KERNEL:
		w->launches++;
		break;
	case GP_Q_GRAPH:
		w->graph_launches++;
		break;
	case GP_Q_COPY:
		w->copies++;
		w->copy_bytes += gp_transfer_bytes(c);
		break;
	case GP_Q_MEMSET:
		w->memsets++;
		w->memset_bytes += gp_transfer_bytes(c);
		break;
	case GP_Q_COLL: /* nccl.c's handler counts it: it knows its bytes */
	case GP_Q_NONE:
		return;
	}
	w->host_ns += c->dur_ns;
}

int gp_model_add_observer(struct gp_model *m, const struct gp_model_observer *obs)
{
	if (!obs)
		return -EINVAL;
	if (m->writer->nobservers == GP_MODEL_OBSERVERS_MAX)
		return -ENOSPC;
	m->writer->observers[m->writer->nobservers++] = *obs;
	return 0;
}

int gp_model_remove_observer(struct gp_model *m, const void *ctx)
{
	size_t kept = 0;

	for (size_t i = 0; i < m->writer->nobservers; i++)
		if (m->writer->observers[i].ctx != ctx)
			m->writer->observers[kept++] = m->writer->observers[i];
	if (kept == m->writer->nobservers)
		return -ENOENT;
	m->writer->nobservers = kept;
	return 0;
}

/* Some observer wants the outermost calls (building their view costs a little). */
static bool calls_observed(const struct gp_model *m)
{
	for (size_t i = 0; i < m->writer->nobservers; i++)
		if (m->writer->observers[i].call)
			return true;
	return false;
}

/* Everything the observer needs of an outermost call, from what the aggregators decided. */
static void observe(struct gp_model *m, const struct gp_process *p, const struct gp_api_call *c,
		    const struct gp_op *op, const struct gp_stream_fx *fx, __u64 live_before,
		    const struct gp_stack *stack)
{
	const struct gp_api_info *a = &gp_apis[c->api];
	struct gp_call_view v = {
		.pid = c->hdr.tgid,
		.tid = c->hdr.tid,
		.api = c->api,
		.ts_ns = c->hdr.ts_ns,
		.dur_ns = c->dur_ns,
		.ret = c->ret,
		.error = c->ret ? gp_error_name(a->family, c->ret) : NULL,
		.op = gp_op_kind_name(op->kind),
		.bytes = op->bytes,
		.has_stream = fx->has_stream,
		.stream = fx->stream,
		.queued = fx->queued,
		.queue_seq = fx->queue_seq,
		.memory_changed = p->mem.total.live_bytes != live_before,
		.device_live_bytes = p->mem.total.live_bytes,
		.stack = stack,
		.op_detail = op,
	};

	if (op->kind == GP_OP_COPY) {
		v.direction = gp_dir_name(op->dir);
		v.host_memory = gp_hostmem_name(op->hostmem);
	}
	if (op->kind == GP_OP_KERNEL && op->kernel) {
		v.kernel = op->kernel->name;
		v.kernel_row = op->kernel;
	}
	if (fx->sync) {
		v.covered = p->writer->queued.covers;
		v.ncovered = p->writer->queued.ncovers;
	}
	for (size_t i = 0; i < m->writer->nobservers; i++)
		if (m->writer->observers[i].call)
			m->writer->observers[i].call(m->writer->observers[i].ctx, &v);
}

static int validate(const void *data, size_t len)
{
	const struct gp_api_call *c = data;

	if (!data || len < sizeof(struct gp_event_hdr))
		return -EINVAL;
	if (c->hdr.type == GP_EV_THREAD_CPU)
		return c->hdr.size == sizeof(struct gp_thread_cpu) &&
				       len >= sizeof(struct gp_thread_cpu)
			       ? 0
			       : -EINVAL;
	if (c->hdr.type == GP_EV_SCHED_SLICE) {
		const struct gp_sched_slice *sl = data;

		return c->hdr.size == sizeof(*sl) && len >= sizeof(*sl) &&
				       sl->end_ns >= sl->hdr.ts_ns && sl->left >= GP_SL_BLOCKED &&
				       sl->left <= GP_SL_EXITED
			       ? 0
			       : -EINVAL;
	}
	if (c->hdr.type == GP_EV_API_CALL_EXT) {
		const struct gp_api_call_ext *x = data;

		if (c->hdr.size != sizeof(*x) || len < sizeof(*x) || x->data_len > GP_EXT_DATA_MAX)
			return -EINVAL;
	} else if (c->hdr.type == GP_EV_API_CALL_STACK) {
		const struct gp_api_call_stack *k = data;

		if (len < GP_STACK_REC_SIZE(1) || !k->nframes || k->nframes > GP_STACK_MAX_FRAMES ||
		    c->hdr.size != GP_STACK_REC_SIZE(k->nframes) || len < c->hdr.size)
			return -EINVAL;
	} else if (c->hdr.type == GP_EV_API_CALL_USTACK) {
		const struct gp_api_call_ustack *k = data;

		if (len < GP_USTACK_REC_SIZE(1, 0) || !k->nframes ||
		    k->nframes > GP_USTACK_MAX_FRAMES || k->npy > GP_PY_MAX_FRAMES ||
		    k->stop >= GP_STOP_MAX ||
		    c->hdr.size != GP_USTACK_REC_SIZE(k->nframes, k->npy) || len < c->hdr.size)
			return -EINVAL;
	} else if (c->hdr.type != GP_EV_API_CALL || c->hdr.size != sizeof(*c) || len < sizeof(*c)) {
		return -EINVAL;
	}
	if (c->api <= GP_API_INVALID || c->api >= GP_API_MAX)
		return -EINVAL;
	return 0;
}

/* The stack a record carries, in one shape for both kinds of stack record; NULL: none. */
static struct gp_stack_view *stack_view(const void *data, __u16 type, struct gp_stack_view *v)
{
	if (type == GP_EV_API_CALL_USTACK) {
		const struct gp_api_call_ustack *k = data;

		*v = (struct gp_stack_view){ .ips = k->words,
					     .nframes = k->nframes,
					     .py = k->words + k->nframes,
					     .npy = k->npy,
					     .stop = k->stop,
					     .detail = k->stop_detail,
					     .py_status = k->py,
					     .frames_fp = k->frames_fp };
		return v;
	}
	if (type == GP_EV_API_CALL_STACK) { /* older captures: frame pointers only */
		const struct gp_api_call_stack *k = data;

		*v = (struct gp_stack_view){ .ips = k->ips,
					     .nframes = k->nframes,
					     .frames_fp = (__u8)k->nframes,
					     .stop = (k->stack_flags & GP_STF_UNREAD) ? GP_STOP_READ
						     : k->nframes == GP_STACK_MAX_FRAMES
							     ? GP_STOP_DEPTH
							     : GP_STOP_FP_END };
		return v;
	}
	return NULL;
}

static int ingest(struct gp_model *m, const void *data, size_t len)
{
	struct gp_api_call c;

	if (validate(data, len)) {
		gp_model_drop_add(m, "malformed_records", 1);
		return -EINVAL;
	}
	if (((const struct gp_event_hdr *)data)->type == GP_EV_THREAD_CPU) {
		struct gp_thread_cpu r;

		memcpy(&r, data, sizeof(r));
		return gp_cpu_thread_record(m, &r);
	}
	if (((const struct gp_event_hdr *)data)->type == GP_EV_SCHED_SLICE) {
		struct gp_sched_slice sl;

		/* nothing in the reports: the timeline's alone (its totals are the CPU accounts') */
		memcpy(&sl, data, sizeof(sl));
		for (size_t i = 0; i < m->writer->nobservers; i++)
			if (m->writer->observers[i].sched)
				m->writer->observers[i].sched(m->writer->observers[i].ctx, &sl);
		return 0;
	}
	memcpy(&c, data, sizeof(c)); /* ring-buffer records need not be aligned for us */

	const struct gp_api_call_ext *x = c.hdr.type == GP_EV_API_CALL_EXT ? data : NULL;
	struct gp_stack_view sv, *stk = stack_view(data, c.hdr.type, &sv);
	struct gp_op op = { .kind = (gp_apis[c.api].attr & GP_A_SYNC_CALL) ? GP_OP_SYNC
									   : GP_OP_OTHER };
	const char *ext = x ? x->data : NULL;
	__u32 ext_len = x ? x->data_len : 0;
	struct gp_process *p = gp_model_process_get(m, c.hdr.tgid);
	struct gp_api_stats *st = p ? api_stats_get(p, c.api) : NULL;
	__u16 outer = GP_EVF_PARENT(c.hdr.flags);
	const struct gp_api_info *a = &gp_apis[c.api];
	struct gp_stream_fx fx = { .sync = (a->attr & GP_A_SYNC_CALL) != 0 };
	struct gp_shape_call call = {
		.m = m, .p = p, .c = &c, .ext = ext, .ext_len = ext_len, .op = &op, .fx = &fx
	};
	const struct gp_stack *stack = NULL;
	__u64 live_before;

	if (!st)
		return -ENOMEM;
	live_before = p->mem.total.live_bytes;
	if (c.hdr.flags & GP_EVF_EXT_TRUNC) /* a name cut at 1 KiB, more than 64 communicators */
		gp_model_drop_add(m, "ext_truncated", 1);
	if (outer) { /* the implementation of the call around it: counted there */
		/* the handles it creates are still the process's */
		if (shape_model[a->shape].nested)
			shape_model[a->shape].handler(&call);
		gp_api_nested(p, &c, outer, !(c.hdr.flags & GP_EVF_PARENT_COUNTED));
		return 0;
	}
	gp_api_outer_returned(p, c.hdr.tid, c.hdr.ts_ns, c.hdr.ts_ns + c.dur_ns);
	m->writer->cur_ips = stk ? stk->ips : NULL; /* kernel naming may use the launch's stack */
	m->writer->cur_nips = stk ? stk->nframes : 0;
	gp_stats_add(&st->time, c.dur_ns);
	if (c.ret) {
		count_error(st, c.ret);
		st->error_ns += c.dur_ns;
	}
	p->api_calls++;
	p->api_total_ns += c.dur_ns;
	gp_cpu_call(p, count_thread(p, &c), st, &c);

	p->writer->queued.ncovers = 0; /* what a synchronisation covers is told per call */
	shape_model[a->shape].handler(&call);
	count_work(p, &c);
	gp_stream_work(p, &c, &fx);
	/* a synchronisation that covered no work queued since the last one */
	if (fx.sync && !c.ret && !p->writer->queued.ncovers) {
		st->redundant_syncs++;
		st->redundant_ns += c.dur_ns;
	}
	if (stk)
		stack = gp_stacks_add(m, p, &c, &op, stk);
	if (calls_observed(m))
		observe(m, p, &c, &op, &fx, live_before, stack);
	m->writer->cur_ips = NULL;
	m->writer->cur_nips = 0;
	return 0;
}

int gp_model_ingest(struct gp_model *m, const void *data, size_t len)
{
	int err = ingest(m, data, len);
	struct gp_event_hdr h;

	if (!err) { /* valid: at least a header, and a whole record of its type */
		__u64 end, more = 0;

		memcpy(&h, data, sizeof(h));
		end = h.ts_ns;
		if (gp_event_is_call(h.type))
			memcpy(&more, (const char *)data + offsetof(struct gp_api_call, dur_ns),
			       sizeof(more));
		else if (h.type == GP_EV_THREAD_CPU)
			memcpy(&end, (const char *)data + offsetof(struct gp_thread_cpu, end_ns),
			       sizeof(end));
		else if (h.type == GP_EV_SCHED_SLICE)
			memcpy(&end, (const char *)data + offsetof(struct gp_sched_slice, end_ns),
			       sizeof(end));
		if (end + more > m->last_event_ns)
			m->last_event_ns = end + more;
	}
	/* after the resolver's answers (a kernel's name), which a capture records as they are given */
	gp_model_tap_ingest(m, &(struct gp_op_ingest){ .record = { data, len } });
	return err;
}
