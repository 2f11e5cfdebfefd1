/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cuda_copy.c — driver API: cuMemcpy (the pointers say the direction),
 * cuMemcpyHtoD/DtoH/DtoD (the direction is checked against the pointers),
 * their Async forms, cuMemsetD8/D32 and their Async forms, each with its
 * per-thread-default-stream twin (_ptds for synchronous calls, _ptsz for
 * stream-ordered ones). Validation, copy paths, pageable staging and waits
 * are the model's (gpu_ops.c), shared with the runtime: the same call
 * behaves the same through either layer. Synchronous calls queue on the
 * default stream (legacy, or the thread's with _ptds) and wait.
 */
#include "cuda_internal.h"

static CUresult copy(void *dst, const void *src, size_t n, int kind, CUstream h, int per_thread,
		     int sync)
{
	struct sg_target t;
	int dev;
	CUresult r = cu_enter_ctx(&dev);

	if (r)
		return r;
	t = cu_target(dev, h, per_thread, sync);
	return cu_err(sg_copy(&t, dst, n, src, n, n, 1, kind));
}

#define SYNC_FMT  "dst=%#llx src=%#llx bytes=%zu"
#define ASYNC_FMT SYNC_FMT " stream=%p"
#define U(p)	  ((unsigned long long)(uintptr_t)(p))

/* ---- synchronous ------------------------------------------------------------------------- */
CU_API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
	CU_RETURN(copy(CU_PTR(dst), CU_PTR(src), ByteCount, SG_COPY_DEFAULT, NULL, 0, 1), SYNC_FMT,
		  dst, src, ByteCount);
}

CU_API CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
	CU_RETURN(copy(CU_PTR(dst), CU_PTR(src), ByteCount, SG_COPY_DEFAULT, NULL, 1, 1), SYNC_FMT,
		  dst, src, ByteCount);
}

CU_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
	CU_RETURN(copy(CU_PTR(dstDevice), srcHost, ByteCount, SG_COPY_HTOD, NULL, 0, 1), SYNC_FMT,
		  dstDevice, U(srcHost), ByteCount);
}

CU_API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
	CU_RETURN(copy(CU_PTR(dstDevice), srcHost, ByteCount, SG_COPY_HTOD, NULL, 1, 1), SYNC_FMT,
		  dstDevice, U(srcHost), ByteCount);
}

CU_API CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
	CU_RETURN(copy(dstHost, CU_PTR(srcDevice), ByteCount, SG_COPY_DTOH, NULL, 0, 1), SYNC_FMT,
		  U(dstHost), srcDevice, ByteCount);
}

CU_API CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
	CU_RETURN(copy(dstHost, CU_PTR(srcDevice), ByteCount, SG_COPY_DTOH, NULL, 1, 1), SYNC_FMT,
		  U(dstHost), srcDevice, ByteCount);
}

CU_API CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
	CU_RETURN(copy(CU_PTR(dstDevice), CU_PTR(srcDevice), ByteCount, SG_COPY_DTOD, NULL, 0, 1),
		  SYNC_FMT, dstDevice, srcDevice, ByteCount);
}

CU_API CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
	CU_RETURN(copy(CU_PTR(dstDevice), CU_PTR(srcDevice), ByteCount, SG_COPY_DTOD, NULL, 1, 1),
		  SYNC_FMT, dstDevice, srcDevice, ByteCount);
}

/* ---- stream-ordered ---------------------------------------------------------------------- */
CU_API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
	CU_RETURN(copy(CU_PTR(dst), CU_PTR(src), ByteCount, SG_COPY_DEFAULT, hStream, 0, 0),
		  ASYNC_FMT, dst, src, ByteCount, (void *)hStream);
}

CU_API CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
				   CUstream hStream)
{
	CU_RETURN(copy(CU_PTR(dst), CU_PTR(src), ByteCount, SG_COPY_DEFAULT, hStream, 1, 0),
		  ASYNC_FMT, dst, src, ByteCount, (void *)hStream);
}

CU_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
				     CUstream hStream)
{
	CU_RETURN(copy(CU_PTR(dstDevice), srcHost, ByteCount, SG_COPY_HTOD, hStream, 0, 0),
		  ASYNC_FMT, dstDevice, U(srcHost), ByteCount, (void *)hStream);
}

CU_API CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost,
					  size_t ByteCount, CUstream hStream)
{
	CU_RETURN(copy(CU_PTR(dstDevice), srcHost, ByteCount, SG_COPY_HTOD, hStream, 1, 0),
		  ASYNC_FMT, dstDevice, U(srcHost), ByteCount, (void *)hStream);
}

CU_API CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
				     CUstream hStream)
{
	CU_RETURN(copy(dstHost, CU_PTR(srcDevice), ByteCount, SG_COPY_DTOH, hStream, 0, 0),
		  ASYNC_FMT, U(dstHost), srcDevice, ByteCount, (void *)hStream);
}

CU_API CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
					  CUstream hStream)
{
	CU_RETURN(copy(dstHost, CU_PTR(srcDevice), ByteCount, SG_COPY_DTOH, hStream, 1, 0),
		  ASYNC_FMT, U(dstHost), srcDevice, ByteCount, (void *)hStream);
}

CU_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
				     CUstream hStream)
{
	CU_RETURN(
		copy(CU_PTR(dstDevice), CU_PTR(srcDevice), ByteCount, SG_COPY_DTOD, hStream, 0, 0),
		ASYNC_FMT, dstDevice, srcDevice, ByteCount, (void *)hStream);
}

CU_API CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
					  size_t ByteCount, CUstream hStream)
{
	CU_RETURN(
		copy(CU_PTR(dstDevice), CU_PTR(srcDevice), ByteCount, SG_COPY_DTOD, hStream, 1, 0),
		ASYNC_FMT, dstDevice, srcDevice, ByteCount, (void *)hStream);
}

/* ---- memsets ------------------------------------------------------------------------------ */
static CUresult fill(CUdeviceptr p, unsigned value, unsigned elem, size_t n, CUstream h,
		     int per_thread, int sync)
{
	struct sg_target t;
	int dev;
	CUresult r = cu_enter_ctx(&dev);

	if (r)
		return r;
	t = cu_target(dev, h, per_thread, sync);
	return cu_err(sg_memset(&t, CU_PTR(p), value, elem, n));
}

#define SET_FMT "ptr=%#llx value=%#x count=%zu"

CU_API CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
	CU_RETURN(fill(dstDevice, uc, 1, N, NULL, 0, 1), SET_FMT, dstDevice, uc, N);
}

CU_API CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
	CU_RETURN(fill(dstDevice, uc, 1, N, NULL, 1, 1), SET_FMT, dstDevice, uc, N);
}

CU_API CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
	CU_RETURN(fill(dstDevice, ui, 4, N, NULL, 0, 1), SET_FMT, dstDevice, ui, N);
}

CU_API CUresult cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
	CU_RETURN(fill(dstDevice, ui, 4, N, NULL, 1, 1), SET_FMT, dstDevice, ui, N);
}

CU_API CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
	CU_RETURN(fill(dstDevice, uc, 1, N, hStream, 0, 0), SET_FMT " stream=%p", dstDevice, uc, N,
		  (void *)hStream);
}

CU_API CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N,
				     CUstream hStream)
{
	CU_RETURN(fill(dstDevice, uc, 1, N, hStream, 1, 0), SET_FMT " stream=%p", dstDevice, uc, N,
		  (void *)hStream);
}

CU_API CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
{
	CU_RETURN(fill(dstDevice, ui, 4, N, hStream, 0, 0), SET_FMT " stream=%p", dstDevice, ui, N,
		  (void *)hStream);
}

CU_API CUresult cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N,
				      CUstream hStream)
{
	CU_RETURN(fill(dstDevice, ui, 4, N, hStream, 1, 0), SET_FMT " stream=%p", dstDevice, ui, N,
		  (void *)hStream);
}
