/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cuda_procaddr.c — driver API: cuGetProcAddress_v2, the driver entry point
 * table that CUDA libraries (the real runtime, cuBLAS, NCCL) use instead of
 * linking cu* symbols. symbol is a base name ("cuMemAlloc", not
 * "cuMemAlloc_v2"); the answer is the newest version of it that cudaVersion
 * allows (cuEventElapsedTime: _v2 from 12.8, cuCtxCreate: _v4 from 12.5),
 * and with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM its _ptsz/_ptds
 * form where there is one. Returns the exported functions themselves, so a
 * call through the pointer is a call of the exported symbol.
 */
#include <string.h>

#include "cuda_internal.h"

#undef cuEventElapsedTime
#undef cuDevicePrimaryCtxRelease
CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
CUresult cuDevicePrimaryCtxRelease(CUdevice dev);

struct entry {
	const char *name;
	int since; /* the first CUDA version (1000 * major + 10 * minor) of this version */
	void *fn;
	void *per_thread; /* the _ptsz / _ptds form, or NULL */
};

#define E(name, since, fn)                    \
	{                                     \
		name, since, (void *)fn, NULL \
	}
#define P(name, since, fn, pt)                      \
	{                                           \
		name, since, (void *)fn, (void *)pt \
	}

static const struct entry table[] = {
	E("cuInit", 2000, cuInit),
	E("cuDriverGetVersion", 2020, cuDriverGetVersion),
	E("cuGetErrorName", 6000, cuGetErrorName),
	E("cuGetErrorString", 6000, cuGetErrorString),
	E("cuGetProcAddress", 12000, cuGetProcAddress_v2),
	E("cuDeviceGetCount", 2000, cuDeviceGetCount),
	E("cuDeviceGet", 2000, cuDeviceGet),
	E("cuDeviceGetName", 2000, cuDeviceGetName),
	E("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2),
	E("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
	E("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
	E("cuDevicePrimaryCtxRelease", 7000, cuDevicePrimaryCtxRelease),
	E("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
	E("cuCtxCreate", 3020, cuCtxCreate_v2),
	E("cuCtxCreate", 12050, cuCtxCreate_v4),
	E("cuCtxDestroy", 4000, cuCtxDestroy_v2),
	E("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
	E("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
	E("cuCtxPushCurrent", 4000, cuCtxPushCurrent_v2),
	E("cuCtxPopCurrent", 4000, cuCtxPopCurrent_v2),
	E("cuCtxGetDevice", 2000, cuCtxGetDevice),
	E("cuCtxSynchronize", 2000, cuCtxSynchronize),
	E("cuMemGetInfo", 3020, cuMemGetInfo_v2),
	E("cuMemAlloc", 3020, cuMemAlloc_v2),
	P("cuMemAllocAsync", 11020, cuMemAllocAsync, cuMemAllocAsync_ptsz),
	E("cuMemAllocManaged", 6000, cuMemAllocManaged),
	E("cuMemAllocHost", 3020, cuMemAllocHost_v2),
	E("cuMemHostAlloc", 2020, cuMemHostAlloc),
	E("cuMemFree", 3020, cuMemFree_v2),
	P("cuMemFreeAsync", 11020, cuMemFreeAsync, cuMemFreeAsync_ptsz),
	E("cuMemFreeHost", 2000, cuMemFreeHost),
	E("cuMemHostRegister", 6050, cuMemHostRegister_v2),
	E("cuMemHostUnregister", 4000, cuMemHostUnregister),
	E("cuMemGetAllocationGranularity", 10020, cuMemGetAllocationGranularity),
	E("cuMemCreate", 10020, cuMemCreate),
	E("cuMemRelease", 10020, cuMemRelease),
	E("cuMemAddressReserve", 10020, cuMemAddressReserve),
	E("cuMemAddressFree", 10020, cuMemAddressFree),
	E("cuMemMap", 10020, cuMemMap),
	E("cuMemUnmap", 10020, cuMemUnmap),
	E("cuMemSetAccess", 10020, cuMemSetAccess),
	P("cuMemcpy", 4000, cuMemcpy, cuMemcpy_ptds),
	P("cuMemcpyAsync", 4000, cuMemcpyAsync, cuMemcpyAsync_ptsz),
	P("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds),
	P("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds),
	P("cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds),
	P("cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz),
	P("cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz),
	P("cuMemcpyDtoDAsync", 3020, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz),
	P("cuMemsetD8", 3020, cuMemsetD8_v2, cuMemsetD8_v2_ptds),
	P("cuMemsetD32", 3020, cuMemsetD32_v2, cuMemsetD32_v2_ptds),
	P("cuMemsetD8Async", 3020, cuMemsetD8Async, cuMemsetD8Async_ptsz),
	P("cuMemsetD32Async", 3020, cuMemsetD32Async, cuMemsetD32Async_ptsz),
	E("cuStreamCreate", 2000, cuStreamCreate),
	E("cuStreamCreateWithPriority", 5050, cuStreamCreateWithPriority),
	E("cuStreamDestroy", 4000, cuStreamDestroy_v2),
	P("cuStreamQuery", 2000, cuStreamQuery, cuStreamQuery_ptsz),
	P("cuStreamSynchronize", 2000, cuStreamSynchronize, cuStreamSynchronize_ptsz),
	P("cuStreamWaitEvent", 3020, cuStreamWaitEvent, cuStreamWaitEvent_ptsz),
	E("cuEventCreate", 2000, cuEventCreate),
	P("cuEventRecord", 2000, cuEventRecord, cuEventRecord_ptsz),
	E("cuEventQuery", 2000, cuEventQuery),
	E("cuEventSynchronize", 2000, cuEventSynchronize),
	E("cuEventDestroy", 4000, cuEventDestroy_v2),
	E("cuEventElapsedTime", 2000, cuEventElapsedTime),
	E("cuEventElapsedTime", 12080, cuEventElapsedTime_v2),
	P("cuGraphLaunch", 10000, cuGraphLaunch, cuGraphLaunch_ptsz),
	E("cuModuleLoad", 2000, cuModuleLoad),
	E("cuModuleLoadData", 2000, cuModuleLoadData),
	E("cuModuleLoadDataEx", 2010, cuModuleLoadDataEx),
	E("cuModuleLoadFatBinary", 2000, cuModuleLoadFatBinary),
	E("cuModuleUnload", 2000, cuModuleUnload),
	E("cuModuleGetFunction", 2000, cuModuleGetFunction),
	E("cuLibraryLoadData", 12000, cuLibraryLoadData),
	E("cuLibraryLoadFromFile", 12000, cuLibraryLoadFromFile),
	E("cuLibraryUnload", 12000, cuLibraryUnload),
	E("cuLibraryGetKernel", 12000, cuLibraryGetKernel),
	E("cuKernelGetFunction", 12000, cuKernelGetFunction),
	E("cuKernelGetName", 12030, cuKernelGetName),
	E("cuFuncGetName", 12030, cuFuncGetName),
	P("cuLaunchKernel", 4000, cuLaunchKernel, cuLaunchKernel_ptsz),
	P("cuLaunchKernelEx", 11060, cuLaunchKernelEx, cuLaunchKernelEx_ptsz),
	P("cuLaunchCooperativeKernel", 9000, cuLaunchCooperativeKernel,
	  cuLaunchCooperativeKernel_ptsz),
};

CU_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
				    cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
	const struct entry *best = NULL;
	CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	CUresult r = CUDA_SUCCESS;
	size_t i;

	sg_config();
	if (!symbol || !pfn || (flags & ~(cuuint64_t)3))
		r = CUDA_ERROR_INVALID_VALUE;
	for (i = 0; !r && i < sizeof(table) / sizeof(table[0]); i++) {
		if (strcmp(table[i].name, symbol))
			continue;
		if (table[i].since > cudaVersion) {
			if (!best)
				st = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
			continue;
		}
		if (!best || table[i].since > best->since)
			best = &table[i];
	}
	if (!r && best) {
		st = CU_GET_PROC_ADDRESS_SUCCESS;
		*pfn = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && best->per_thread
			       ? best->per_thread
			       : best->fn;
	} else if (!r) {
		*pfn = NULL;
		r = CUDA_ERROR_NOT_FOUND;
	}
	if (symbolStatus)
		*symbolStatus = st;
	CU_RETURN(r, "symbol=%s version=%d flags=%#llx status=%d", symbol ? symbol : "(null)",
		  cudaVersion, (unsigned long long)flags, (int)st);
}
