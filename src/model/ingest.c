/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ingest.c — gp_model_ingest(): validates one record, folds it into the API
 * statistics and the calling thread, and hands it to the aggregator its
 * shape belongs to (memory, transfers, kernels, driver handles, NCCL,
 * streams). A call made inside another traced call is that call's
 * implementation: listed (nesting.c), never counted twice. Each outermost
 * call is then shown, decoded, to the observer if one is set (the timeline).
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
	if (gp_apis[c->api].shape == GP_SHAPE_SET_DEVICE && !c->ret)
		t->device = (__s32)c->args[0]; /* int in edi: the low 32 bits of rdi */
	return t;
}

static __s32 thread_device(struct gp_process *p, __u32 tid)
{
	const struct gp_thread *t = gp_u64map_get(&p->threads, tid);

	return t ? t->device : -1;
}

static void memory_call(struct gp_model *m, struct gp_process *p, const struct gp_api_call *c, struct gp_op *op)
{
	const struct gp_api_info *a = &gp_apis[c->api];
	enum gp_alloc_kind kind = (a->attr & GP_A_MEM_PINNED)    ? GP_AK_PINNED
				  : (a->attr & GP_A_MEM_MANAGED) ? GP_AK_MANAGED
								 : GP_AK_DEVICE;
	bool frees = a->shape == GP_SHAPE_FREE || a->shape == GP_SHAPE_FREE_ASYNC;

	if (a->shape == GP_SHAPE_HOST_REGISTER || (a->attr & GP_A_UNREGISTER))
		kind = GP_AK_REGISTERED;
	/* cudaFree frees device and managed memory alike: "device" names both */
	*op = (struct gp_op){ .kind = frees ? GP_OP_FREE : GP_OP_ALLOC,
			      .alloc_kind = frees && kind == GP_AK_MANAGED && (a->attr & GP_A_MEM_DEVICE) ? GP_AK_DEVICE
												   : kind,
			      .bytes = frees ? 0 : c->args[1] };
	if (c->ret) /* a failed allocation or free changes nothing */
		return;
	switch (a->shape) {
	case GP_SHAPE_ALLOC:
	case GP_SHAPE_ALLOC_ASYNC:
		if (!(c->hdr.flags & GP_EVF_OUT_VALID)) {
			gp_model_drop_add(m, "alloc_out_unread", 1);
			return;
		}
		if (!c->out) /* size 0 may return NULL: nothing to track */
			return;
		gp_memory_alloc(p, c, kind, c->out, c->args[1], thread_device(p, c->hdr.tid));
		return;
	case GP_SHAPE_HOST_REGISTER:
		gp_memory_alloc(p, c, GP_AK_REGISTERED, c->args[0], c->args[1], thread_device(p, c->hdr.tid));
		return;
	case GP_SHAPE_FREE:
	case GP_SHAPE_FREE_ASYNC:
		if (!c->args[0]) /* cudaFree(NULL) is a no-op (often used to create the context) */
			return;
		gp_memory_free(p, kind, c->args[0]);
		return;
	default:
		return;
	}
}

/* The combined GPU work view: what each layer queued by itself. */
static void count_work(struct gp_process *p, const struct gp_api_call *c)
{
	const struct gp_api_info *a = &gp_apis[c->api];
	struct gp_layer_work *w;

	if (c->ret || a->family < GP_FAM_CUDART || a->family > GP_FAM_NCCL)
		return;
	w = &p->work[a->family];
	switch (a->shape) {
	case GP_SHAPE_LAUNCH:
	case GP_SHAPE_LAUNCH_EXC:
	case GP_SHAPE_CU_LAUNCH:
	case GP_SHAPE_CU_LAUNCH_EX:
		w->launches++;
		break;
	case GP_SHAPE_GRAPH_LAUNCH:
		w->graph_launches++;
		break;
	case GP_SHAPE_MEMCPY:
	case GP_SHAPE_MEMCPY_2D:
	case GP_SHAPE_MEMCPY_PEER:
	case GP_SHAPE_CU_MEMCPY:
		w->copies++;
		w->copy_bytes += gp_transfer_bytes(c);
		break;
	case GP_SHAPE_MEMSET:
		w->memsets++;
		w->memset_bytes += gp_transfer_bytes(c);
		break;
	default:
		return;
	}
	w->host_ns += c->dur_ns;
}

void gp_model_set_observer(struct gp_model *m, const struct gp_model_observer *obs)
{
	m->observer = obs ? *obs : (struct gp_model_observer){ 0 };
}

/* Everything the observer needs of an outermost call, from what the aggregators decided. */
static void observe(struct gp_model *m, const struct gp_process *p, const struct gp_api_call *c,
		    const struct gp_op *op, const struct gp_stream_fx *fx, __u64 live_before)
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
	};

	if (op->kind == GP_OP_COPY) {
		v.direction = gp_dir_name(op->dir);
		v.host_memory = gp_hostmem_name(op->hostmem);
	}
	if (op->kind == GP_OP_KERNEL && op->kernel)
		v.kernel = op->kernel->name;
	if (fx->sync) {
		v.covered = p->pending.covers;
		v.ncovered = p->pending.ncovers;
	}
	m->observer.call(m->observer.ctx, &v);
}

static int validate(const void *data, size_t len)
{
	const struct gp_api_call *c = data;

	if (!data || len < sizeof(struct gp_event_hdr))
		return -EINVAL;
	if (c->hdr.type == GP_EV_THREAD_CPU)
		return c->hdr.size == sizeof(struct gp_thread_cpu) && len >= sizeof(struct gp_thread_cpu)
			       ? 0 : -EINVAL;
	if (c->hdr.type == GP_EV_SCHED_SLICE) {
		const struct gp_sched_slice *sl = data;

		return c->hdr.size == sizeof(*sl) && len >= sizeof(*sl) && sl->end_ns >= sl->hdr.ts_ns &&
				       sl->left >= GP_SL_BLOCKED && sl->left <= GP_SL_EXITED
			       ? 0 : -EINVAL;
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
	} else if (c->hdr.type != GP_EV_API_CALL || c->hdr.size != sizeof(*c) || len < sizeof(*c)) {
		return -EINVAL;
	}
	if (c->api <= GP_API_INVALID || c->api >= GP_API_MAX)
		return -EINVAL;
	return 0;
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
		if (m->observer.sched)
			m->observer.sched(m->observer.ctx, &sl);
		return 0;
	}
	memcpy(&c, data, sizeof(c)); /* ring-buffer records need not be aligned for us */

	const struct gp_api_call_ext *x = c.hdr.type == GP_EV_API_CALL_EXT ? data : NULL;
	const struct gp_api_call_stack *stk = c.hdr.type == GP_EV_API_CALL_STACK ? data : NULL;
	struct gp_op op = { .kind = (gp_apis[c.api].attr & GP_A_SYNC_CALL) ? GP_OP_SYNC : GP_OP_OTHER };
	const char *ext = x ? x->data : NULL;
	__u32 ext_len = x ? x->data_len : 0;
	struct gp_process *p = gp_model_process_get(m, c.hdr.tgid);
	struct gp_api_stats *st = p ? api_stats_get(p, c.api) : NULL;
	__u16 outer = GP_EVF_PARENT(c.hdr.flags);
	const struct gp_api_info *a = &gp_apis[c.api];
	struct gp_stream_fx fx = { 0 };
	__u64 live_before;

	if (!st)
		return -ENOMEM;
	live_before = p->mem.total.live_bytes;
	if (c.hdr.flags & GP_EVF_EXT_TRUNC) /* a name cut at 1 KiB, more than 64 communicators */
		gp_model_drop_add(m, "ext_truncated", 1);
	/* handles a nested call creates are still the process's (names, communicators) */
	if (a->family == GP_FAM_CUDA)
		gp_driver_handles(m, p, &c, ext, ext_len);
	if (outer) { /* the implementation of the call around it: counted there */
		gp_api_nested(p, &c, outer, !(c.hdr.flags & GP_EVF_PARENT_COUNTED));
		return 0;
	}
	gp_api_outer_returned(p, c.hdr.tid, c.hdr.ts_ns, c.hdr.ts_ns + c.dur_ns);
	m->cur_ips = stk ? stk->ips : NULL; /* kernel naming may use the launch's stack */
	m->cur_nips = stk ? stk->nframes : 0;
	gp_stats_add(&st->time, c.dur_ns);
	if (c.ret) {
		count_error(st, c.ret);
		st->error_ns += c.dur_ns;
	}
	p->api_calls++;
	p->api_total_ns += c.dur_ns;
	gp_cpu_call(p, count_thread(p, &c), st, &c);

	switch (a->shape) {
	case GP_SHAPE_ALLOC:
	case GP_SHAPE_ALLOC_ASYNC:
	case GP_SHAPE_FREE:
	case GP_SHAPE_FREE_ASYNC:
	case GP_SHAPE_HOST_REGISTER:
		memory_call(m, p, &c, &op);
		break;
	case GP_SHAPE_MEMCPY:
	case GP_SHAPE_MEMCPY_2D:
	case GP_SHAPE_MEMCPY_PEER:
	case GP_SHAPE_CU_MEMCPY:
		gp_transfer_copy(p, &c, &op);
		break;
	case GP_SHAPE_VMM_CREATE:
	case GP_SHAPE_VMM_RELEASE:
	case GP_SHAPE_VMM_MAP:
	case GP_SHAPE_VMM_UNMAP:
		if (a->shape == GP_SHAPE_VMM_CREATE) /* physical memory: (out, size, prop, flags) */
			op = (struct gp_op){ .kind = GP_OP_ALLOC, .alloc_kind = GP_AK_DEVICE, .bytes = c.args[1] };
		else if (a->shape == GP_SHAPE_VMM_RELEASE)
			op = (struct gp_op){ .kind = GP_OP_FREE, .alloc_kind = GP_AK_DEVICE };
		gp_driver_vmm(p, &c);
		break;
	case GP_SHAPE_MEMSET:
		gp_transfer_memset(p, &c, &op);
		break;
	case GP_SHAPE_LAUNCH:
	case GP_SHAPE_LAUNCH_EXC:
	case GP_SHAPE_GRAPH_LAUNCH:
	case GP_SHAPE_CU_LAUNCH:
	case GP_SHAPE_CU_LAUNCH_EX:
		op.kind = a->shape == GP_SHAPE_GRAPH_LAUNCH ? GP_OP_GRAPH : GP_OP_KERNEL;
		op.kernel = gp_kernel_launch(m, p, &c);
		break;
	case GP_SHAPE_REGISTER_FUNCTION:
		gp_kernel_register(p, &c, ext, ext_len);
		break;
	case GP_SHAPE_GET_KERNEL:
		gp_kernel_handle(p, &c);
		break;
	default:
		break;
	}
	if (a->family == GP_FAM_NCCL) {
		__u64 bytes = 0;
		struct gp_nccl_row *row = gp_nccl_call(p, &c, ext, ext_len, &bytes);

		if (row)
			op = (struct gp_op){ .kind = GP_OP_COLL, .nccl_op = row->op, .dtype = row->dtype, .bytes = bytes };
		if (row && !c.ret) {
			gp_stream_collective(p, &c, row, bytes, &fx);
			p->work[GP_FAM_NCCL].collectives++;
			p->work[GP_FAM_NCCL].collective_bytes += bytes;
			p->work[GP_FAM_NCCL].host_ns += c.dur_ns;
		}
	}
	count_work(p, &c);
	gp_stream_call(p, &c, &fx);
	if (fx.sync && !c.ret && !p->pending.ncovers) { /* it covered no work queued since the last one */
		st->redundant_syncs++;
		st->redundant_ns += c.dur_ns;
	}
	if (stk)
		gp_stacks_add(m, p, &c, &op, stk);
	if (m->observer.call)
		observe(m, p, &c, &op, &fx, live_before);
	m->cur_ips = NULL;
	m->cur_nips = 0;
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
		if (h.type == GP_EV_API_CALL || h.type == GP_EV_API_CALL_EXT || h.type == GP_EV_API_CALL_STACK)
			memcpy(&more, (const char *)data + offsetof(struct gp_api_call, dur_ns), sizeof(more));
		else if (h.type == GP_EV_THREAD_CPU)
			memcpy(&end, (const char *)data + offsetof(struct gp_thread_cpu, end_ns), sizeof(end));
		else if (h.type == GP_EV_SCHED_SLICE)
			memcpy(&end, (const char *)data + offsetof(struct gp_sched_slice, end_ns), sizeof(end));
		if (end + more > m->last_event_ns)
			m->last_event_ns = end + more;
	}
	/* after the resolver's answers (a kernel's name), which a capture records as they are given */
	gp_model_tap_ingest(m, &(struct gp_op_ingest){ .record = { data, len } });
	return err;
}
