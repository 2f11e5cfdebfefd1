/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cuda_memory.c — driver API: device, stream-ordered, managed and pinned
 * allocations, frees, host registration and memory info, on the model's
 * memory (gpu_mem.c, gpu_ops.c). Allocations are made on the current
 * context's device; a size of 0 is CUDA_ERROR_INVALID_VALUE, as the driver
 * documents. cuMemFree and cuMemFreeHost wait for all work first.
 */
#include "cuda_internal.h"

#define DEV_KINDS ((1u << SG_MEM_DEVICE) | (1u << SG_MEM_MANAGED))

CU_API CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
	size_t f = 0, t = 0;
	int dev;
	CUresult r = cu_enter_ctx(&dev);

	if (!r && (!free || !total))
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r) {
		sg_mem_info(dev, &f, &t);
		*free = f;
		*total = t;
	}
	CU_RETURN(r, "free=%zu total=%zu", f, t);
}

static CUresult alloc(int dev, void **out, size_t size, enum sg_mem_kind kind, unsigned flags)
{
	if (!out || !size)
		return CUDA_ERROR_INVALID_VALUE;
	return cu_err(sg_mem_alloc(dev, size, kind, flags, out));
}

static CUresult dev_alloc(CUdeviceptr *dptr, size_t size, enum sg_mem_kind kind, unsigned flags)
{
	void *p = NULL;
	int dev;
	CUresult r = cu_enter_ctx(&dev);

	if (!r && !dptr)
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r)
		r = alloc(dev, &p, size, kind, flags);
	if (!r)
		*dptr = (CUdeviceptr)(uintptr_t)p;
	return r;
}

CU_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	CUresult r = dev_alloc(dptr, bytesize, SG_MEM_DEVICE, 0);

	CU_RETURN(r, "bytes=%zu ptr=%#llx", bytesize, !r ? *dptr : 0ull);
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t size, CUstream h, int per_thread)
{
	struct sg_stream *s;
	int dev;
	CUresult r = cu_enter_ctx(&dev);

	if (r)
		return r;
	if (!dptr || !size)
		return CUDA_ERROR_INVALID_VALUE;
	r = cu_err(sg_stream_get(h, per_thread, dev, &s));
	sg_stream_put(s);
	if (r)
		return r;
	return dev_alloc(dptr, size, SG_MEM_DEVICE, 0);
}

CU_API CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	CUresult r = alloc_async(dptr, bytesize, hStream, 0);

	CU_RETURN(r, "bytes=%zu stream=%p ptr=%#llx", bytesize, (void *)hStream, !r ? *dptr : 0ull);
}

CU_API CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	CUresult r = alloc_async(dptr, bytesize, hStream, 1);

	CU_RETURN(r, "bytes=%zu stream=%p ptr=%#llx", bytesize, (void *)hStream, !r ? *dptr : 0ull);
}

CU_API CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	CUresult r = flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST
			     ? CUDA_ERROR_INVALID_VALUE
			     : 0;

	if (!r)
		r = dev_alloc(dptr, bytesize, SG_MEM_MANAGED, flags);
	CU_RETURN(r, "bytes=%zu flags=%#x ptr=%#llx", bytesize, flags, !r ? *dptr : 0ull);
}

static CUresult host_alloc(void **pp, size_t size, unsigned flags)
{
	int dev;
	CUresult r = cu_enter_ctx(&dev);

	if (!r && (flags & ~7u))
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r)
		r = alloc(dev, pp, size, SG_MEM_PINNED, flags);
	return r;
}

CU_API CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	CUresult r = host_alloc(pp, bytesize, 0);

	CU_RETURN(r, "bytes=%zu ptr=%p", bytesize, !r ? *pp : NULL);
}

CU_API CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	CUresult r = host_alloc(pp, bytesize, Flags);

	CU_RETURN(r, "bytes=%zu flags=%#x ptr=%p", bytesize, Flags, !r ? *pp : NULL);
}

static CUresult free_synced(void *p, unsigned kinds)
{
	int dev;
	CUresult r = cu_enter_ctx(&dev);

	return r ? r : cu_err(sg_mem_free_synced(p, kinds));
}

CU_API CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	CU_RETURN(free_synced(CU_PTR(dptr), DEV_KINDS), "ptr=%#llx", dptr);
}

CU_API CUresult cuMemFreeHost(void *p)
{
	CU_RETURN(free_synced(p, 1u << SG_MEM_PINNED), "ptr=%p", p);
}

static CUresult free_async(CUdeviceptr p, CUstream h, int per_thread)
{
	struct sg_target t;
	int dev;
	CUresult r = cu_enter_ctx(&dev);

	if (r)
		return r;
	t = cu_target(dev, h, per_thread, 0);
	return cu_err(sg_mem_free_async(&t, CU_PTR(p)));
}

CU_API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	CU_RETURN(free_async(dptr, hStream, 0), "ptr=%#llx stream=%p", dptr, (void *)hStream);
}

CU_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	CU_RETURN(free_async(dptr, hStream, 1), "ptr=%#llx stream=%p", dptr, (void *)hStream);
}

CU_API CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
	int dev;
	CUresult r = cu_enter_ctx(&dev);

	if (!r && (Flags & ~15u))
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r)
		r = cu_err(sg_host_register(p, bytesize, Flags));
	CU_RETURN(r, "ptr=%p bytes=%zu flags=%#x", p, bytesize, Flags);
}

CU_API CUresult cuMemHostUnregister(void *p)
{
	int dev;
	CUresult r = cu_enter_ctx(&dev);

	if (!r)
		r = cu_err(sg_host_unregister(p));
	CU_RETURN(r, "ptr=%p", p);
}
