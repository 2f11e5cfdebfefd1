/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cudart_copy.c — runtime API: cudaMemcpy, cudaMemcpy2D, cudaMemcpyPeer,
 * cudaMemset and their async / per-thread variants.
 *
 * 1D copies and memsets go through the driver: the kind picks the call
 * (cudaMemcpyHostToDevice -> cuMemcpyHtoD_v2, DeviceToHost -> DtoH_v2,
 * DeviceToDevice -> DtoD_v2, Default -> cuMemcpy; Async: the Async_v2 forms
 * and cuMemcpyAsync; _ptds/_ptsz: theirs), cudaMemset is cuMemsetD8_v2,
 * cudaMemsetAsync cuMemsetD8Async. Host-to-host, 2D and peer copies have no
 * traced driver counterpart and stay here, on the model (gpu_ops.c), which
 * the driver uses too: validation, copy paths, pageable staging and the
 * synchronous waits are the same through either layer.
 */
#include "cudart_internal.h"

/* A 1D copy through the driver: the call its kind and mode select. */
static CUresult drv_copy(void *dst, const void *src, size_t n, int kind, cudaStream_t h, bool pt,
			 bool sync)
{
	const struct rt_driver *D = &rt_drv;
	CUdeviceptr d = RT_DPTR(dst), s = RT_DPTR(src);

	switch (kind) {
	case cudaMemcpyHostToDevice:
		if (sync)
			return (pt ? D->cuMemcpyHtoD_v2_ptds : D->cuMemcpyHtoD_v2)(d, src, n);
		return (pt ? D->cuMemcpyHtoDAsync_v2_ptsz : D->cuMemcpyHtoDAsync_v2)(d, src, n, h);
	case cudaMemcpyDeviceToHost:
		if (sync)
			return (pt ? D->cuMemcpyDtoH_v2_ptds : D->cuMemcpyDtoH_v2)(dst, s, n);
		return (pt ? D->cuMemcpyDtoHAsync_v2_ptsz : D->cuMemcpyDtoHAsync_v2)(dst, s, n, h);
	case cudaMemcpyDeviceToDevice:
		if (sync)
			return (pt ? D->cuMemcpyDtoD_v2_ptds : D->cuMemcpyDtoD_v2)(d, s, n);
		return (pt ? D->cuMemcpyDtoDAsync_v2_ptsz : D->cuMemcpyDtoDAsync_v2)(d, s, n, h);
	default: /* cudaMemcpyDefault */
		if (sync)
			return (pt ? D->cuMemcpy_ptds : D->cuMemcpy)(d, s, n);
		return (pt ? D->cuMemcpyAsync_ptsz : D->cuMemcpyAsync)(d, s, n, h);
	}
}

/* A 1D copy: through the driver, but host to host (no driver call copies
 * between two host pointers by kind) and SIMGPU_RUNTIME_DIRECT. */
static cudaError_t copy(void *dst, const void *src, size_t count, int kind, cudaStream_t h,
			bool per_thread, bool sync)
{
	struct sg_target t = rt_target(h, per_thread, sync);
	cudaError_t e = rt_enter_drv();

	if (e)
		return e;
	if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
		return cudaErrorInvalidMemcpyDirection;
	if (rt_direct || kind == cudaMemcpyHostToHost)
		return rt_err(sg_copy(&t, dst, count, src, count, count, 1, kind));
	return rt_cu(drv_copy(dst, src, count, kind, h, per_thread, sync));
}

#define ARGS1 "dst=%p src=%p count=%zu kind=%d"
#define ARGS2 "dst=%p dpitch=%zu src=%p spitch=%zu width=%zu height=%zu kind=%d"

RT_API cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	RT_RETURN(copy(dst, src, count, kind, NULL, false, true), ARGS1, dst, src, count, kind);
}

RT_API cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count,
				   enum cudaMemcpyKind kind)
{
	RT_RETURN(copy(dst, src, count, kind, NULL, true, true), ARGS1, dst, src, count, kind);
}

RT_API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
				   enum cudaMemcpyKind kind, cudaStream_t stream)
{
	RT_RETURN(copy(dst, src, count, kind, stream, false, false), ARGS1 " stream=%p", dst, src,
		  count, kind, (void *)stream);
}

RT_API cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
					enum cudaMemcpyKind kind, cudaStream_t stream)
{
	RT_RETURN(copy(dst, src, count, kind, stream, true, false), ARGS1 " stream=%p", dst, src,
		  count, kind, (void *)stream);
}

/* 2D copies: on the model (no driver row is traced for cuMemcpy2D) */
static cudaError_t copy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
			  size_t height, int kind, cudaStream_t h, bool per_thread, bool sync)
{
	struct sg_target t = rt_target(h, per_thread, sync);
	cudaError_t e = rt_enter();

	return e ? e : rt_err(sg_copy(&t, dst, dpitch, src, spitch, width, height, kind));
}

RT_API cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch,
				size_t width, size_t height, enum cudaMemcpyKind kind)
{
	RT_RETURN(copy2d(dst, dpitch, src, spitch, width, height, kind, NULL, false, true), ARGS2,
		  dst, dpitch, src, spitch, width, height, kind);
}

RT_API cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch,
				     size_t width, size_t height, enum cudaMemcpyKind kind)
{
	RT_RETURN(copy2d(dst, dpitch, src, spitch, width, height, kind, NULL, true, true), ARGS2,
		  dst, dpitch, src, spitch, width, height, kind);
}

RT_API cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
				     size_t width, size_t height, enum cudaMemcpyKind kind,
				     cudaStream_t stream)
{
	RT_RETURN(copy2d(dst, dpitch, src, spitch, width, height, kind, stream, false, false),
		  ARGS2 " stream=%p", dst, dpitch, src, spitch, width, height, kind,
		  (void *)stream);
}

RT_API cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch,
					  size_t width, size_t height, enum cudaMemcpyKind kind,
					  cudaStream_t stream)
{
	RT_RETURN(copy2d(dst, dpitch, src, spitch, width, height, kind, stream, true, false),
		  ARGS2 " stream=%p", dst, dpitch, src, spitch, width, height, kind,
		  (void *)stream);
}

/* ---- peer (on the model) ------------------------------------------------------------------ */
static bool devlike(const struct sg_range *r)
{
	return r->kind == SG_MEM_DEVICE || r->kind == SG_MEM_MANAGED;
}

static cudaError_t peer(void *dst, int dd, const void *src, int sd, size_t count, cudaStream_t h,
			bool sync)
{
	struct sg_work w = {
		.kind = SG_WORK_COPY,
		.name = "peer",
		.dst = dst,
		.src = src,
		.width = count,
		.height = 1,
		.dpitch = count,
		.spitch = count,
	};
	struct sg_target t = rt_target(h, false, sync);
	struct sg_range a, b;
	int n = sg_device_count();
	cudaError_t e = rt_enter();

	if (e)
		return e;
	if (dd < 0 || dd >= n || sd < 0 || sd >= n)
		return cudaErrorInvalidDevice;
	if (!count)
		return cudaSuccess;
	if (!dst || !src || sg_mem_check(dst, count, &a) || sg_mem_check(src, count, &b) ||
	    !devlike(&a) || !devlike(&b) || a.device != dd || b.device != sd)
		return cudaErrorInvalidValue;
	w.dur_ns = sg_copy_ns(dd == sd ? SG_PATH_DTOD : SG_PATH_PEER, count);
	if (sync) {
		/* the destination device's default stream, serialised with the source's */
		t.dev = dd;
		return rt_err(sg_issue(&t, sd, &w));
	}
	return rt_err(sg_issue(&t, dd == rt_dev ? sd : dd, &w));
}

RT_API cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice,
				  size_t count)
{
	RT_RETURN(peer(dst, dstDevice, src, srcDevice, count, NULL, true),
		  "dst=%p dstDevice=%d src=%p srcDevice=%d count=%zu", dst, dstDevice, src,
		  srcDevice, count);
}

RT_API cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
				       size_t count, cudaStream_t stream)
{
	RT_RETURN(peer(dst, dstDevice, src, srcDevice, count, stream, false),
		  "dst=%p dstDevice=%d src=%p srcDevice=%d count=%zu stream=%p", dst, dstDevice,
		  src, srcDevice, count, (void *)stream);
}

/* ---- memset --------------------------------------------------------------------------------- */
static cudaError_t fill(void *p, int value, size_t count, cudaStream_t h, bool per_thread,
			bool sync)
{
	struct sg_target t = rt_target(h, per_thread, sync);
	const struct rt_driver *D = &rt_drv;
	cudaError_t e = rt_enter_drv();

	if (e)
		return e;
	if (rt_direct)
		return rt_err(sg_memset(&t, p, (unsigned)value & 0xff, 1, count));
	if (sync)
		return rt_cu((per_thread ? D->cuMemsetD8_v2_ptds : D->cuMemsetD8_v2)(
			RT_DPTR(p), (unsigned char)value, count));
	return rt_cu((per_thread ? D->cuMemsetD8Async_ptsz
				 : D->cuMemsetD8Async)(RT_DPTR(p), (unsigned char)value, count, h));
}

RT_API cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
	RT_RETURN(fill(devPtr, value, count, NULL, false, true), "ptr=%p value=%d count=%zu",
		  devPtr, value, count);
}

RT_API cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
{
	RT_RETURN(fill(devPtr, value, count, NULL, true, true), "ptr=%p value=%d count=%zu", devPtr,
		  value, count);
}

RT_API cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	RT_RETURN(fill(devPtr, value, count, stream, false, false),
		  "ptr=%p value=%d count=%zu stream=%p", devPtr, value, count, (void *)stream);
}

RT_API cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	RT_RETURN(fill(devPtr, value, count, stream, true, false),
		  "ptr=%p value=%d count=%zu stream=%p", devPtr, value, count, (void *)stream);
}
