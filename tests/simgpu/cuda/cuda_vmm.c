/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cuda_vmm.c — driver API: virtual memory management on the model's
 * (gpu_vmm.c): cuMemCreate makes a physical allocation on a device (charged
 * to its capacity), cuMemAddressReserve a virtual address range,
 * cuMemMap maps the one into the other, cuMemSetAccess grants access (until
 * then copies to the range fail), cuMemUnmap and cuMemRelease undo them (a
 * released allocation lives until its last mapping goes). The granularity
 * is 2 MiB. These calls need an initialised driver, not a context.
 */
#include "cuda_internal.h"

static CUresult check_prop(const CUmemAllocationProp *prop, int *dev)
{
	if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
		return CUDA_ERROR_INVALID_VALUE;
	if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_NOT_SUPPORTED; /* host (NUMA) allocations are not simulated */
	if (prop->location.id < 0 || prop->location.id >= sg_device_count())
		return CUDA_ERROR_INVALID_DEVICE;
	*dev = prop->location.id;
	return CUDA_SUCCESS;
}

CU_API CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
					      CUmemAllocationGranularity_flags option)
{
	int dev;
	CUresult r = cu_enter();

	if (!r && (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
				    option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)))
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r)
		r = check_prop(prop, &dev);
	if (!r)
		*granularity = SG_VMM_GRANULARITY;
	CU_RETURN(r, "option=%d granularity=%zu", (int)option, !r ? *granularity : 0);
}

CU_API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
			    const CUmemAllocationProp *prop, unsigned long long flags)
{
	struct sg_phys *p = NULL;
	int dev = -1;
	CUresult r = cu_enter();

	if (!r && (!handle || flags))
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r)
		r = check_prop(prop, &dev);
	if (!r)
		r = cu_err(sg_vmm_create(dev, size, &p));
	if (!r)
		*handle = (CUmemGenericAllocationHandle)(uintptr_t)p;
	CU_RETURN(r, "size=%zu dev=%d handle=%#llx", size, dev, (unsigned long long)(uintptr_t)p);
}

CU_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	CUresult r = cu_enter();

	if (!r)
		r = cu_err(sg_vmm_release(CU_PTR(handle)));
	CU_RETURN(r, "handle=%#llx", handle);
}

CU_API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
				    CUdeviceptr addr, unsigned long long flags)
{
	uintptr_t va = 0;
	CUresult r = cu_enter();

	if (!r && (!ptr || flags))
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r)
		r = cu_err(sg_vmm_reserve(size, alignment, (uintptr_t)addr, &va));
	if (!r)
		*ptr = (CUdeviceptr)va;
	CU_RETURN(r, "size=%zu alignment=%zu addr=%#llx ptr=%#lx", size, alignment, addr,
		  (unsigned long)va);
}

CU_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	CUresult r = cu_enter();

	if (!r)
		r = cu_err(sg_vmm_free((uintptr_t)ptr, size));
	CU_RETURN(r, "ptr=%#llx size=%zu", ptr, size);
}

CU_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
			 CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	CUresult r = cu_enter();

	if (!r && flags)
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r)
		r = cu_err(sg_vmm_map((uintptr_t)ptr, size, offset, CU_PTR(handle)));
	CU_RETURN(r, "ptr=%#llx size=%zu offset=%zu handle=%#llx", ptr, size, offset, handle);
}

CU_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	CUresult r = cu_enter();

	if (!r)
		r = cu_err(sg_vmm_unmap((uintptr_t)ptr, size));
	CU_RETURN(r, "ptr=%#llx size=%zu", ptr, size);
}

CU_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
			       size_t count)
{
	int access = 0;
	size_t i;
	CUresult r = cu_enter();

	if (!r && (!desc || !count))
		r = CUDA_ERROR_INVALID_VALUE;
	for (i = 0; !r && i < count; i++) {
		if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE)
			r = CUDA_ERROR_INVALID_VALUE;
		else if (desc[i].location.id < 0 || desc[i].location.id >= sg_device_count())
			r = CUDA_ERROR_INVALID_DEVICE;
		else if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
			 desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
			 desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			r = CUDA_ERROR_INVALID_VALUE;
		else if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE)
			access = 1;
	}
	if (!r)
		r = cu_err(sg_vmm_set_access((uintptr_t)ptr, size, access));
	CU_RETURN(r, "ptr=%#llx size=%zu count=%zu", ptr, size, count);
}
