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
 */
#include <stdlib.h>

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

/* The stream a call names, or NULL (no stream, or it could not be read). */
static struct gp_stream *call_stream(struct gp_process *p, const struct gp_api_call *c)
{
	int slot = gp_api_stream_slot(c->api);
	bool per_thread = gp_apis[c->api].attr & GP_A_PTSZ;
	__u64 handle = 0;

	if (slot >= 6 && (c->hdr.flags & GP_EVF_ARGS_PARTIAL)) /* slots 6..7 come from user memory */
		return NULL;
	if (slot >= 0)
		handle = c->args[slot];
	return gp_stream_get(p, gp_stream_key(handle, per_thread, c->hdr.tid));
}

void gp_stream_call(struct gp_process *p, const struct gp_api_call *c)
{
	const struct gp_api_info *a = &gp_apis[c->api];
	bool ok = c->ret == 0;
	struct gp_stream *s;

	switch (a->shape) {
	case GP_SHAPE_STREAM_CREATE:
		if (ok && (c->hdr.flags & GP_EVF_OUT_VALID) && (s = gp_stream_get(p, c->out)))
			s->created++;
		return;
	case GP_SHAPE_STREAM:
		if (!(s = call_stream(p, c)))
			return;
		if (a->attr & GP_A_SYNC_CALL) { /* blocked time counts whether or not it failed */
			s->sync_calls++;
			s->sync_ns += c->dur_ns;
		} else if (ok && c->api == GP_API_CUDA_STREAM_DESTROY) {
			s->destroyed++;
		}
		return;
	case GP_SHAPE_STREAM_WAIT_EVENT:
		if (ok && (s = call_stream(p, c)))
			s->event_waits++;
		return;
	case GP_SHAPE_EVENT_CREATE:
		if (ok && (c->hdr.flags & GP_EVF_OUT_VALID))
			p->events.created++;
		return;
	case GP_SHAPE_EVENT:
		if (a->attr & GP_A_SYNC_CALL) {
			p->events.sync_calls++;
			p->events.sync_ns += c->dur_ns;
		} else if (ok && c->api == GP_API_CUDA_EVENT_DESTROY) {
			p->events.destroyed++;
		}
		return;
	case GP_SHAPE_EVENT_RECORD:
		if (!ok)
			return;
		p->events.records++;
		if ((s = call_stream(p, c)))
			s->event_records++;
		return;
	case GP_SHAPE_LAUNCH:
	case GP_SHAPE_LAUNCH_EXC:
		if (ok && (s = call_stream(p, c)))
			s->kernels++;
		return;
	case GP_SHAPE_GRAPH_LAUNCH:
		if (ok && (s = call_stream(p, c)))
			s->graph_launches++;
		return;
	case GP_SHAPE_MEMCPY:
	case GP_SHAPE_MEMCPY_2D:
	case GP_SHAPE_MEMCPY_PEER:
		if (ok && (s = call_stream(p, c))) {
			s->copies++;
			s->copy_bytes += gp_transfer_bytes(c);
		}
		return;
	case GP_SHAPE_MEMSET:
		if (ok && (s = call_stream(p, c))) {
			s->memsets++;
			s->memset_bytes += gp_transfer_bytes(c);
		}
		return;
	default:
		return;
	}
}
