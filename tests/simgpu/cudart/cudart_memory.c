/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cudart_memory.c — runtime API: device, managed, stream-ordered and pinned
 * allocations, host registration (each through its driver call: cudaMalloc
 * is cuMemAlloc_v2, cudaFree cuMemFree_v2, ...), and, on the model's memory
 * (gpu_mem.c) directly, pitched allocations, memory info and pointer
 * attributes.
 */
#include <string.h>

#include "cudart_internal.h"

#define DEV_KINDS ((1u << SG_MEM_DEVICE) | (1u << SG_MEM_MANAGED))

/* The entry checks of an allocation: the driver reached, an output pointer,
 * and a size of 0 answered here with NULL (the driver refuses 0 bytes).
 * Returns 1 when the call is complete (e has the answer), 0 to go on. */
static int alloc_prologue(cudaError_t *e, void **p, size_t size)
{
	*e = rt_enter_drv();
	if (!*e && !p)
		*e = cudaErrorInvalidValue;
	if (!*e && !size)
		*p = NULL;
	return *e || !size;
}

RT_API cudaError_t cudaMalloc(void **devPtr, size_t size)
{
	CUdeviceptr d = 0;
	cudaError_t e;

	if (!alloc_prologue(&e, devPtr, size)) {
		if (rt_direct)
			e = rt_err(sg_mem_alloc(rt_dev, size, SG_MEM_DEVICE, 0, devPtr));
		else if (!(e = rt_cu(rt_drv.cuMemAlloc_v2(&d, size))))
			*devPtr = (void *)(uintptr_t)d;
	}
	RT_RETURN(e, "size=%zu ptr=%p", size, !e ? *devPtr : NULL);
}

RT_API cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
	size_t pw = (width + 511) & ~(size_t)511;
	cudaError_t e = rt_enter();

	if (!e && (!pitch || !devPtr))
		e = cudaErrorInvalidValue;
	else if (!e && (!pw || !height))
		*devPtr = NULL;
	else if (!e)
		e = rt_err(sg_mem_alloc(rt_dev, pw * height, SG_MEM_DEVICE, 0, devPtr));
	if (!e)
		*pitch = pw;
	RT_RETURN(e, "width=%zu height=%zu ptr=%p", width, height, !e ? *devPtr : NULL);
}

static cudaError_t malloc_async(void **devPtr, size_t size, cudaStream_t h, bool per_thread)
{
	struct sg_stream *s;
	CUdeviceptr d = 0;
	cudaError_t e;

	if (alloc_prologue(&e, devPtr, size))
		return e;
	if (!rt_direct) {
		e = rt_cu((per_thread ? rt_drv.cuMemAllocAsync_ptsz
				      : rt_drv.cuMemAllocAsync)(&d, size, h));
		if (!e)
			*devPtr = (void *)(uintptr_t)d;
		return e;
	}
	e = rt_stream(h, per_thread, &s);
	if (e)
		return e;
	sg_stream_put(s);
	return rt_err(sg_mem_alloc(rt_dev, size, SG_MEM_DEVICE, 0, devPtr));
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
	CUdeviceptr d = 0;
	cudaError_t e = rt_enter_drv();

	if (!e &&
	    (!size || !devPtr || (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost)))
		e = cudaErrorInvalidValue;
	if (!e && rt_direct)
		e = rt_err(sg_mem_alloc(rt_dev, size, SG_MEM_MANAGED, flags, devPtr));
	else if (!e && !(e = rt_cu(rt_drv.cuMemAllocManaged(&d, size, flags))))
		*devPtr = (void *)(uintptr_t)d;
	RT_RETURN(e, "size=%zu flags=%#x ptr=%p", size, flags, !e ? *devPtr : NULL);
}

RT_API cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	cudaError_t e;

	if (!alloc_prologue(&e, ptr, size))
		e = rt_direct ? rt_err(sg_mem_alloc(rt_dev, size, SG_MEM_PINNED, 0, ptr))
			      : rt_cu(rt_drv.cuMemAllocHost_v2(ptr, size));
	RT_RETURN(e, "size=%zu ptr=%p", size, !e ? *ptr : NULL);
}

RT_API cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
	cudaError_t e = cudaErrorInvalidValue;

	if (!(flags & ~7u) && !alloc_prologue(&e, pHost, size))
		e = rt_direct ? rt_err(sg_mem_alloc(rt_dev, size, SG_MEM_PINNED, flags, pHost))
			      : rt_cu(rt_drv.cuMemHostAlloc(pHost, size, flags));
	RT_RETURN(e, "size=%zu flags=%#x ptr=%p", size, flags, !e ? *pHost : NULL);
}

/* cudaFree(NULL) and cudaFreeHost(NULL) only initialise: no driver call.
 * Otherwise the frees wait for all work first (the real ones synchronise). */
RT_API cudaError_t cudaFree(void *devPtr)
{
	cudaError_t e = rt_enter_drv();

	if (!e && devPtr)
		e = rt_direct ? rt_err(sg_mem_free_synced(devPtr, DEV_KINDS))
			      : rt_cu(rt_drv.cuMemFree_v2(RT_DPTR(devPtr)));
	RT_RETURN(e, "ptr=%p", devPtr);
}

RT_API cudaError_t cudaFreeHost(void *ptr)
{
	cudaError_t e = rt_enter_drv();

	if (!e && ptr)
		e = rt_direct ? rt_err(sg_mem_free_synced(ptr, 1u << SG_MEM_PINNED))
			      : rt_cu(rt_drv.cuMemFreeHost(ptr));
	RT_RETURN(e, "ptr=%p", ptr);
}

static cudaError_t free_async(void *p, cudaStream_t h, bool per_thread)
{
	struct sg_target t = rt_target(h, per_thread, false);
	cudaError_t e = rt_enter_drv();

	if (e || !p)
		return e;
	if (rt_direct)
		return rt_err(sg_mem_free_async(&t, p));
	return rt_cu(
		(per_thread ? rt_drv.cuMemFreeAsync_ptsz : rt_drv.cuMemFreeAsync)(RT_DPTR(p), h));
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
	cudaError_t e = rt_enter_drv();

	if (!e && (flags & ~15u))
		e = cudaErrorInvalidValue;
	if (!e)
		e = rt_direct ? rt_err(sg_host_register(ptr, size, flags))
			      : rt_cu(rt_drv.cuMemHostRegister_v2(ptr, size, flags));
	RT_RETURN(e, "ptr=%p size=%zu flags=%#x", ptr, size, flags);
}

RT_API cudaError_t cudaHostUnregister(void *ptr)
{
	cudaError_t e = rt_enter_drv();

	if (!e)
		e = rt_direct ? rt_err(sg_host_unregister(ptr))
			      : rt_cu(rt_drv.cuMemHostUnregister(ptr));
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

RT_API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes,
					    const void *ptr)
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
