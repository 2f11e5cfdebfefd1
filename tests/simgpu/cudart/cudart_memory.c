/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cudart_memory.c — runtime API: device, managed, stream-ordered and pinned
 * allocations, host registration, memory info and pointer attributes, on
 * top of the model's memory (gpu_mem.c).
 */
#include <string.h>

#include "cudart_internal.h"

#define DEV_KINDS ((1u << SG_MEM_DEVICE) | (1u << SG_MEM_MANAGED))

static cudaError_t alloc(void **p, size_t size, enum sg_mem_kind kind, unsigned flags)
{
	cudaError_t e = rt_enter();

	if (e)
		return e;
	if (!p)
		return cudaErrorInvalidValue;
	if (!size) {
		*p = NULL;
		return cudaSuccess;
	}
	return rt_err(sg_mem_alloc(rt_dev, size, kind, flags, p));
}

RT_API cudaError_t cudaMalloc(void **devPtr, size_t size)
{
	cudaError_t e = alloc(devPtr, size, SG_MEM_DEVICE, 0);

	RT_RETURN(e, "size=%zu ptr=%p", size, !e ? *devPtr : NULL);
}

RT_API cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
	size_t pw = (width + 511) & ~(size_t)511;
	cudaError_t e = pitch ? alloc(devPtr, pw * height, SG_MEM_DEVICE, 0) : cudaErrorInvalidValue;

	if (!e)
		*pitch = pw;
	RT_RETURN(e, "width=%zu height=%zu ptr=%p", width, height, !e ? *devPtr : NULL);
}

static cudaError_t malloc_async(void **devPtr, size_t size, cudaStream_t h, bool per_thread)
{
	struct sg_stream *s;
	cudaError_t e = rt_enter();

	if (!e)
		e = rt_stream(h, per_thread, &s);
	if (e)
		return e;
	sg_stream_put(s);
	return alloc(devPtr, size, SG_MEM_DEVICE, 0);
}

RT_API cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
	cudaError_t e = malloc_async(devPtr, size, hStream, false);

	RT_RETURN(e, "size=%zu stream=%p ptr=%p", size, (void *)hStream, !e ? *devPtr : NULL);
}

RT_API cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream)
{
	cudaError_t e = malloc_async(devPtr, size, hStream, true);

	RT_RETURN(e, "size=%zu stream=%p ptr=%p", size, (void *)hStream, !e ? *devPtr : NULL);
}

RT_API cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
	cudaError_t e = rt_enter();

	if (!e && (!size || (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost)))
		e = cudaErrorInvalidValue;
	if (!e)
		e = alloc(devPtr, size, SG_MEM_MANAGED, flags);
	RT_RETURN(e, "size=%zu flags=%#x ptr=%p", size, flags, !e ? *devPtr : NULL);
}

RT_API cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	cudaError_t e = alloc(ptr, size, SG_MEM_PINNED, 0);

	RT_RETURN(e, "size=%zu ptr=%p", size, !e ? *ptr : NULL);
}

RT_API cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
	cudaError_t e = flags & ~7u ? cudaErrorInvalidValue : alloc(pHost, size, SG_MEM_PINNED, flags);

	RT_RETURN(e, "size=%zu flags=%#x ptr=%p", size, flags, !e ? *pHost : NULL);
}

/* Frees after all work that might still touch the memory (the real
 * cudaFree and cudaFreeHost synchronise too). */
static cudaError_t free_sync(void *p, unsigned kinds)
{
	struct sg_range r;
	cudaError_t e = rt_enter();

	if (e || !p)
		return e;
	if (sg_mem_lookup(p, &r) || r.base != (uintptr_t)p || !(kinds & (1u << r.kind)))
		return cudaErrorInvalidValue;
	sg_all_sync();
	return rt_err(sg_mem_free(p, kinds, NULL));
}

RT_API cudaError_t cudaFree(void *devPtr)
{
	cudaError_t e = free_sync(devPtr, DEV_KINDS);

	RT_RETURN(e, "ptr=%p", devPtr);
}

RT_API cudaError_t cudaFreeHost(void *ptr)
{
	cudaError_t e = free_sync(ptr, 1u << SG_MEM_PINNED);

	RT_RETURN(e, "ptr=%p", ptr);
}

static cudaError_t free_async(void *p, cudaStream_t h, bool per_thread)
{
	struct sg_work w = { .kind = SG_WORK_FREE, .dst = p, .name = "free" };
	struct sg_range r;
	struct sg_stream *s;
	cudaError_t e = rt_enter();

	if (e || !p)
		return e;
	if (sg_mem_lookup(p, &r) || r.base != (uintptr_t)p || !(DEV_KINDS & (1u << r.kind)))
		return cudaErrorInvalidValue;
	e = rt_stream(h, per_thread, &s);
	if (e)
		return e;
	e = rt_err(sg_submit(s, &w, NULL));
	sg_stream_put(s);
	return e;
}

RT_API cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
	cudaError_t e = free_async(devPtr, hStream, false);

	RT_RETURN(e, "ptr=%p stream=%p", devPtr, (void *)hStream);
}

RT_API cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
{
	cudaError_t e = free_async(devPtr, hStream, true);

	RT_RETURN(e, "ptr=%p stream=%p", devPtr, (void *)hStream);
}

RT_API cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
	cudaError_t e = rt_enter();

	if (!e && (flags & ~15u))
		e = cudaErrorInvalidValue;
	if (!e)
		e = rt_err(sg_host_register(ptr, size, flags));
	RT_RETURN(e, "ptr=%p size=%zu flags=%#x", ptr, size, flags);
}

RT_API cudaError_t cudaHostUnregister(void *ptr)
{
	cudaError_t e = rt_enter();

	if (!e)
		e = rt_err(sg_host_unregister(ptr));
	RT_RETURN(e, "ptr=%p", ptr);
}

RT_API cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags)
{
	struct sg_range r;
	cudaError_t e = rt_enter();

	if (!e && (!pDevice || flags || sg_mem_lookup(pHost, &r) ||
		   (r.kind != SG_MEM_PINNED && r.kind != SG_MEM_REGISTERED)))
		e = cudaErrorInvalidValue;
	if (!e)
		*pDevice = pHost; /* unified addressing: the same address */
	RT_RETURN(e, "host=%p", pHost);
}

RT_API cudaError_t cudaHostGetFlags(unsigned int *pFlags, void *pHost)
{
	struct sg_range r;
	cudaError_t e = rt_enter();

	if (!e && (!pFlags || sg_mem_lookup(pHost, &r) || r.kind != SG_MEM_PINNED))
		e = cudaErrorInvalidValue;
	if (!e)
		*pFlags = r.flags;
	RT_RETURN(e, "host=%p", pHost);
}

RT_API cudaError_t cudaMemGetInfo(size_t *free, size_t *total)
{
	size_t f = 0, t = 0;
	cudaError_t e = rt_enter();

	if (!e && (!free || !total))
		e = cudaErrorInvalidValue;
	if (!e) {
		sg_mem_info(rt_dev, &f, &t);
		*free = f;
		*total = t;
	}
	RT_RETURN(e, "free=%zu total=%zu", f, t);
}

RT_API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr)
{
	struct sg_range r;
	cudaError_t e = rt_enter();

	if (!e && !attributes)
		e = cudaErrorInvalidValue;
	if (!e) {
		memset(attributes, 0, sizeof(*attributes));
		sg_mem_lookup(ptr, &r);
		attributes->device = r.device >= 0 ? r.device : cudaInvalidDeviceId;
		switch (r.kind) {
		case SG_MEM_DEVICE:
			attributes->type = cudaMemoryTypeDevice;
			attributes->devicePointer = (void *)ptr;
			break;
		case SG_MEM_MANAGED:
			attributes->type = cudaMemoryTypeManaged;
			attributes->devicePointer = attributes->hostPointer = (void *)ptr;
			break;
		case SG_MEM_PINNED:
		case SG_MEM_REGISTERED:
			attributes->type = cudaMemoryTypeHost;
			attributes->device = rt_dev;
			attributes->devicePointer = attributes->hostPointer = (void *)ptr;
			break;
		default:
			attributes->type = cudaMemoryTypeUnregistered;
			attributes->device = cudaInvalidDeviceId;
			break;
		}
	}
	RT_RETURN(e, "ptr=%p type=%d", ptr, e ? -1 : (int)attributes->type);
}
