/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * replay_order.c — turns one process's calls, as read, into its plan: sorted
 * by entry time; streams, events and allocations made objects (a handle
 * created again, or an address allocated again, is a new object); each
 * operation's dependencies on the objects it touches; per host thread, its
 * operations and the think time before each; the kernels, with durations
 * from the user's table where it names them.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/view.h"
#include "text/labels.h"
#include "replay/replay_plan_internal.h"

struct memnode {
	struct gp_range r; /* first: the range set holds struct gp_range * */
	int obj;
};

struct order {
	struct gp_rprocess *p;
	struct gp_u64map streams; /* stream key -> obj + 1 */
	struct gp_u64map events;  /* handle -> obj + 1 */
	struct gp_u64map
		devices; /* tid -> its current device + 1 (absent: 0, the runtime's default) */
	struct gp_range_set mems;
	__u32 *cnt; /* per object: operations on it so far */
	size_t cnt_cap;
	int ordinals[3][3]; /* [robj kind][stream kind] */
};

static int gp_doc_obj_new(struct order *o, enum gp_robj_kind kind, int skind, __u64 handle,
			  int device)
{
	struct gp_rprocess *p = o->p;

	if (p->nobjs == p->objs_cap) {
		size_t cap = p->objs_cap ? 2 * p->objs_cap : 32;
		struct gp_robj *v = realloc(p->objs, cap * sizeof(*v));
		__u32 *c = realloc(o->cnt, cap * sizeof(*c));

		if (v)
			p->objs = v;
		if (c)
			o->cnt = c;
		if (!v || !c)
			return -ENOMEM;
		p->objs_cap = o->cnt_cap = cap;
	}
	p->objs[p->nobjs] = (struct gp_robj){
		.kind = kind, .skind = skind, .handle = handle, .device = device
	};
	if (!(kind == GP_ROBJ_STREAM && skind == GP_RSTREAM_LEGACY))
		p->objs[p->nobjs].ordinal = o->ordinals[kind][skind]++;
	o->cnt[p->nobjs] = 0;
	return (int)p->nobjs++;
}

static int mapped(struct gp_u64map *m, __u64 key)
{
	void *v = gp_u64map_get(m, key);

	return v ? (int)((uintptr_t)v - 1) : -1;
}

static int map_put(struct gp_u64map *m, __u64 key, int obj)
{
	return gp_u64map_put(m, key, (void *)(uintptr_t)(obj + 1));
}

static int stream_obj(struct order *o, __u64 key, int device)
{
	int obj = mapped(&o->streams, key);

	if (obj >= 0)
		return obj;
	obj = gp_doc_obj_new(o, GP_ROBJ_STREAM,
			     key == GP_STREAM_KEY_LEGACY	? GP_RSTREAM_LEGACY
			     : (key & GP_STREAM_KEY_PER_THREAD) ? GP_RSTREAM_PER_THREAD
								: GP_RSTREAM_HANDLE,
			     key, device);
	if (obj >= 0 && map_put(&o->streams, key, obj))
		return -ENOMEM;
	return obj;
}

static int event_obj(struct order *o, __u64 handle, int device)
{
	int obj = mapped(&o->events, handle);

	if (obj >= 0)
		return obj;
	obj = gp_doc_obj_new(o, GP_ROBJ_EVENT, 0, handle, device);
	if (obj >= 0 && map_put(&o->events, handle, obj))
		return -ENOMEM;
	return obj;
}

/* The allocation holding [addr, addr + bytes), or -1. */
static int mem_at(struct order *o, __u64 addr, __u64 bytes, __u64 *off)
{
	struct memnode *n = (struct memnode *)gp_ranges_find(&o->mems, addr);

	if (!n || addr + bytes > n->r.end)
		return -1;
	*off = addr - n->r.start;
	return n->obj;
}

static void evict(struct gp_range *r, void *ctx)
{
	free(r);
}

static void dep(struct order *o, struct gp_rop *op, int obj, bool advance)
{
	if (obj < 0)
		return;
	for (unsigned i = 0; i < op->nadv; i++)
		if (op->adv[i] == (__u32)obj)
			return; /* the same object twice (a copy within one allocation) */
	if (o->cnt[obj])
		op->deps[op->ndeps++] = (struct gp_rdep){ .obj = (__u32)obj, .need = o->cnt[obj] };
	if (advance) {
		op->adv[op->nadv++] = (__u32)obj;
		o->cnt[obj]++;
	}
}

static struct gp_rthread *thread_of(struct gp_rprocess *p, struct gp_rbproc *bp, __u32 tid)
{
	struct gp_rthread *t;

	for (size_t i = 0; i < p->nthreads; i++)
		if (p->threads[i].tid == tid)
			return &p->threads[i];
	t = realloc(p->threads, (p->nthreads + 1) * sizeof(*t));
	if (!t)
		return NULL;
	p->threads = t;
	t = &t[p->nthreads++];
	*t = (struct gp_rthread){ .tid = tid };
	for (size_t i = 0; i < bp->ntnames; i++)
		if (bp->tnames[i].tid == tid && bp->tnames[i].name &&
		    !(t->name = strdup(bp->tnames[i].name)))
			return NULL;
	return t;
}

static int thread_push(struct gp_rthread *t, size_t idx)
{
	size_t *v = realloc(t->ops, (t->nops + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	t->ops = v;
	t->ops[t->nops++] = idx;
	return 0;
}

static int cmp_raw(const void *a, const void *b)
{
	const struct gp_rraw *x = a, *y = b;

	if (x->ts_ns != y->ts_ns)
		return x->ts_ns < y->ts_ns ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static const enum gp_rop_kind rop_of_raw[] = {
	[GP_RRAW_ALLOC] = GP_ROP_ALLOC,
	[GP_RRAW_FREE] = GP_ROP_FREE,
	[GP_RRAW_COPY] = GP_ROP_COPY,
	[GP_RRAW_MEMSET] = GP_ROP_MEMSET,
	[GP_RRAW_KERNEL] = GP_ROP_KERNEL,
	[GP_RRAW_EVENT_RECORD] = GP_ROP_EVENT_RECORD,
	[GP_RRAW_STREAM_WAIT] = GP_ROP_STREAM_WAIT,
	[GP_RRAW_STREAM_SYNC] = GP_ROP_STREAM_SYNC,
	[GP_RRAW_EVENT_SYNC] = GP_ROP_EVENT_SYNC,
	[GP_RRAW_DEVICE_SYNC] = GP_ROP_DEVICE_SYNC,
	[GP_RRAW_SET_DEVICE] = GP_ROP_SET_DEVICE,
};

/* Links one call; *keep false when it turns out not to be replayable. */
static int link_op(struct order *o, const struct gp_rraw *r, struct gp_rop *op, int device,
		   bool *keep)
{
	struct gp_rprocess *p = o->p;
	int s = -1, e = -1;
	__u64 off;

	*keep = true;
	switch (r->kind) {
	case GP_RRAW_ALLOC: {
		struct memnode *n = malloc(sizeof(*n));
		int m = gp_doc_obj_new(o, GP_ROBJ_MEM, 0, r->addr[0], device);

		if (!n || m < 0) {
			free(n);
			return -ENOMEM;
		}
		p->objs[m].bytes = r->bytes;
		p->objs[m].mem = r->mem;
		p->objs[m].async_alloc = r->async;
		n->obj = m;
		if (gp_ranges_insert(&o->mems, &n->r, r->addr[0], r->bytes, evict, NULL)) {
			free(n);
			return -ENOMEM;
		}
		op->mem[0] = m;
		op->bytes = r->bytes;
		if (r->async && (s = stream_obj(o, r->stream_key, device)) < 0)
			return -ENOMEM;
		dep(o, op, s, true);
		dep(o, op, m, true);
		break;
	}
	case GP_RRAW_FREE: {
		struct memnode *n = (struct memnode *)gp_ranges_remove(&o->mems, r->addr[0]);

		if (!n) { /* allocated before the capture began: nothing of ours to free */
			p->not_replayed[r->api]++;
			p->not_replayed_total++;
			*keep = false;
			return 0;
		}
		op->mem[0] = n->obj;
		free(n);
		if (r->async && (s = stream_obj(o, r->stream_key, device)) < 0)
			return -ENOMEM;
		dep(o, op, s, true);
		dep(o, op, op->mem[0], true);
		break;
	}
	case GP_RRAW_COPY:
	case GP_RRAW_MEMSET:
		if ((s = stream_obj(o, r->stream_key, device)) < 0)
			return -ENOMEM;
		op->bytes = r->bytes;
		op->dir = r->dir;
		op->hostmem = r->hostmem;
		op->legacy_sync = !r->async;
		for (int i = 0; i < (r->kind == GP_RRAW_COPY ? 2 : 1); i++) {
			op->mem[i] = mem_at(o, r->addr[i], r->bytes, &off);
			op->off[i] = op->mem[i] >= 0 ? off : 0;
		}
		/* device memory no allocation of the capture covers: one scratch allocation */
		for (int i = 0; i < 2; i++) {
			bool device_side = r->kind == GP_RRAW_MEMSET ? i == 0
					   : r->dir == GP_DIR_DTOD   ? true
					   : r->dir == GP_DIR_HTOD   ? i == 0
					   : r->dir == GP_DIR_DTOH   ? i == 1
								     : false;

			if (device_side && op->mem[i] < 0 && r->bytes > p->scratch_device_bytes)
				p->scratch_device_bytes = r->bytes;
		}
		dep(o, op, s, true);
		dep(o, op, op->mem[0], true);
		dep(o, op, op->mem[1], true);
		break;
	case GP_RRAW_KERNEL:
		if ((s = stream_obj(o, r->stream_key, device)) < 0)
			return -ENOMEM;
		op->kernel = r->kernel;
		dep(o, op, s, true);
		break;
	case GP_RRAW_EVENT_RECORD:
		if ((s = stream_obj(o, r->stream_key, device)) < 0 ||
		    (e = event_obj(o, r->handle, device)) < 0)
			return -ENOMEM;
		dep(o, op, s, true);
		dep(o, op, e, true);
		break;
	case GP_RRAW_STREAM_WAIT:
		if ((s = stream_obj(o, r->stream_key, device)) < 0 ||
		    (e = event_obj(o, r->handle, device)) < 0)
			return -ENOMEM;
		dep(o, op, s, true);
		dep(o, op, e, false);
		break;
	case GP_RRAW_STREAM_SYNC:
		if ((s = stream_obj(o, r->stream_key, device)) < 0)
			return -ENOMEM;
		dep(o, op, s, true);
		break;
	case GP_RRAW_EVENT_SYNC:
		if ((e = event_obj(o, r->handle, device)) < 0)
			return -ENOMEM;
		dep(o, op, e, false);
		break;
	case GP_RRAW_SET_DEVICE:
		op->device = r->device;
		break;
	default:
		break;
	}
	op->stream = s;
	op->event = e;
	return 0;
}

/* A creation: a new object for the handle, from here on. */
static int created(struct order *o, const struct gp_rraw *r, int device)
{
	bool stream = r->kind == GP_RRAW_STREAM_CREATE;
	int obj = gp_doc_obj_new(o, stream ? GP_ROBJ_STREAM : GP_ROBJ_EVENT,
				 stream ? GP_RSTREAM_HANDLE : 0, r->handle, device);

	if (obj < 0)
		return -ENOMEM;
	o->p->objs[obj].flags = r->flags;
	return map_put(stream ? &o->streams : &o->events, r->handle, obj);
}

static __u64 table_ns(const struct gp_kernel_times *kt, const char *name, const char *mangled,
		      const char *short_name, bool *found)
{
	const char *last = strrchr(short_name, ':');

	last = last ? last + 1 : short_name;
	for (size_t i = 0; kt && i < kt->n; i++) {
		const char *n = kt->rows[i].name;

		if ((name && !strcmp(n, name)) || (mangled && mangled[0] && !strcmp(n, mangled)) ||
		    !strcmp(n, short_name) || !strcmp(n, last)) {
			*found = true;
			return kt->rows[i].ns;
		}
	}
	*found = false;
	return 0;
}

static int kernels(struct gp_rbuild *b, struct gp_rprocess *p, const struct gp_kernel_times *kt)
{
	const struct gp_process *mp = gp_u64map_get(&b->model->by_pid, p->pid);
	char short_name[GP_NAME_BUF];

	if (!mp || !mp->nkernels)
		return 0;
	p->kernels = calloc(mp->nkernels, sizeof(*p->kernels));
	if (!p->kernels)
		return -ENOMEM;
	p->nkernels = mp->nkernels;
	for (size_t i = 0; i < mp->nkernels; i++) {
		const struct gp_kernel *k = mp->kernels[i];
		struct gp_rkernel *rk = &p->kernels[i];
		bool found;

		if (k->name && (!(rk->name = strdup(k->name)) ||
				!(rk->mangled = strdup(k->mangled ? k->mangled : ""))))
			return -ENOMEM;
		if (!k->name)
			continue;
		gp_kernel_short_name(b->model, mp, k, short_name, sizeof(short_name));
		rk->dur_ns = table_ns(kt, k->name, k->mangled, short_name, &found);
		rk->source = found ? GP_KDUR_TABLE : GP_KDUR_NONE;
	}
	for (size_t i = 0; i < p->nops; i++)
		if (p->ops[i].kind == GP_ROP_KERNEL && p->ops[i].kernel >= 0 &&
		    (size_t)p->ops[i].kernel < p->nkernels)
			p->kernels[p->ops[i].kernel].launches++;
	return 0;
}

int gp_rplan_order(struct gp_rbuild *b, struct gp_rbproc *bp, const struct gp_kernel_times *kt)
{
	struct order o = { .p = bp->p };
	struct gp_rprocess *p = bp->p;
	int rc = -ENOMEM;

	qsort(bp->raw, bp->nraw, sizeof(*bp->raw), cmp_raw);
	p->ops = calloc(bp->nraw ? bp->nraw : 1, sizeof(*p->ops));
	if (!p->ops)
		goto out;
	for (size_t i = 0; i < bp->nraw; i++) {
		const struct gp_rraw *r = &bp->raw[i];
		struct gp_rthread *t;
		void *dv = gp_u64map_get(&o.devices, r->tid);
		int device = dv ? (int)((uintptr_t)dv - 1) : 0;
		bool keep;

		rc = -ENOMEM;
		if (!(t = thread_of(p, bp, r->tid)))
			goto out;
		if (r->kind == GP_RRAW_STREAM_CREATE || r->kind == GP_RRAW_EVENT_CREATE) {
			if ((rc = created(&o, r, device)))
				goto out;
			continue;
		}

		struct gp_rop *op = &p->ops[p->nops];

		*op = (struct gp_rop){ .kind = rop_of_raw[r->kind],
				       .api = r->api,
				       .ts_ns = r->ts_ns,
				       .dur_ns = r->dur_ns,
				       .async = r->async,
				       .stream = -1,
				       .event = -1,
				       .mem = { -1, -1 },
				       .kernel = -1,
				       .thread = (__u32)(t - p->threads) };
		if ((rc = link_op(&o, r, op, device, &keep)))
			goto out;
		if (!keep)
			continue;
		rc = -ENOMEM;
		if (r->kind == GP_RRAW_SET_DEVICE && map_put(&o.devices, r->tid, r->device))
			goto out;
		if (!p->nops)
			p->start_ns = r->ts_ns;
		if (r->ts_ns + r->dur_ns > p->end_ns)
			p->end_ns = r->ts_ns + r->dur_ns;
		if ((rc = thread_push(t, p->nops)))
			goto out;
		p->nops++;
	}
	/* threads that only created streams or events have nothing to replay */
	for (size_t i = 0; i < p->nthreads;) {
		if (p->threads[i].nops) {
			i++;
			continue;
		}
		free(p->threads[i].name);
		free(p->threads[i].ops);
		memmove(&p->threads[i], &p->threads[i + 1],
			(p->nthreads - i - 1) * sizeof(*p->threads));
		p->nthreads--;
		for (size_t k = 0; k < p->nops; k++)
			if (p->ops[k].thread > i)
				p->ops[k].thread--;
	}
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct gp_rthread *t = &p->threads[i];
		__u64 prev_end = p->start_ns;

		for (size_t k = 0; k < t->nops; k++) {
			struct gp_rop *op = &p->ops[t->ops[k]];

			op->think_ns = op->ts_ns > prev_end ? op->ts_ns - prev_end : 0;
			prev_end = op->ts_ns + op->dur_ns;
		}
	}
	if ((rc = kernels(b, p, kt)))
		goto out;
	gp_rplan_infer(p);
	rc = 0;
out:
	gp_u64map_clear(&o.streams, NULL);
	gp_u64map_clear(&o.events, NULL);
	gp_u64map_clear(&o.devices, NULL);
	gp_ranges_clear(&o.mems, (void (*)(struct gp_range *))free);
	free(o.cnt);
	return rc;
}
