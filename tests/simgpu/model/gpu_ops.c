/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpu_ops.c — operations as an API call issues them, shared by every API
 * layer so that the runtime (libcudart) and the driver (libcuda) behave
 * alike: copies (kind and pointer validation, copy path and duration,
 * pageable staging in the calling thread), memsets, kernel launches (the
 * host-side launch cost, configuration limits), synchronised and
 * stream-ordered frees.
 *
 * Like the real runtime and driver, pageable host memory is staged by the
 * calling thread: it reads the source (host to device) before queueing, or
 * writes the destination (device to host) after the wait, overlapping the
 * modelled duration, so its page faults happen inside the API call, on the
 * caller, as a tracer attributing faults expects.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.h"

static bool devlike(const struct sg_range *r)
{
	return r->kind == SG_MEM_DEVICE || r->kind == SG_MEM_MANAGED;
}

static bool pinned(const struct sg_range *r)
{
	return r->kind == SG_MEM_PINNED || r->kind == SG_MEM_REGISTERED ||
	       r->kind == SG_MEM_MANAGED;
}

/* Queues w on the target; *op (when not NULL) gets a reference to the queued op. */
static int issue(const struct sg_target *t, int peer_dev, struct sg_work *w, struct sg_op **op)
{
	struct sg_stream *s;
	int err = sg_stream_get(t->sync ? NULL : t->stream, t->per_thread, t->dev, &s);

	if (err) {
		sg_stream_put(s);
		return err;
	}
	if (t->sync && sg_capture_status(s) != SG_CAPTURE_NONE) {
		sg_stream_put(s);
		return SG_ECAPTURE_UNSUPPORTED;
	}
	if (peer_dev >= 0)
		err = sg_submit_peer(s, peer_dev, w, op);
	else
		err = sg_submit(s, w, op);
	sg_stream_put(s);
	return err;
}

int sg_issue(const struct sg_target *t, int peer_dev, struct sg_work *w)
{
	struct sg_op *op = NULL;
	int err = issue(t, peer_dev, w, t->sync ? &op : NULL);

	if (!err && t->sync)
		sg_op_wait(op);
	return err;
}

/* ---- copies -------------------------------------------------------------------------- */
/* Validates a copy and fills w->dur_ns; returns the path through *path. */
static int plan_copy(struct sg_work *w, int kind, enum sg_path *path)
{
	struct sg_range d, s;
	size_t h = w->height ? w->height : 1;
	size_t dlen = w->dpitch * (h - 1) + w->width, slen = w->spitch * (h - 1) + w->width;
	bool dd, sd;

	if (!w->dst || !w->src)
		return SG_EINVAL;
	if (h > 1 && (w->width > w->dpitch || w->width > w->spitch))
		return SG_EPITCH;
	if (sg_mem_check(w->dst, dlen, &d) || sg_mem_check(w->src, slen, &s))
		return SG_EINVAL;
	dd = devlike(&d);
	sd = devlike(&s);
	switch (kind) {
	case SG_COPY_HTOD:
		if (!dd || s.kind == SG_MEM_DEVICE)
			return SG_EINVAL;
		sd = false;
		break;
	case SG_COPY_DTOH:
		if (!sd || d.kind == SG_MEM_DEVICE)
			return SG_EINVAL;
		dd = false;
		break;
	case SG_COPY_DTOD:
		if (!dd || !sd)
			return SG_EINVAL;
		break;
	case SG_COPY_HTOH:
		if (d.kind == SG_MEM_DEVICE || s.kind == SG_MEM_DEVICE)
			return SG_EINVAL;
		dd = sd = false;
		break;
	default: /* SG_COPY_DEFAULT: from the pointers */
		break;
	}
	if (dd && sd)
		*path = d.device == s.device ? SG_PATH_DTOD : SG_PATH_PEER;
	else if (dd)
		*path = pinned(&s) ? SG_PATH_HTOD_PINNED : SG_PATH_HTOD_PAGEABLE;
	else if (sd)
		*path = pinned(&d) ? SG_PATH_DTOH_PINNED : SG_PATH_DTOH_PAGEABLE;
	else
		*path = SG_PATH_HTOH;
	w->dur_ns = sg_copy_ns(*path, (uint64_t)w->width * h);
	return SG_OK;
}

/* Synchronous, from pageable memory: the caller stages the source, and the
 * staging overlaps the modelled transfer, which is ready from the call's
 * start (the call takes the modelled time, not that plus the staging memcpy,
 * unless the staging itself takes longer). */
static int copy_from_pageable(const struct sg_target *t, struct sg_work *w)
{
	size_t rows = w->height ? w->height : 1;
	uint64_t t0 = sg_now_ns();
	char *staging = malloc(w->width * rows);
	int err;

	if (!staging)
		return SG_ENOMEM;
	for (size_t r = 0; r < rows; r++)
		memcpy(staging + r * w->width, (const char *)w->src + r * w->spitch, w->width);
	w->src = staging;
	w->spitch = w->width;
	w->t_ready = t0;
	err = sg_issue(t, -1, w);
	free(staging);
	return err;
}

/* Synchronous, into pageable memory: ordered after earlier default-stream
 * work, the transfer fills a staging buffer at its modelled start, and the
 * caller copies it out while the modelled transfer runs, then waits for its
 * modelled end. */
static int copy_to_pageable(const struct sg_target *t, struct sg_work *w)
{
	size_t rows = w->height ? w->height : 1;
	char *dst = w->dst, *staging = malloc(w->width * rows);
	size_t dpitch = w->dpitch;
	struct sg_op *op = NULL;
	int err;

	if (!staging)
		return SG_ENOMEM;
	w->dst = staging;
	w->dpitch = w->width;
	w->signal_moved = 1;
	err = issue(t, -1, w, &op);
	if (!err) {
		sg_op_wait_moved(op);
		for (size_t r = 0; r < rows; r++)
			memcpy(dst + r * dpitch, staging + r * w->width, w->width);
		sg_op_wait(op);
	}
	free(staging);
	return err;
}

int sg_copy(const struct sg_target *t, void *dst, size_t dpitch, const void *src, size_t spitch,
	    size_t width, size_t height, int kind)
{
	struct sg_work w = {
		.kind = SG_WORK_COPY,
		.name = "copy",
		.dst = dst,
		.src = src,
		.width = width,
		.height = height,
		.dpitch = dpitch,
		.spitch = spitch,
	};
	enum sg_path path;
	int err;

	if (kind < SG_COPY_HTOH || kind > SG_COPY_DEFAULT)
		return SG_EDIRECTION;
	if (!width || !height)
		return SG_OK;
	err = plan_copy(&w, kind, &path);
	if (err)
		return err;
	if (t->sync && path == SG_PATH_HTOD_PAGEABLE)
		return copy_from_pageable(t, &w);
	if (t->sync && path == SG_PATH_DTOH_PAGEABLE)
		return copy_to_pageable(t, &w);
	/* an async copy from pageable memory owns its source on return */
	w.stage_src = !t->sync && path == SG_PATH_HTOD_PAGEABLE;
	return sg_issue(t, -1, &w);
}

/* ---- memset ---------------------------------------------------------------------------- */
int sg_memset(const struct sg_target *t, void *dst, unsigned value, unsigned elem, size_t count)
{
	struct sg_work w = { .kind = SG_WORK_MEMSET, .name = "memset", .dst = dst, .height = 1 };
	struct sg_range r;
	size_t bytes;

	if (elem != 2 && elem != 4)
		elem = 1;
	bytes = count * elem;
	if (count && bytes / elem != count)
		return SG_EINVAL;
	if (!dst || (uintptr_t)dst % elem || sg_mem_check(dst, bytes, &r) || !devlike(&r))
		return SG_EINVAL;
	if (!count)
		return SG_OK;
	w.elem = elem;
	w.value = (int)(elem == 1 ? (value & 0xff) : elem == 2 ? (value & 0xffff) : value);
	w.width = bytes;
	w.dur_ns = sg_copy_ns(SG_PATH_MEMSET, bytes);
	return sg_issue(t, -1, &w);
}

/* ---- launches -------------------------------------------------------------------------- */
int sg_launch_check(const unsigned g[3], const unsigned b[3], size_t smem)
{
	if (!g[0] || !g[1] || !g[2] || !b[0] || !b[1] || !b[2] || g[1] > 65535 || g[2] > 65535 ||
	    g[0] > 0x7fffffffu || b[2] > 64 || (uint64_t)b[0] * b[1] * b[2] > 1024)
		return SG_ECONFIG;
	if (smem > 227 * 1024)
		return SG_EINVAL;
	return SG_OK;
}

int sg_launch(const struct sg_target *t, const void *func, const unsigned grid[3],
	      const unsigned block[3], size_t smem, const char **name)
{
	struct sg_work w = { .kind = SG_WORK_KERNEL };
	const struct sg_config *c = sg_config();
	struct sg_target q = *t;
	int err;

	/* the host-side cost of a launch: CPU work in the calling thread */
	if (c->launch_ns)
		sg_spin_ns(c->launch_ns);
	if (name)
		*name = NULL;
	if (sg_func_info(func, NULL, &w.name, &w.dur_ns))
		return SG_EHANDLE;
	if (name)
		*name = w.name;
	err = sg_launch_check(grid, block, smem);
	if (err)
		return err;
	q.sync = 0;
	return sg_issue(&q, -1, &w);
}

/* ---- frees ------------------------------------------------------------------------------ */
/* Frees after all work that might still touch the memory (the real
 * cudaFree, cuMemFree and cudaFreeHost synchronise too). */
int sg_mem_free_synced(void *p, unsigned kinds)
{
	struct sg_range r;

	if (!p || sg_mem_lookup(p, &r) || r.base != (uintptr_t)p || !(kinds & (1u << r.kind)) ||
	    (r.flags & SG_RANGE_VMM))
		return SG_EINVAL;
	sg_all_sync();
	return sg_mem_free(p, kinds, NULL);
}

int sg_mem_free_async(const struct sg_target *t, void *p)
{
	struct sg_work w = { .kind = SG_WORK_FREE, .dst = p, .name = "free" };
	struct sg_target q = *t;
	struct sg_range r;
	unsigned kinds = (1u << SG_MEM_DEVICE) | (1u << SG_MEM_MANAGED);

	if (!p || sg_mem_lookup(p, &r) || r.base != (uintptr_t)p || !(kinds & (1u << r.kind)) ||
	    (r.flags & SG_RANGE_VMM))
		return SG_EINVAL;
	q.sync = 0;
	return sg_issue(&q, -1, &w);
}
