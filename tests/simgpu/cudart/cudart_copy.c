/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cudart_copy.c — runtime API: cudaMemcpy, cudaMemcpy2D, cudaMemcpyPeer,
 * cudaMemset and their async / per-thread variants. Validates kinds and
 * pointers, picks the copy path (pinned or pageable host, device, peer)
 * that sets the modelled duration, and queues the work: synchronous calls
 * go to the default stream and wait for completion; async calls return.
 * Like the real runtime, pageable host memory is staged by the calling
 * thread: it reads the source (host to device) or writes the destination
 * (device to host, after the wait) itself, so its page faults happen inside
 * the API call, on the caller, as a tracer attributing faults expects.
 */
#include <stdlib.h>
#include <string.h>

#include "cudart_internal.h"

static bool devlike(const struct sg_range *r)
{
	return r->kind == SG_MEM_DEVICE || r->kind == SG_MEM_MANAGED;
}

static bool pinned(const struct sg_range *r)
{
	return r->kind == SG_MEM_PINNED || r->kind == SG_MEM_REGISTERED || r->kind == SG_MEM_MANAGED;
}

/* Validates a copy and fills w->dur_ns; returns the path through *path. */
static cudaError_t plan_copy(struct sg_work *w, int kind, enum sg_path *path)
{
	struct sg_range d, s;
	size_t h = w->height ? w->height : 1;
	size_t dlen = w->dpitch * (h - 1) + w->width, slen = w->spitch * (h - 1) + w->width;
	bool dd, sd;

	if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
		return cudaErrorInvalidMemcpyDirection;
	if (!w->dst || !w->src)
		return cudaErrorInvalidValue;
	if (h > 1 && (w->width > w->dpitch || w->width > w->spitch))
		return cudaErrorInvalidPitchValue;
	if (sg_mem_check(w->dst, dlen, &d) || sg_mem_check(w->src, slen, &s))
		return cudaErrorInvalidValue;
	dd = devlike(&d);
	sd = devlike(&s);
	switch (kind) {
	case cudaMemcpyHostToDevice:
		if (!dd || s.kind == SG_MEM_DEVICE)
			return cudaErrorInvalidValue;
		sd = false;
		break;
	case cudaMemcpyDeviceToHost:
		if (!sd || d.kind == SG_MEM_DEVICE)
			return cudaErrorInvalidValue;
		dd = false;
		break;
	case cudaMemcpyDeviceToDevice:
		if (!dd || !sd)
			return cudaErrorInvalidValue;
		break;
	case cudaMemcpyHostToHost:
		if (d.kind == SG_MEM_DEVICE || s.kind == SG_MEM_DEVICE)
			return cudaErrorInvalidValue;
		dd = sd = false;
		break;
	default: /* cudaMemcpyDefault: from the pointers */
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
	return cudaSuccess;
}

/* Queues w on stream h (sync: the default stream, then waits). */
static cudaError_t issue(struct sg_work *w, cudaStream_t h, bool per_thread, bool sync, int peer_dev)
{
	struct sg_stream *s;
	struct sg_op *op = NULL;
	cudaError_t e = rt_stream(sync ? NULL : h, per_thread, &s);

	if (e)
		return e;
	if (sync && sg_capture_status(s) != SG_CAPTURE_NONE) {
		sg_stream_put(s);
		return cudaErrorStreamCaptureUnsupported;
	}
	if (peer_dev >= 0)
		e = rt_err(sg_submit_peer(s, peer_dev, w, sync ? &op : NULL));
	else
		e = rt_err(sg_submit(s, w, sync ? &op : NULL));
	sg_stream_put(s);
	if (!e && sync)
		sg_op_wait(op);
	return e;
}

/*
 * Pageable host memory, synchronous copies: the calling thread stages it,
 * and the staging overlaps the modelled transfer (the call still takes the
 * modelled time, not that plus the staging memcpy).
 */
static cudaError_t copy_from_pageable(struct sg_work *w, cudaStream_t h, bool per_thread)
{
	size_t rows = w->height ? w->height : 1;
	uint64_t t0 = sg_now_ns(), spent;
	char *staging = malloc(w->width * rows);
	cudaError_t e;

	if (!staging)
		return cudaErrorMemoryAllocation;
	for (size_t r = 0; r < rows; r++)
		memcpy(staging + r * w->width, (const char *)w->src + r * w->spitch, w->width);
	w->src = staging;
	w->spitch = w->width;
	spent = sg_now_ns() - t0;
	w->dur_ns = w->dur_ns > spent ? w->dur_ns - spent : 0;
	e = issue(w, h, per_thread, true, -1);
	free(staging);
	return e;
}

static cudaError_t copy_to_pageable(struct sg_work *w, cudaStream_t h, bool per_thread)
{
	size_t rows = w->height ? w->height : 1;
	char *dst = w->dst, *staging = malloc(w->width * rows);
	size_t dpitch = w->dpitch;
	uint64_t dur = w->dur_ns, t0;
	cudaError_t e;

	if (!staging)
		return cudaErrorMemoryAllocation;
	/* ordered after earlier default-stream work, the GPU fills the staging buffer... */
	w->dst = staging;
	w->dpitch = w->width;
	w->dur_ns = 0;
	e = issue(w, h, per_thread, true, -1);
	if (!e) {
		/* ...and the caller copies it out while the modelled transfer runs */
		t0 = sg_now_ns();
		for (size_t r = 0; r < rows; r++)
			memcpy(dst + r * dpitch, staging + r * w->width, w->width);
		sg_sleep_until(t0 + dur);
	}
	free(staging);
	return e;
}

static cudaError_t copy(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
			int kind, cudaStream_t h, bool per_thread, bool sync)
{
	struct sg_work w = {
		.kind = SG_WORK_COPY, .name = "copy", .dst = dst, .src = src, .width = width,
		.height = height, .dpitch = dpitch, .spitch = spitch,
	};
	enum sg_path path;
	cudaError_t e = rt_enter();

	if (e)
		return e;
	if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
		return cudaErrorInvalidMemcpyDirection;
	if (!width || !height)
		return cudaSuccess;
	e = plan_copy(&w, kind, &path);
	if (e)
		return e;
	if (sync && path == SG_PATH_HTOD_PAGEABLE)
		return copy_from_pageable(&w, h, per_thread);
	if (sync && path == SG_PATH_DTOH_PAGEABLE)
		return copy_to_pageable(&w, h, per_thread);
	/* an async copy from pageable memory owns its source on return */
	w.stage_src = !sync && path == SG_PATH_HTOD_PAGEABLE;
	return issue(&w, h, per_thread, sync, -1);
}

#define ARGS1 "dst=%p src=%p count=%zu kind=%d"
#define ARGS2 "dst=%p dpitch=%zu src=%p spitch=%zu width=%zu height=%zu kind=%d"

RT_API cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	RT_RETURN(copy(dst, count, src, count, count, 1, kind, NULL, false, true), ARGS1, dst, src, count, kind);
}

RT_API cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	RT_RETURN(copy(dst, count, src, count, count, 1, kind, NULL, true, true), ARGS1, dst, src, count, kind);
}

RT_API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
				   cudaStream_t stream)
{
	RT_RETURN(copy(dst, count, src, count, count, 1, kind, stream, false, false), ARGS1 " stream=%p", dst, src,
		  count, kind, (void *)stream);
}

RT_API cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
					cudaStream_t stream)
{
	RT_RETURN(copy(dst, count, src, count, count, 1, kind, stream, true, false), ARGS1 " stream=%p", dst, src,
		  count, kind, (void *)stream);
}

RT_API cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
				size_t height, enum cudaMemcpyKind kind)
{
	RT_RETURN(copy(dst, dpitch, src, spitch, width, height, kind, NULL, false, true), ARGS2, dst, dpitch, src,
		  spitch, width, height, kind);
}

RT_API cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
				     size_t height, enum cudaMemcpyKind kind)
{
	RT_RETURN(copy(dst, dpitch, src, spitch, width, height, kind, NULL, true, true), ARGS2, dst, dpitch, src,
		  spitch, width, height, kind);
}

RT_API cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
				     size_t height, enum cudaMemcpyKind kind, cudaStream_t stream)
{
	RT_RETURN(copy(dst, dpitch, src, spitch, width, height, kind, stream, false, false), ARGS2 " stream=%p",
		  dst, dpitch, src, spitch, width, height, kind, (void *)stream);
}

RT_API cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
					  size_t height, enum cudaMemcpyKind kind, cudaStream_t stream)
{
	RT_RETURN(copy(dst, dpitch, src, spitch, width, height, kind, stream, true, false), ARGS2 " stream=%p",
		  dst, dpitch, src, spitch, width, height, kind, (void *)stream);
}

/* ---- peer ------------------------------------------------------------------------ */
static cudaError_t peer(void *dst, int dd, const void *src, int sd, size_t count, cudaStream_t h, bool sync)
{
	struct sg_work w = {
		.kind = SG_WORK_COPY, .name = "peer", .dst = dst, .src = src, .width = count,
		.height = 1, .dpitch = count, .spitch = count,
	};
	struct sg_range a, b;
	int n = sg_device_count(), saved = rt_dev;
	cudaError_t e = rt_enter();

	if (e)
		return e;
	if (dd < 0 || dd >= n || sd < 0 || sd >= n)
		return cudaErrorInvalidDevice;
	if (!count)
		return cudaSuccess;
	if (!dst || !src || sg_mem_check(dst, count, &a) || sg_mem_check(src, count, &b) || !devlike(&a) ||
	    !devlike(&b) || a.device != dd || b.device != sd)
		return cudaErrorInvalidValue;
	w.dur_ns = sg_copy_ns(dd == sd ? SG_PATH_DTOD : SG_PATH_PEER, count);
	if (sync) {
		/* the destination device's default stream, serialised with the source's */
		rt_dev = dd;
		e = issue(&w, NULL, false, true, sd);
		rt_dev = saved;
		return e;
	}
	return issue(&w, h, false, false, dd == rt_dev ? sd : dd);
}

RT_API cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count)
{
	RT_RETURN(peer(dst, dstDevice, src, srcDevice, count, NULL, true), "dst=%p dstDevice=%d src=%p srcDevice=%d count=%zu",
		  dst, dstDevice, src, srcDevice, count);
}

RT_API cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice, size_t count,
				       cudaStream_t stream)
{
	RT_RETURN(peer(dst, dstDevice, src, srcDevice, count, stream, false),
		  "dst=%p dstDevice=%d src=%p srcDevice=%d count=%zu stream=%p", dst, dstDevice, src, srcDevice, count,
		  (void *)stream);
}

/* ---- memset ------------------------------------------------------------------------- */
static cudaError_t fill(void *p, int value, size_t count, cudaStream_t h, bool per_thread, bool sync)
{
	struct sg_work w = { .kind = SG_WORK_MEMSET, .name = "memset", .dst = p, .value = value & 0xff,
			     .width = count, .height = 1 };
	struct sg_range r;
	cudaError_t e = rt_enter();

	if (e)
		return e;
	if (!p || sg_mem_check(p, count, &r) || !devlike(&r))
		return cudaErrorInvalidValue;
	if (!count)
		return cudaSuccess;
	w.dur_ns = sg_copy_ns(SG_PATH_MEMSET, count);
	return issue(&w, h, per_thread, sync, -1);
}

RT_API cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
	RT_RETURN(fill(devPtr, value, count, NULL, false, true), "ptr=%p value=%d count=%zu", devPtr, value, count);
}

RT_API cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
{
	RT_RETURN(fill(devPtr, value, count, NULL, true, true), "ptr=%p value=%d count=%zu", devPtr, value, count);
}

RT_API cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	RT_RETURN(fill(devPtr, value, count, stream, false, false), "ptr=%p value=%d count=%zu stream=%p", devPtr,
		  value, count, (void *)stream);
}

RT_API cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	RT_RETURN(fill(devPtr, value, count, stream, true, false), "ptr=%p value=%d count=%zu stream=%p", devPtr,
		  value, count, (void *)stream);
}
