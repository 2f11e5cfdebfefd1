/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * streams.c — per-stream accounting of one process: the work each stream
 * was given (kernels, graphs, copies, memsets, event records and waits), the
 * host time blocked synchronising it, creations and destructions; and the
 * process's event counters.
 *
 * Stream identity: handle 0 (or cudaStreamLegacy) is the legacy default
 * stream; handle 0 in a _ptsz/_ptds call (or cudaStreamPerThread anywhere)
 * is the calling thread's per-thread default stream; synchronous copies and
 * memsets, which take no stream, run on the default stream of their variant.
 *
 * What each synchronisation waited for: the latest work queued (kernel,
 * graph, async copy or memset, NCCL operation) on the stream(s) it covers
 * since their previous synchronisation; its blocked time is charged to that
 * work's kind, and to the NCCL row when it was a collective. A collective
 * that was the only work on its stream since the previous synchronisation
 * is "measured": queued -> synchronisation return bounds its duration, the
 * basis of the host-side bandwidths (docs/report-format.md, "nccl").
 *
 * For the observer (the timeline), work items are numbered per stream from
 * 0, and a synchronisation covers every item queued on the stream(s) it
 * waits for since their previous synchronisation: the same rule, told per
 * item (gp_stream_fx, struct gp_queued.covers).
 *
 * Here are the handlers (shapes.h) of the shapes that create, synchronise
 * and destroy streams and events, and gp_stream_work(): the work every
 * other call queued, by its shape's "queues".
 */
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "model/model_internal.h"

__u64 gp_stream_key(__u64 handle, bool per_thread_variant, __u32 tid)
{
	if (handle == GP_CUDA_STREAM_PER_THREAD || (handle == 0 && per_thread_variant))
		return GP_STREAM_KEY_PER_THREAD | tid;
	if (handle == GP_CUDA_STREAM_LEGACY || handle == 0)
		return GP_STREAM_KEY_LEGACY;
	return handle;
}

struct gp_stream *gp_stream_get(struct gp_process *p, __u64 key)
{
	struct gp_stream *s = gp_u64map_get(&p->streams, key);

	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->key = key;
	if (gp_u64map_put(&p->streams, key, s)) {
		free(s);
		return NULL;
	}
	return s;
}

bool gp_call_stream_key(const struct gp_api_call *c, __u64 *key)
{
	int slot = gp_api_stream_slot(c->api);
	bool per_thread = gp_apis[c->api].attr & GP_A_PTSZ;
	__u64 handle = 0;

	if (slot >= 6 &&
	    (c->hdr.flags & GP_EVF_ARGS_PARTIAL)) /* slots 6..7 come from user memory */
		return false;
	if (slot >= 0)
		handle = c->args[slot];
	*key = gp_stream_key(handle, per_thread, c->hdr.tid);
	return true;
}

/* The stream a call names, or NULL (no stream, or it could not be read). */
static struct gp_stream *call_stream(struct gp_process *p, const struct gp_api_call *c)
{
	__u64 key;

	return gp_call_stream_key(c, &key) ? gp_stream_get(p, key) : NULL;
}

void gp_queued_release(struct gp_queued *q)
{
	gp_u64map_clear(&q->by_stream, free);
	gp_u64map_clear(&q->by_event, free);
	free(q->covers);
	q->covers = NULL;
	q->ncovers = q->covers_cap = 0;
}

static struct gp_pending_work *pending_of(struct gp_process *p, __u64 key)
{
	struct gp_pending_work *w = gp_u64map_get(&p->writer->queued.by_stream, key);

	if (w)
		return w;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->stream_key = key;
	if (gp_u64map_put(&p->writer->queued.by_stream, key, w)) {
		free(w);
		return NULL;
	}
	return w;
}

static void queued_coll(struct gp_process *p, const struct gp_stream *s,
			const struct gp_api_call *c, enum gp_work_kind kind,
			struct gp_nccl_row *row, __u64 bytes, struct gp_nccl_comm *comm, __u64 seq,
			struct gp_stream_fx *fx)
{
	struct gp_pending_work *w = pending_of(p, s->key);

	if (!w)
		return;
	fx->queued = true;
	fx->queue_seq = w->queued_seq++;
	w->kind = kind;
	w->ts_ns = c->hdr.ts_ns;
	w->coll = row;
	w->coll_bytes = bytes;
	w->coll_comm = comm;
	w->coll_seq = seq;
	w->ops_since_sync++;
}

static void queued(struct gp_process *p, const struct gp_stream *s, const struct gp_api_call *c,
		   enum gp_work_kind kind, struct gp_nccl_row *row, __u64 bytes,
		   struct gp_stream_fx *fx)
{
	queued_coll(p, s, c, kind, row, bytes, NULL, 0, fx);
}

/* The observer's view of a synchronisation: it covered the items of w not covered yet. */
static void covered(struct gp_process *p, struct gp_pending_work *w)
{
	struct gp_queued *q = &p->writer->queued;

	if (!w || w->synced_seq == w->queued_seq)
		return;
	if (GP_ARRAY_GROW(q->covers, q->covers_cap, q->ncovers + 1, 8))
		return; /* the items stay uncovered: the timeline closes them at its end */
	q->covers[q->ncovers++] = (struct gp_sync_cover){ .stream = w->stream_key,
							  .first_seq = w->synced_seq,
							  .end_seq = w->queued_seq };
	w->synced_seq = w->queued_seq;
}

/* A synchronisation that returned: charge its blocked time to what it waited for. */
static void waited(struct gp_process *p, struct gp_pending_work *w, const struct gp_api_call *c)
{
	struct gp_pending *pd = &p->pending;

	if (!w || w->kind == GP_WORK_NONE)
		return;
	pd->blocked_ns[w->kind] += c->dur_ns;
	pd->blocked_calls[w->kind]++;
	if (w->kind == GP_WORK_COLL && w->coll_comm && w->coll_seq)
		gp_nccl_released(w->coll_comm, w->coll_seq, c->hdr.ts_ns + c->dur_ns);
	if (w->kind == GP_WORK_COLL && w->coll) {
		w->coll->blocked_calls++;
		w->coll->blocked_ns += c->dur_ns;
		if (w->ops_since_sync == 1 && !c->ret) {
			w->coll->measured++;
			w->coll->measured_bytes += w->coll_bytes;
			w->coll->measured_ns += c->hdr.ts_ns + c->dur_ns - w->ts_ns;
		}
	}
	w->kind = GP_WORK_NONE;
	w->coll = NULL;
	w->coll_comm = NULL;
	w->ops_since_sync = 0;
}

/* A device-wide synchronisation: the latest work of every stream, charged once; all cleared. */
static void waited_all(struct gp_process *p, const struct gp_api_call *c)
{
	size_t n = p->writer->queued.by_stream.count;
	void **ws = n ? malloc(n * sizeof(*ws)) : NULL;
	struct gp_pending_work *latest = NULL;

	if (!ws)
		return;
	n = gp_u64map_values(&p->writer->queued.by_stream, ws, n);
	for (size_t i = 0; i < n; i++) {
		struct gp_pending_work *w = ws[i];

		if (w->kind != GP_WORK_NONE && (!latest || w->ts_ns > latest->ts_ns))
			latest = w;
	}
	waited(p, latest, c);
	for (size_t i = 0; i < n; i++) {
		struct gp_pending_work *w = ws[i];

		covered(p, w);
		w->kind = GP_WORK_NONE;
		w->coll = NULL;
		w->coll_comm = NULL;
		w->ops_since_sync = 0;
	}
	free(ws);
}

/* An event remembers the stream of its latest record; synchronising it waits for that stream. */
static void event_recorded(struct gp_process *p, __u64 event, __u64 stream_key)
{
	__u64 *k = gp_u64map_get(&p->writer->queued.by_event, event);

	if (!k) {
		k = malloc(sizeof(*k));
		if (!k || gp_u64map_put(&p->writer->queued.by_event, event, k)) {
			free(k);
			return;
		}
	}
	*k = stream_key;
}

static void event_waited(struct gp_process *p, __u64 event, const struct gp_api_call *c)
{
	const __u64 *k = gp_u64map_get(&p->writer->queued.by_event, event);

	if (k) {
		struct gp_pending_work *w = gp_u64map_get(&p->writer->queued.by_stream, *k);

		covered(p, w);
		waited(p, w, c);
	}
}

/* The stream a call names, told to the observer too. */
static struct gp_stream *fx_stream(struct gp_process *p, const struct gp_api_call *c,
				   struct gp_stream_fx *fx)
{
	struct gp_stream *s = call_stream(p, c);

	if (s) {
		fx->has_stream = true;
		fx->stream = s->key;
	}
	return s;
}

void gp_stream_collective(struct gp_process *p, const struct gp_api_call *c,
			  struct gp_nccl_row *row, __u64 bytes, struct gp_nccl_comm *comm,
			  __u64 seq, struct gp_stream_fx *fx)
{
	struct gp_stream *s = fx_stream(p, c, fx);

	if (!s)
		return;
	s->collectives++;
	s->collective_bytes += bytes;
	queued_coll(p, s, c, GP_WORK_COLL, row, bytes, comm, seq, fx);
}

void gp_shape_stream_create(struct gp_shape_call *x)
{
	const struct gp_api_call *c = x->c;
	struct gp_stream *s;

	if (!c->ret && (c->hdr.flags & GP_EVF_OUT_VALID) && (s = gp_stream_get(x->p, c->out)))
		s->created++;
}

/* Blocked time counts whether or not it failed. */
void gp_shape_stream_sync(struct gp_shape_call *x)
{
	struct gp_stream *s = fx_stream(x->p, x->c, x->fx);
	struct gp_pending_work *w;

	if (!s)
		return;
	w = gp_u64map_get(&x->p->writer->queued.by_stream, s->key);
	s->sync_calls++;
	s->sync_ns += x->c->dur_ns;
	covered(x->p, w);
	waited(x->p, w, x->c);
}

/* cudaStreamDestroy (cuStreamDestroy is not traced) */
void gp_shape_stream_destroy(struct gp_shape_call *x)
{
	struct gp_stream *s = fx_stream(x->p, x->c, x->fx);

	if (s && !x->c->ret)
		s->destroyed++;
}

void gp_shape_stream_wait_event(struct gp_shape_call *x)
{
	struct gp_stream *s;

	if (!x->c->ret && (s = fx_stream(x->p, x->c, x->fx)))
		s->event_waits++;
}

void gp_shape_event_create(struct gp_shape_call *x)
{
	if (!x->c->ret && (x->c->hdr.flags & GP_EVF_OUT_VALID))
		x->p->events.created++;
}

void gp_shape_event_record(struct gp_shape_call *x)
{
	struct gp_stream *s;

	if (x->c->ret)
		return;
	x->p->events.records++;
	if ((s = fx_stream(x->p, x->c, x->fx))) {
		s->event_records++;
		event_recorded(x->p, x->c->args[0], s->key);
	}
}

void gp_shape_event_sync(struct gp_shape_call *x)
{
	x->p->events.sync_calls++;
	x->p->events.sync_ns += x->c->dur_ns;
	event_waited(x->p, x->c->args[0], x->c);
}

/* cudaEventDestroy (cuEventDestroy is not traced) */
void gp_shape_event_destroy(struct gp_shape_call *x)
{
	if (!x->c->ret)
		x->p->events.destroyed++;
}

/* cudaDeviceSynchronize, cuCtxSynchronize */
void gp_shape_device_sync(struct gp_shape_call *x)
{
	waited_all(x->p, x->c);
}

void gp_stream_work(struct gp_process *p, const struct gp_api_call *c, struct gp_stream_fx *fx)
{
	bool async = gp_apis[c->api].attr & GP_A_ASYNC;
	struct gp_stream *s;

	if (c->ret)
		return;
	switch (gp_api_queues(c->api)) {
	case GP_Q_KERNEL:
		if ((s = fx_stream(p, c, fx))) {
			s->kernels++;
			queued(p, s, c, GP_WORK_KERNEL, NULL, 0, fx);
		}
		return;
	case GP_Q_GRAPH:
		if ((s = fx_stream(p, c, fx))) {
			s->graph_launches++;
			queued(p, s, c, GP_WORK_KERNEL, NULL, 0, fx);
		}
		return;
	case GP_Q_COPY:
		if ((s = fx_stream(p, c, fx))) {
			s->copies++;
			s->copy_bytes += gp_transfer_bytes(c);
			if (async) /* a synchronous copy is done when it returns */
				queued(p, s, c, GP_WORK_COPY, NULL, 0, fx);
		}
		return;
	case GP_Q_MEMSET:
		if ((s = fx_stream(p, c, fx))) {
			s->memsets++;
			s->memset_bytes += gp_transfer_bytes(c);
			if (async)
				queued(p, s, c, GP_WORK_MEMSET, NULL, 0, fx);
		}
		return;
	case GP_Q_COLL: /* nccl.c's handler queued it (gp_stream_collective): it knows its row and bytes */
	case GP_Q_NONE:
		return;
	}
}

/* The work a synchronisation in progress awaits (read only: the rule of waited(), waited_all()). */
static const struct gp_pending_work *awaited(const struct gp_process *p, enum gp_api_id api,
					     __u32 tid, const __u64 *args)
{
	const struct gp_queued *q = &p->writer->queued;
	struct gp_api_call c = { .hdr.tid = tid, .api = api };
	const struct gp_pending_work *latest = NULL;
	const __u64 *k;
	__u64 key;

	memcpy(c.args, args, sizeof(c.args));
	switch (gp_apis[api].shape) {
	case GP_SHAPE_STREAM_SYNC:
		return gp_call_stream_key(&c, &key) ? gp_u64map_get(&q->by_stream, key) : NULL;
	case GP_SHAPE_EVENT_SYNC:
		k = gp_u64map_get(&q->by_event, args[0]);
		return k ? gp_u64map_get(&q->by_stream, *k) : NULL;
	case GP_SHAPE_DEVICE_SYNC:
		for (size_t i = 0; i < q->by_stream.cap; i++) {
			const struct gp_pending_work *w = q->by_stream.slots[i].val;

			if (w && w->kind != GP_WORK_NONE && (!latest || w->ts_ns > latest->ts_ns))
				latest = w;
		}
		return latest;
	default:
		return NULL;
	}
}

bool gp_inflight_collective(const struct gp_process *p, enum gp_api_id api, __u32 tid,
			    const __u64 *args, const struct gp_nccl_comm **comm, __u64 *seq)
{
	const struct gp_pending_work *w;
	struct gp_nccl_layout l;

	if ((unsigned)api >= GP_API_MAX || !api)
		return false;
	if (gp_nccl_layout(api, &l)) {
		const struct gp_nccl_comm *cm =
			p->nccl ? gp_u64map_get(&p->nccl->by_handle, args[l.comm]) : NULL;

		if (!cm || cm->destroyed || l.op == GP_NCCL_SEND || l.op == GP_NCCL_RECV)
			return false;
		*comm = cm;
		*seq = cm->collectives + 1;
		return true;
	}
	if (!(gp_apis[api].attr & GP_A_SYNC_CALL) || !(w = awaited(p, api, tid, args)))
		return false;
	if (w->kind != GP_WORK_COLL || !w->coll_comm || !w->coll_seq)
		return false;
	*comm = w->coll_comm;
	*seq = w->coll_seq;
	return true;
}
