/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpu_sync.c — synchronisation and events: waiting for an op, a stream, a
 * device or everything (always sleeping on sg_done_cv, never spinning), and
 * events, which are references to the op that marks their last recorded
 * position in a stream.
 */
#include <stdlib.h>

#include "gpu_internal.h"

int sg_host_waiters;

/* A snapshot of ops to wait for, with references. */
struct opset {
	struct sg_op *op[64];
	struct sg_op **v;
	size_t n, cap;
};

static void opset_add(struct opset *o, struct sg_op *op)
{
	if (!op || op->done)
		return;
	if (!o->v) {
		o->v = o->op;
		o->cap = 64;
	}
	if (o->n == o->cap) {
		struct sg_op **n = malloc(o->cap * 2 * sizeof(*n));

		if (!n)
			abort();
		for (size_t i = 0; i < o->n; i++)
			n[i] = o->v[i];
		if (o->v != o->op)
			free(o->v);
		o->v = n;
		o->cap *= 2;
	}
	op->refs++;
	o->v[o->n++] = op;
}

static bool opset_done(const struct opset *o)
{
	for (size_t i = 0; i < o->n; i++)
		if (!o->v[i]->done)
			return false;
	return true;
}

static void opset_wait_release(struct opset *o)
{
	while (!opset_done(o))
		sg_host_wait_locked();
	for (size_t i = 0; i < o->n; i++)
		sg_op_put_locked(o->v[i]);
	if (o->v && o->v != o->op)
		free(o->v);
}

/* What synchronising s waits for: its last op, and for the legacy stream
 * every blocking stream's last op too (the legacy stream is a barrier). */
static void stream_targets(struct sg_stream *s, struct opset *o)
{
	opset_add(o, s->last);
	if (s->type == SG_ST_LEGACY)
		for (struct sg_stream *b = sg_dev_streams(s->dev); b; b = b->dev_next)
			if (!(b->flags & SG_STREAM_NONBLOCKING))
				opset_add(o, b->last);
}

void sg_op_wait(struct sg_op *op)
{
	if (!op)
		return;
	pthread_mutex_lock(&sg_mu);
	while (!op->done)
		sg_host_wait_locked();
	sg_op_put_locked(op);
	pthread_mutex_unlock(&sg_mu);
}

void sg_op_wait_moved(struct sg_op *op)
{
	pthread_mutex_lock(&sg_mu);
	while (!op->moved && !op->done)
		sg_host_wait_locked();
	pthread_mutex_unlock(&sg_mu);
}

int sg_stream_sync(struct sg_stream *s)
{
	struct opset o = { 0 };

	pthread_mutex_lock(&sg_mu);
	if (s->capture) {
		sg_capture_invalidate_locked(s->capture);
		pthread_mutex_unlock(&sg_mu);
		return SG_ECAPTURE_UNSUPPORTED;
	}
	stream_targets(s, &o);
	opset_wait_release(&o);
	pthread_mutex_unlock(&sg_mu);
	return SG_OK;
}

int sg_stream_query(struct sg_stream *s)
{
	struct opset o = { 0 };
	int err;

	pthread_mutex_lock(&sg_mu);
	if (s->capture) {
		sg_capture_invalidate_locked(s->capture);
		pthread_mutex_unlock(&sg_mu);
		return SG_ECAPTURE_UNSUPPORTED;
	}
	stream_targets(s, &o);
	err = o.n ? SG_ENOTREADY : SG_OK;
	for (size_t i = 0; i < o.n; i++)
		sg_op_put_locked(o.v[i]);
	if (o.v && o.v != o.op)
		free(o.v);
	pthread_mutex_unlock(&sg_mu);
	return err;
}

static int device_targets_locked(int dev, struct opset *o)
{
	for (struct sg_stream *s = sg_dev_streams(dev); s; s = s->dev_next)
		if (s->capture && s->capture->mode != SG_CAPTURE_RELAXED)
			return SG_ECAPTURE_UNSUPPORTED;
	for (struct sg_stream *s = sg_dev_streams(dev); s; s = s->dev_next)
		opset_add(o, s->last);
	return SG_OK;
}

int sg_device_sync(int dev)
{
	struct opset o = { 0 };
	int err;

	if (dev < 0 || dev >= sg_device_count())
		return SG_EDEVICE;
	pthread_mutex_lock(&sg_mu);
	err = device_targets_locked(dev, &o);
	opset_wait_release(&o);
	pthread_mutex_unlock(&sg_mu);
	return err;
}

void sg_all_sync(void)
{
	struct opset o = { 0 };
	int d, n = sg_device_count();

	pthread_mutex_lock(&sg_mu);
	for (d = 0; d < n; d++)
		for (struct sg_stream *s = sg_dev_streams(d); s; s = s->dev_next)
			opset_add(&o, s->last);
	opset_wait_release(&o);
	pthread_mutex_unlock(&sg_mu);
}

void sg_device_reset_streams(int dev)
{
	pthread_mutex_lock(&sg_mu);
	for (struct sg_stream *s = sg_dev_streams(dev); s; s = s->dev_next) {
		if (s->type != SG_ST_USER || !sg_handle_is(s, SG_HK_STREAM))
			continue;
		sg_handle_del(s);
		s->capture = NULL;
		s->dying = true;
		pthread_cond_signal(&s->work_cv);
		s->refs--; /* the handle's; the worker still holds one */
	}
	pthread_mutex_unlock(&sg_mu);
}

/* ---- events ------------------------------------------------------------------------- */
int sg_event_create(unsigned flags, struct sg_event **out)
{
	struct sg_event *e = calloc(1, sizeof(*e));

	if (!e)
		return SG_ENOMEM;
	e->flags = flags;
	pthread_mutex_lock(&sg_mu);
	if (sg_handle_add(e, SG_HK_EVENT)) {
		free(e);
		e = NULL;
	}
	pthread_mutex_unlock(&sg_mu);
	*out = e;
	return e ? SG_OK : SG_ENOMEM;
}

int sg_event_destroy(void *h)
{
	struct sg_event *e = h;

	pthread_mutex_lock(&sg_mu);
	if (!sg_handle_is(h, SG_HK_EVENT)) {
		pthread_mutex_unlock(&sg_mu);
		return SG_EHANDLE;
	}
	sg_handle_del(h);
	sg_op_put_locked(e->op);
	free(e);
	pthread_mutex_unlock(&sg_mu);
	return SG_OK;
}

int sg_event_record(void *h, struct sg_stream *s)
{
	static const struct sg_work mark = { .kind = SG_WORK_NOP, .name = "event" };
	struct sg_event *e = h;
	struct sg_op *op = NULL;
	int err = SG_OK;

	pthread_mutex_lock(&sg_mu);
	if (!sg_handle_is(h, SG_HK_EVENT)) {
		err = SG_EHANDLE;
	} else if (s->capture) {
		/* inside a capture an event only marks a fork/join point */
		e->capture = s->capture;
	} else {
		err = sg_submit_locked(s, &mark, NULL, 0, &op);
		if (!err) {
			sg_op_put_locked(e->op);
			e->op = op;
			e->capture = NULL;
		}
	}
	pthread_mutex_unlock(&sg_mu);
	return err;
}

int sg_event_query(void *h)
{
	struct sg_event *e = h;
	int err;

	pthread_mutex_lock(&sg_mu);
	if (!sg_handle_is(h, SG_HK_EVENT))
		err = SG_EHANDLE;
	else
		err = !e->op || e->op->done ? SG_OK : SG_ENOTREADY;
	pthread_mutex_unlock(&sg_mu);
	return err;
}

int sg_event_sync(void *h)
{
	struct sg_event *e = h;
	struct sg_op *op;

	pthread_mutex_lock(&sg_mu);
	if (!sg_handle_is(h, SG_HK_EVENT)) {
		pthread_mutex_unlock(&sg_mu);
		return SG_EHANDLE;
	}
	op = e->op;
	if (op) {
		op->refs++;
		while (!op->done)
			sg_host_wait_locked();
		sg_op_put_locked(op);
	}
	pthread_mutex_unlock(&sg_mu);
	return SG_OK;
}

int sg_event_elapsed(void *start, void *end, float *ms)
{
	struct sg_event *a = start, *b = end;
	int err = SG_OK;

	if (!ms)
		return SG_EINVAL;
	pthread_mutex_lock(&sg_mu);
	if (!sg_handle_is(start, SG_HK_EVENT) || !sg_handle_is(end, SG_HK_EVENT) ||
	    ((a->flags | b->flags) & SG_EVENT_DISABLE_TIMING) || !a->op || !b->op)
		err = SG_EHANDLE;
	else if (!a->op->done || !b->op->done)
		err = SG_ENOTREADY;
	else
		*ms = (float)((double)((int64_t)b->op->t_end - (int64_t)a->op->t_end) / 1e6);
	pthread_mutex_unlock(&sg_mu);
	return err;
}

int sg_stream_wait_event(struct sg_stream *s, void *h)
{
	static const struct sg_work mark = { .kind = SG_WORK_NOP, .name = "wait" };
	struct sg_event *e = h;
	int err = SG_OK;

	pthread_mutex_lock(&sg_mu);
	if (!sg_handle_is(h, SG_HK_EVENT)) {
		err = SG_EHANDLE;
	} else if (e->capture && sg_handle_is(e->capture, SG_HK_GRAPH) && e->capture->capturing) {
		/* join: s now records into the same capture */
		if (!s->capture) {
			s->capture = e->capture;
			s->capture_origin = false;
		} else if (s->capture != e->capture) {
			err = SG_ECAPTURE_MERGE;
		}
	} else if (s->capture) {
		/* an event from outside the capture: nothing to record */
	} else if (e->op && !e->op->done) {
		err = sg_submit_locked(s, &mark, &e->op, 1, NULL);
	}
	pthread_mutex_unlock(&sg_mu);
	return err;
}
