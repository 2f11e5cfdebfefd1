/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * api.h — the one table of every traced API.
 *
 * A row is: id, library family, exported symbol, argument shape, attributes.
 * Adding an API is adding a row (plus, at most, a BPF handler when its
 * arguments cannot be described by an existing shape). Userspace derives
 * from the shape which argument slot holds bytes, stream, pointers, and the
 * cookie flags that tell the generic BPF programs what to read.
 *
 * Argument slots (struct gp_api_call.args) per shape, x86-64 SysV:
 *   slots 0..5 = rdi rsi rdx rcx r8 r9 at entry; 6..7 = [sp+8] [sp+16]
 *   (only for shapes that need them); see each shape below.
 */
#ifndef GPUPROBED_API_H
#define GPUPROBED_API_H

#include "events.h"

enum gp_family {
	GP_FAM_CUDART = 1, /* CUDA runtime: libcudart.so.*, or linked statically */
	GP_FAM_CUDA = 2,   /* CUDA driver: libcuda.so.1 */
	GP_FAM_NCCL = 3,   /* NCCL: libnccl.so.2 */
};

enum gp_shape {
	GP_SHAPE_NONE = 0,          /* nothing read beyond the return code */
	GP_SHAPE_ALLOC,             /* (void **out, size_t bytes, unsigned flags); out read at return */
	GP_SHAPE_ALLOC_ASYNC,       /* (void **out, size_t bytes, stream); out read at return */
	GP_SHAPE_FREE,              /* (void *ptr) */
	GP_SHAPE_FREE_ASYNC,        /* (void *ptr, stream) */
	GP_SHAPE_HOST_REGISTER,     /* (void *ptr, size_t bytes, unsigned flags) */
	GP_SHAPE_MEMCPY,            /* (dst, src, size_t count, kind[, stream]) */
	GP_SHAPE_MEMCPY_2D,         /* (dst, dpitch, src, spitch, width, height, [sp+8] kind[, [sp+16] stream]) */
	GP_SHAPE_MEMCPY_PEER,       /* (dst, int dstDev, src, int srcDev, size_t count[, stream]) */
	GP_SHAPE_MEMSET,            /* (ptr, int value, size_t count[, stream]) */
	GP_SHAPE_LAUNCH,            /* (func, grid.xy, grid.z, block.xy, block.z, args, [sp+8] smem, [sp+16] stream) */
	GP_SHAPE_LAUNCH_EXC,        /* (const cudaLaunchConfig_t *cfg, func, args); slots 3..7 = *cfg */
	GP_SHAPE_GRAPH_LAUNCH,      /* (cudaGraphExec_t exec, stream) */
	GP_SHAPE_STREAM_CREATE,     /* (cudaStream_t *out[, flags[, priority]]); out read at return */
	GP_SHAPE_STREAM,            /* (stream) */
	GP_SHAPE_STREAM_WAIT_EVENT, /* (stream, event, unsigned flags) */
	GP_SHAPE_EVENT_CREATE,      /* (cudaEvent_t *out[, flags]); out read at return */
	GP_SHAPE_EVENT_RECORD,      /* (event, stream) */
	GP_SHAPE_EVENT,             /* (event) */
	GP_SHAPE_SET_DEVICE,        /* (int device) */
	GP_SHAPE_GET_KERNEL,        /* (cudaKernel_t *out, const void *hostFun); out read at return */
	GP_SHAPE_REGISTER_FUNCTION, /* (void **fatCubinHandle, const char *hostFun, char *deviceFun, const char *deviceName,
	                               ...) returning void: deviceName (GP_CK_STR of slot 3) in the extension */
	/* CUDA driver */
	GP_SHAPE_CU_LAUNCH,         /* (f, gx, gy, gz, bx, by, [sp+8] bz, [sp+16] smem, [sp+24] stream, params, extra):
	                               slot 5 = by | bz << 32, 6 = smem, 7 = stream */
	GP_SHAPE_CU_LAUNCH_EX,      /* (const CUlaunchConfig *cfg, f, params, extra); slots 3..7 = *cfg:
	                               gx|gy<<32, gz|bx<<32, by|bz<<32, smem (low 32 bits), stream */
	GP_SHAPE_CU_MEMCPY,         /* (dst, src, size_t bytes[, stream]); direction from GP_A_HTOD/DTOH/DTOD, else the pointers */
	GP_SHAPE_VMM_CREATE,        /* (CUmemGenericAllocationHandle *out, size_t size, const CUmemAllocationProp *prop, flags);
	                               out read at return; slots 6..7 = the first 16 bytes of *prop (location.id at byte 12) */
	GP_SHAPE_VMM_RELEASE,       /* (CUmemGenericAllocationHandle handle) */
	GP_SHAPE_VMM_MAP,           /* (CUdeviceptr ptr, size_t size, size_t offset, handle, flags) */
	GP_SHAPE_VMM_UNMAP,         /* (CUdeviceptr ptr, size_t size) */
	GP_SHAPE_MODULE_LOAD,       /* (CUmodule/CUlibrary *out, path or image, ...); out read at return; the path
	                               string (GP_CK_STR, cuModuleLoad / cuLibraryLoadFromFile) in the extension */
	GP_SHAPE_MODULE_UNLOAD,     /* (CUmodule/CUlibrary handle) */
	GP_SHAPE_GET_FUNCTION,      /* (CUfunction/CUkernel *out, CUmodule/CUlibrary owner, const char *name): out read at
	                               return, name (GP_CK_STR of slot 2) in the extension */
	GP_SHAPE_KERNEL_GET_FUNCTION, /* (CUfunction *out, CUkernel kernel); out read at return */
	/* NCCL */
	GP_SHAPE_NCCL_INIT_RANK,    /* (ncclComm_t *out, int nranks, ncclUniqueId id (128 bytes on the stack), int rank (rdx)
	                               [, ncclConfig_t *config]); out read at return */
	GP_SHAPE_NCCL_INIT_ALL,     /* (ncclComm_t *comms, int ndev, const int *devlist); the extension holds
	                               comms[0..ndev) (u64 each) then devlist[0..ndev) (s32 each, when not NULL) */
	GP_SHAPE_NCCL_SPLIT,        /* (comm, int color, int key, ncclComm_t *newcomm, config); out = *newcomm */
	GP_SHAPE_NCCL_COMM,         /* (comm) */
	GP_SHAPE_NCCL_COMM_QUERY,   /* (comm, int *out): ncclCommCount / UserRank / CuDevice; out (s32) read at return */
	GP_SHAPE_NCCL_COLL,         /* a collective or point-to-point call: slots from gp_nccl_layout() */
	GP_SHAPE_MAX,
};

/* Attributes (bitmask). */
#define GP_A_ASYNC       (1u << 0) /* stream-ordered: returns before the work is done */
#define GP_A_PTSZ        (1u << 1) /* per-thread default stream variant (_ptsz/_ptds) */
#define GP_A_MEM_DEVICE  (1u << 2) /* allocation kind: device memory */
#define GP_A_MEM_PINNED  (1u << 3) /* allocation kind: page-locked host memory */
#define GP_A_MEM_MANAGED (1u << 4) /* allocation kind: managed (unified) memory */
#define GP_A_SYNC_CALL   (1u << 5) /* blocks the host until GPU work completes */
#define GP_A_LAUNCH      (1u << 6) /* enqueues GPU work that is not a copy or memset */
#define GP_A_HTOD        (1u << 7) /* driver copy: host -> device */
#define GP_A_DTOH        (1u << 8) /* driver copy: device -> host */
#define GP_A_DTOD        (1u << 9) /* driver copy: device -> device */
#define GP_A_ELEM4       (1u << 10) /* memset count is in 4-byte elements (cuMemsetD32) */
#define GP_A_UNREGISTER  (1u << 11) /* frees a registered host range (cudaHostUnregister, cuMemHostUnregister) */
#define GP_A_VOID        (1u << 12) /* returns nothing: the return register is not a result (ret is 0) */

/*            id                           family        symbol                           shape                     attributes */
#define GP_API_TABLE(X) \
	X(CUDA_MALLOC,                    GP_FAM_CUDART, "cudaMalloc",                    GP_SHAPE_ALLOC,            GP_A_MEM_DEVICE) \
	X(CUDA_MALLOC_ASYNC,              GP_FAM_CUDART, "cudaMallocAsync",               GP_SHAPE_ALLOC_ASYNC,      GP_A_MEM_DEVICE | GP_A_ASYNC) \
	X(CUDA_MALLOC_ASYNC_PTSZ,         GP_FAM_CUDART, "cudaMallocAsync_ptsz",          GP_SHAPE_ALLOC_ASYNC,      GP_A_MEM_DEVICE | GP_A_ASYNC | GP_A_PTSZ) \
	X(CUDA_MALLOC_MANAGED,            GP_FAM_CUDART, "cudaMallocManaged",             GP_SHAPE_ALLOC,            GP_A_MEM_MANAGED) \
	X(CUDA_MALLOC_HOST,               GP_FAM_CUDART, "cudaMallocHost",                GP_SHAPE_ALLOC,            GP_A_MEM_PINNED) \
	X(CUDA_HOST_ALLOC,                GP_FAM_CUDART, "cudaHostAlloc",                 GP_SHAPE_ALLOC,            GP_A_MEM_PINNED) \
	X(CUDA_FREE,                      GP_FAM_CUDART, "cudaFree",                      GP_SHAPE_FREE,             GP_A_MEM_DEVICE | GP_A_MEM_MANAGED) \
	X(CUDA_FREE_ASYNC,                GP_FAM_CUDART, "cudaFreeAsync",                 GP_SHAPE_FREE_ASYNC,       GP_A_MEM_DEVICE | GP_A_ASYNC) \
	X(CUDA_FREE_ASYNC_PTSZ,           GP_FAM_CUDART, "cudaFreeAsync_ptsz",            GP_SHAPE_FREE_ASYNC,       GP_A_MEM_DEVICE | GP_A_ASYNC | GP_A_PTSZ) \
	X(CUDA_FREE_HOST,                 GP_FAM_CUDART, "cudaFreeHost",                  GP_SHAPE_FREE,             GP_A_MEM_PINNED) \
	X(CUDA_HOST_REGISTER,             GP_FAM_CUDART, "cudaHostRegister",              GP_SHAPE_HOST_REGISTER,    GP_A_MEM_PINNED) \
	X(CUDA_HOST_UNREGISTER,           GP_FAM_CUDART, "cudaHostUnregister",            GP_SHAPE_FREE,             GP_A_MEM_PINNED | GP_A_UNREGISTER) \
	X(CUDA_MEMCPY,                    GP_FAM_CUDART, "cudaMemcpy",                    GP_SHAPE_MEMCPY,           0) \
	X(CUDA_MEMCPY_PTDS,               GP_FAM_CUDART, "cudaMemcpy_ptds",               GP_SHAPE_MEMCPY,           GP_A_PTSZ) \
	X(CUDA_MEMCPY_ASYNC,              GP_FAM_CUDART, "cudaMemcpyAsync",               GP_SHAPE_MEMCPY,           GP_A_ASYNC) \
	X(CUDA_MEMCPY_ASYNC_PTSZ,         GP_FAM_CUDART, "cudaMemcpyAsync_ptsz",          GP_SHAPE_MEMCPY,           GP_A_ASYNC | GP_A_PTSZ) \
	X(CUDA_MEMCPY_2D,                 GP_FAM_CUDART, "cudaMemcpy2D",                  GP_SHAPE_MEMCPY_2D,        0) \
	X(CUDA_MEMCPY_2D_PTDS,            GP_FAM_CUDART, "cudaMemcpy2D_ptds",             GP_SHAPE_MEMCPY_2D,        GP_A_PTSZ) \
	X(CUDA_MEMCPY_2D_ASYNC,           GP_FAM_CUDART, "cudaMemcpy2DAsync",             GP_SHAPE_MEMCPY_2D,        GP_A_ASYNC) \
	X(CUDA_MEMCPY_2D_ASYNC_PTSZ,      GP_FAM_CUDART, "cudaMemcpy2DAsync_ptsz",        GP_SHAPE_MEMCPY_2D,        GP_A_ASYNC | GP_A_PTSZ) \
	X(CUDA_MEMCPY_PEER,               GP_FAM_CUDART, "cudaMemcpyPeer",                GP_SHAPE_MEMCPY_PEER,      0) \
	X(CUDA_MEMCPY_PEER_ASYNC,         GP_FAM_CUDART, "cudaMemcpyPeerAsync",           GP_SHAPE_MEMCPY_PEER,      GP_A_ASYNC) \
	X(CUDA_MEMSET,                    GP_FAM_CUDART, "cudaMemset",                    GP_SHAPE_MEMSET,           0) \
	X(CUDA_MEMSET_PTDS,               GP_FAM_CUDART, "cudaMemset_ptds",               GP_SHAPE_MEMSET,           GP_A_PTSZ) \
	X(CUDA_MEMSET_ASYNC,              GP_FAM_CUDART, "cudaMemsetAsync",               GP_SHAPE_MEMSET,           GP_A_ASYNC) \
	X(CUDA_MEMSET_ASYNC_PTSZ,         GP_FAM_CUDART, "cudaMemsetAsync_ptsz",          GP_SHAPE_MEMSET,           GP_A_ASYNC | GP_A_PTSZ) \
	X(CUDA_LAUNCH_KERNEL,             GP_FAM_CUDART, "cudaLaunchKernel",              GP_SHAPE_LAUNCH,           GP_A_ASYNC | GP_A_LAUNCH) \
	X(CUDA_LAUNCH_KERNEL_PTSZ,        GP_FAM_CUDART, "cudaLaunchKernel_ptsz",         GP_SHAPE_LAUNCH,           GP_A_ASYNC | GP_A_LAUNCH | GP_A_PTSZ) \
	X(CUDA_LAUNCH_KERNEL_EXC,         GP_FAM_CUDART, "cudaLaunchKernelExC",           GP_SHAPE_LAUNCH_EXC,       GP_A_ASYNC | GP_A_LAUNCH) \
	X(CUDA_LAUNCH_KERNEL_EXC_PTSZ,    GP_FAM_CUDART, "cudaLaunchKernelExC_ptsz",      GP_SHAPE_LAUNCH_EXC,       GP_A_ASYNC | GP_A_LAUNCH | GP_A_PTSZ) \
	X(CUDA_LAUNCH_COOPERATIVE,        GP_FAM_CUDART, "cudaLaunchCooperativeKernel",   GP_SHAPE_LAUNCH,           GP_A_ASYNC | GP_A_LAUNCH) \
	X(CUDA_LAUNCH_COOPERATIVE_PTSZ,   GP_FAM_CUDART, "cudaLaunchCooperativeKernel_ptsz", GP_SHAPE_LAUNCH,        GP_A_ASYNC | GP_A_LAUNCH | GP_A_PTSZ) \
	X(CUDA_GRAPH_LAUNCH,              GP_FAM_CUDART, "cudaGraphLaunch",               GP_SHAPE_GRAPH_LAUNCH,     GP_A_ASYNC | GP_A_LAUNCH) \
	X(CUDA_GRAPH_LAUNCH_PTSZ,         GP_FAM_CUDART, "cudaGraphLaunch_ptsz",          GP_SHAPE_GRAPH_LAUNCH,     GP_A_ASYNC | GP_A_LAUNCH | GP_A_PTSZ) \
	X(CUDA_STREAM_CREATE,             GP_FAM_CUDART, "cudaStreamCreate",              GP_SHAPE_STREAM_CREATE,    0) \
	X(CUDA_STREAM_CREATE_WITH_FLAGS,  GP_FAM_CUDART, "cudaStreamCreateWithFlags",     GP_SHAPE_STREAM_CREATE,    0) \
	X(CUDA_STREAM_CREATE_WITH_PRIORITY, GP_FAM_CUDART, "cudaStreamCreateWithPriority", GP_SHAPE_STREAM_CREATE,   0) \
	X(CUDA_STREAM_DESTROY,            GP_FAM_CUDART, "cudaStreamDestroy",             GP_SHAPE_STREAM,           0) \
	X(CUDA_STREAM_SYNCHRONIZE,        GP_FAM_CUDART, "cudaStreamSynchronize",         GP_SHAPE_STREAM,           GP_A_SYNC_CALL) \
	X(CUDA_STREAM_SYNCHRONIZE_PTSZ,   GP_FAM_CUDART, "cudaStreamSynchronize_ptsz",    GP_SHAPE_STREAM,           GP_A_SYNC_CALL | GP_A_PTSZ) \
	X(CUDA_STREAM_WAIT_EVENT,         GP_FAM_CUDART, "cudaStreamWaitEvent",           GP_SHAPE_STREAM_WAIT_EVENT, GP_A_ASYNC) \
	X(CUDA_STREAM_WAIT_EVENT_PTSZ,    GP_FAM_CUDART, "cudaStreamWaitEvent_ptsz",      GP_SHAPE_STREAM_WAIT_EVENT, GP_A_ASYNC | GP_A_PTSZ) \
	X(CUDA_EVENT_CREATE,              GP_FAM_CUDART, "cudaEventCreate",               GP_SHAPE_EVENT_CREATE,     0) \
	X(CUDA_EVENT_CREATE_WITH_FLAGS,   GP_FAM_CUDART, "cudaEventCreateWithFlags",      GP_SHAPE_EVENT_CREATE,     0) \
	X(CUDA_EVENT_DESTROY,             GP_FAM_CUDART, "cudaEventDestroy",              GP_SHAPE_EVENT,            0) \
	X(CUDA_EVENT_RECORD,              GP_FAM_CUDART, "cudaEventRecord",               GP_SHAPE_EVENT_RECORD,     GP_A_ASYNC) \
	X(CUDA_EVENT_RECORD_PTSZ,         GP_FAM_CUDART, "cudaEventRecord_ptsz",          GP_SHAPE_EVENT_RECORD,     GP_A_ASYNC | GP_A_PTSZ) \
	X(CUDA_EVENT_SYNCHRONIZE,         GP_FAM_CUDART, "cudaEventSynchronize",          GP_SHAPE_EVENT,            GP_A_SYNC_CALL) \
	X(CUDA_DEVICE_SYNCHRONIZE,        GP_FAM_CUDART, "cudaDeviceSynchronize",         GP_SHAPE_NONE,             GP_A_SYNC_CALL) \
	X(CUDA_SET_DEVICE,                GP_FAM_CUDART, "cudaSetDevice",                 GP_SHAPE_SET_DEVICE,       0) \
	/* nvcc 13 launch stubs: once per kernel, handle <- host function; names handle launches */ \
	X(CUDA_GET_KERNEL,                GP_FAM_CUDART, "__cudaGetKernel",               GP_SHAPE_GET_KERNEL,       0) \
	/* nvcc's registration at start-up: host function -> device (kernel) name, even in stripped programs */ \
	X(CUDA_REGISTER_FUNCTION,         GP_FAM_CUDART, "__cudaRegisterFunction",        GP_SHAPE_REGISTER_FUNCTION, GP_A_VOID) \
	/* ---- CUDA driver (libcuda.so.1) ---- */ \
	X(CU_LAUNCH_KERNEL,               GP_FAM_CUDA,   "cuLaunchKernel",                GP_SHAPE_CU_LAUNCH,        GP_A_ASYNC | GP_A_LAUNCH) \
	X(CU_LAUNCH_KERNEL_PTSZ,          GP_FAM_CUDA,   "cuLaunchKernel_ptsz",           GP_SHAPE_CU_LAUNCH,        GP_A_ASYNC | GP_A_LAUNCH | GP_A_PTSZ) \
	X(CU_LAUNCH_KERNEL_EX,            GP_FAM_CUDA,   "cuLaunchKernelEx",              GP_SHAPE_CU_LAUNCH_EX,     GP_A_ASYNC | GP_A_LAUNCH) \
	X(CU_LAUNCH_KERNEL_EX_PTSZ,       GP_FAM_CUDA,   "cuLaunchKernelEx_ptsz",         GP_SHAPE_CU_LAUNCH_EX,     GP_A_ASYNC | GP_A_LAUNCH | GP_A_PTSZ) \
	X(CU_LAUNCH_COOPERATIVE,          GP_FAM_CUDA,   "cuLaunchCooperativeKernel",     GP_SHAPE_CU_LAUNCH,        GP_A_ASYNC | GP_A_LAUNCH) \
	X(CU_LAUNCH_COOPERATIVE_PTSZ,     GP_FAM_CUDA,   "cuLaunchCooperativeKernel_ptsz", GP_SHAPE_CU_LAUNCH,       GP_A_ASYNC | GP_A_LAUNCH | GP_A_PTSZ) \
	X(CU_GRAPH_LAUNCH,                GP_FAM_CUDA,   "cuGraphLaunch",                 GP_SHAPE_GRAPH_LAUNCH,     GP_A_ASYNC | GP_A_LAUNCH) \
	X(CU_GRAPH_LAUNCH_PTSZ,           GP_FAM_CUDA,   "cuGraphLaunch_ptsz",            GP_SHAPE_GRAPH_LAUNCH,     GP_A_ASYNC | GP_A_LAUNCH | GP_A_PTSZ) \
	X(CU_MEM_ALLOC,                   GP_FAM_CUDA,   "cuMemAlloc_v2",                 GP_SHAPE_ALLOC,            GP_A_MEM_DEVICE) \
	X(CU_MEM_ALLOC_ASYNC,             GP_FAM_CUDA,   "cuMemAllocAsync",               GP_SHAPE_ALLOC_ASYNC,      GP_A_MEM_DEVICE | GP_A_ASYNC) \
	X(CU_MEM_ALLOC_ASYNC_PTSZ,        GP_FAM_CUDA,   "cuMemAllocAsync_ptsz",          GP_SHAPE_ALLOC_ASYNC,      GP_A_MEM_DEVICE | GP_A_ASYNC | GP_A_PTSZ) \
	X(CU_MEM_ALLOC_MANAGED,           GP_FAM_CUDA,   "cuMemAllocManaged",             GP_SHAPE_ALLOC,            GP_A_MEM_MANAGED) \
	X(CU_MEM_ALLOC_HOST,              GP_FAM_CUDA,   "cuMemAllocHost_v2",             GP_SHAPE_ALLOC,            GP_A_MEM_PINNED) \
	X(CU_MEM_HOST_ALLOC,              GP_FAM_CUDA,   "cuMemHostAlloc",                GP_SHAPE_ALLOC,            GP_A_MEM_PINNED) \
	X(CU_MEM_FREE,                    GP_FAM_CUDA,   "cuMemFree_v2",                  GP_SHAPE_FREE,             GP_A_MEM_DEVICE | GP_A_MEM_MANAGED) \
	X(CU_MEM_FREE_ASYNC,              GP_FAM_CUDA,   "cuMemFreeAsync",                GP_SHAPE_FREE_ASYNC,       GP_A_MEM_DEVICE | GP_A_ASYNC) \
	X(CU_MEM_FREE_ASYNC_PTSZ,         GP_FAM_CUDA,   "cuMemFreeAsync_ptsz",           GP_SHAPE_FREE_ASYNC,       GP_A_MEM_DEVICE | GP_A_ASYNC | GP_A_PTSZ) \
	X(CU_MEM_FREE_HOST,               GP_FAM_CUDA,   "cuMemFreeHost",                 GP_SHAPE_FREE,             GP_A_MEM_PINNED) \
	X(CU_MEM_HOST_REGISTER,           GP_FAM_CUDA,   "cuMemHostRegister_v2",          GP_SHAPE_HOST_REGISTER,    GP_A_MEM_PINNED) \
	X(CU_MEM_HOST_UNREGISTER,         GP_FAM_CUDA,   "cuMemHostUnregister",           GP_SHAPE_FREE,             GP_A_MEM_PINNED | GP_A_UNREGISTER) \
	X(CU_MEM_CREATE,                  GP_FAM_CUDA,   "cuMemCreate",                   GP_SHAPE_VMM_CREATE,       GP_A_MEM_DEVICE) \
	X(CU_MEM_RELEASE,                 GP_FAM_CUDA,   "cuMemRelease",                  GP_SHAPE_VMM_RELEASE,      GP_A_MEM_DEVICE) \
	X(CU_MEM_MAP,                     GP_FAM_CUDA,   "cuMemMap",                      GP_SHAPE_VMM_MAP,          GP_A_MEM_DEVICE) \
	X(CU_MEM_UNMAP,                   GP_FAM_CUDA,   "cuMemUnmap",                    GP_SHAPE_VMM_UNMAP,        GP_A_MEM_DEVICE) \
	X(CU_MEMCPY,                      GP_FAM_CUDA,   "cuMemcpy",                      GP_SHAPE_CU_MEMCPY,        0) \
	X(CU_MEMCPY_PTDS,                 GP_FAM_CUDA,   "cuMemcpy_ptds",                 GP_SHAPE_CU_MEMCPY,        GP_A_PTSZ) \
	X(CU_MEMCPY_ASYNC,                GP_FAM_CUDA,   "cuMemcpyAsync",                 GP_SHAPE_CU_MEMCPY,        GP_A_ASYNC) \
	X(CU_MEMCPY_ASYNC_PTSZ,           GP_FAM_CUDA,   "cuMemcpyAsync_ptsz",            GP_SHAPE_CU_MEMCPY,        GP_A_ASYNC | GP_A_PTSZ) \
	X(CU_MEMCPY_HTOD,                 GP_FAM_CUDA,   "cuMemcpyHtoD_v2",               GP_SHAPE_CU_MEMCPY,        GP_A_HTOD) \
	X(CU_MEMCPY_HTOD_PTDS,            GP_FAM_CUDA,   "cuMemcpyHtoD_v2_ptds",          GP_SHAPE_CU_MEMCPY,        GP_A_HTOD | GP_A_PTSZ) \
	X(CU_MEMCPY_DTOH,                 GP_FAM_CUDA,   "cuMemcpyDtoH_v2",               GP_SHAPE_CU_MEMCPY,        GP_A_DTOH) \
	X(CU_MEMCPY_DTOH_PTDS,            GP_FAM_CUDA,   "cuMemcpyDtoH_v2_ptds",          GP_SHAPE_CU_MEMCPY,        GP_A_DTOH | GP_A_PTSZ) \
	X(CU_MEMCPY_DTOD,                 GP_FAM_CUDA,   "cuMemcpyDtoD_v2",               GP_SHAPE_CU_MEMCPY,        GP_A_DTOD) \
	X(CU_MEMCPY_DTOD_PTDS,            GP_FAM_CUDA,   "cuMemcpyDtoD_v2_ptds",          GP_SHAPE_CU_MEMCPY,        GP_A_DTOD | GP_A_PTSZ) \
	X(CU_MEMCPY_HTOD_ASYNC,           GP_FAM_CUDA,   "cuMemcpyHtoDAsync_v2",          GP_SHAPE_CU_MEMCPY,        GP_A_HTOD | GP_A_ASYNC) \
	X(CU_MEMCPY_HTOD_ASYNC_PTSZ,      GP_FAM_CUDA,   "cuMemcpyHtoDAsync_v2_ptsz",     GP_SHAPE_CU_MEMCPY,        GP_A_HTOD | GP_A_ASYNC | GP_A_PTSZ) \
	X(CU_MEMCPY_DTOH_ASYNC,           GP_FAM_CUDA,   "cuMemcpyDtoHAsync_v2",          GP_SHAPE_CU_MEMCPY,        GP_A_DTOH | GP_A_ASYNC) \
	X(CU_MEMCPY_DTOH_ASYNC_PTSZ,      GP_FAM_CUDA,   "cuMemcpyDtoHAsync_v2_ptsz",     GP_SHAPE_CU_MEMCPY,        GP_A_DTOH | GP_A_ASYNC | GP_A_PTSZ) \
	X(CU_MEMCPY_DTOD_ASYNC,           GP_FAM_CUDA,   "cuMemcpyDtoDAsync_v2",          GP_SHAPE_CU_MEMCPY,        GP_A_DTOD | GP_A_ASYNC) \
	X(CU_MEMCPY_DTOD_ASYNC_PTSZ,      GP_FAM_CUDA,   "cuMemcpyDtoDAsync_v2_ptsz",     GP_SHAPE_CU_MEMCPY,        GP_A_DTOD | GP_A_ASYNC | GP_A_PTSZ) \
	X(CU_MEMSET_D8,                   GP_FAM_CUDA,   "cuMemsetD8_v2",                 GP_SHAPE_MEMSET,           0) \
	X(CU_MEMSET_D8_PTDS,              GP_FAM_CUDA,   "cuMemsetD8_v2_ptds",            GP_SHAPE_MEMSET,           GP_A_PTSZ) \
	X(CU_MEMSET_D32,                  GP_FAM_CUDA,   "cuMemsetD32_v2",                GP_SHAPE_MEMSET,           GP_A_ELEM4) \
	X(CU_MEMSET_D32_PTDS,             GP_FAM_CUDA,   "cuMemsetD32_v2_ptds",           GP_SHAPE_MEMSET,           GP_A_ELEM4 | GP_A_PTSZ) \
	X(CU_MEMSET_D8_ASYNC,             GP_FAM_CUDA,   "cuMemsetD8Async",               GP_SHAPE_MEMSET,           GP_A_ASYNC) \
	X(CU_MEMSET_D8_ASYNC_PTSZ,        GP_FAM_CUDA,   "cuMemsetD8Async_ptsz",          GP_SHAPE_MEMSET,           GP_A_ASYNC | GP_A_PTSZ) \
	X(CU_MEMSET_D32_ASYNC,            GP_FAM_CUDA,   "cuMemsetD32Async",              GP_SHAPE_MEMSET,           GP_A_ELEM4 | GP_A_ASYNC) \
	X(CU_MEMSET_D32_ASYNC_PTSZ,       GP_FAM_CUDA,   "cuMemsetD32Async_ptsz",         GP_SHAPE_MEMSET,           GP_A_ELEM4 | GP_A_ASYNC | GP_A_PTSZ) \
	X(CU_STREAM_SYNCHRONIZE,          GP_FAM_CUDA,   "cuStreamSynchronize",           GP_SHAPE_STREAM,           GP_A_SYNC_CALL) \
	X(CU_STREAM_SYNCHRONIZE_PTSZ,     GP_FAM_CUDA,   "cuStreamSynchronize_ptsz",      GP_SHAPE_STREAM,           GP_A_SYNC_CALL | GP_A_PTSZ) \
	X(CU_CTX_SYNCHRONIZE,             GP_FAM_CUDA,   "cuCtxSynchronize",              GP_SHAPE_NONE,             GP_A_SYNC_CALL) \
	X(CU_EVENT_SYNCHRONIZE,           GP_FAM_CUDA,   "cuEventSynchronize",            GP_SHAPE_EVENT,            GP_A_SYNC_CALL) \
	X(CU_STREAM_WAIT_EVENT,           GP_FAM_CUDA,   "cuStreamWaitEvent",             GP_SHAPE_STREAM_WAIT_EVENT, GP_A_ASYNC) \
	X(CU_STREAM_WAIT_EVENT_PTSZ,      GP_FAM_CUDA,   "cuStreamWaitEvent_ptsz",        GP_SHAPE_STREAM_WAIT_EVENT, GP_A_ASYNC | GP_A_PTSZ) \
	X(CU_MODULE_LOAD,                 GP_FAM_CUDA,   "cuModuleLoad",                  GP_SHAPE_MODULE_LOAD,      0) \
	X(CU_MODULE_LOAD_DATA,            GP_FAM_CUDA,   "cuModuleLoadData",              GP_SHAPE_MODULE_LOAD,      0) \
	X(CU_MODULE_LOAD_DATA_EX,         GP_FAM_CUDA,   "cuModuleLoadDataEx",            GP_SHAPE_MODULE_LOAD,      0) \
	X(CU_MODULE_LOAD_FAT_BINARY,      GP_FAM_CUDA,   "cuModuleLoadFatBinary",         GP_SHAPE_MODULE_LOAD,      0) \
	X(CU_MODULE_UNLOAD,               GP_FAM_CUDA,   "cuModuleUnload",                GP_SHAPE_MODULE_UNLOAD,    0) \
	X(CU_MODULE_GET_FUNCTION,         GP_FAM_CUDA,   "cuModuleGetFunction",           GP_SHAPE_GET_FUNCTION,     0) \
	X(CU_LIBRARY_LOAD_DATA,           GP_FAM_CUDA,   "cuLibraryLoadData",             GP_SHAPE_MODULE_LOAD,      0) \
	X(CU_LIBRARY_LOAD_FROM_FILE,      GP_FAM_CUDA,   "cuLibraryLoadFromFile",         GP_SHAPE_MODULE_LOAD,      0) \
	X(CU_LIBRARY_UNLOAD,              GP_FAM_CUDA,   "cuLibraryUnload",               GP_SHAPE_MODULE_UNLOAD,    0) \
	X(CU_LIBRARY_GET_KERNEL,          GP_FAM_CUDA,   "cuLibraryGetKernel",            GP_SHAPE_GET_FUNCTION,     0) \
	X(CU_KERNEL_GET_FUNCTION,         GP_FAM_CUDA,   "cuKernelGetFunction",           GP_SHAPE_KERNEL_GET_FUNCTION, 0) \
	/* ---- NCCL (libnccl.so.2) ---- */ \
	X(NCCL_COMM_INIT_RANK,            GP_FAM_NCCL,   "ncclCommInitRank",              GP_SHAPE_NCCL_INIT_RANK,   0) \
	X(NCCL_COMM_INIT_RANK_CONFIG,     GP_FAM_NCCL,   "ncclCommInitRankConfig",        GP_SHAPE_NCCL_INIT_RANK,   0) \
	X(NCCL_COMM_INIT_ALL,             GP_FAM_NCCL,   "ncclCommInitAll",               GP_SHAPE_NCCL_INIT_ALL,    0) \
	X(NCCL_COMM_SPLIT,                GP_FAM_NCCL,   "ncclCommSplit",                 GP_SHAPE_NCCL_SPLIT,       0) \
	X(NCCL_COMM_DESTROY,              GP_FAM_NCCL,   "ncclCommDestroy",               GP_SHAPE_NCCL_COMM,        0) \
	X(NCCL_COMM_ABORT,                GP_FAM_NCCL,   "ncclCommAbort",                 GP_SHAPE_NCCL_COMM,        0) \
	X(NCCL_COMM_COUNT,                GP_FAM_NCCL,   "ncclCommCount",                 GP_SHAPE_NCCL_COMM_QUERY,  0) \
	X(NCCL_COMM_USER_RANK,            GP_FAM_NCCL,   "ncclCommUserRank",              GP_SHAPE_NCCL_COMM_QUERY,  0) \
	X(NCCL_COMM_CU_DEVICE,            GP_FAM_NCCL,   "ncclCommCuDevice",              GP_SHAPE_NCCL_COMM_QUERY,  0) \
	X(NCCL_ALL_REDUCE,                GP_FAM_NCCL,   "ncclAllReduce",                 GP_SHAPE_NCCL_COLL,        GP_A_ASYNC) \
	X(NCCL_BROADCAST,                 GP_FAM_NCCL,   "ncclBroadcast",                 GP_SHAPE_NCCL_COLL,        GP_A_ASYNC) \
	X(NCCL_BCAST,                     GP_FAM_NCCL,   "ncclBcast",                     GP_SHAPE_NCCL_COLL,        GP_A_ASYNC) \
	X(NCCL_REDUCE,                    GP_FAM_NCCL,   "ncclReduce",                    GP_SHAPE_NCCL_COLL,        GP_A_ASYNC) \
	X(NCCL_ALL_GATHER,                GP_FAM_NCCL,   "ncclAllGather",                 GP_SHAPE_NCCL_COLL,        GP_A_ASYNC) \
	X(NCCL_REDUCE_SCATTER,            GP_FAM_NCCL,   "ncclReduceScatter",             GP_SHAPE_NCCL_COLL,        GP_A_ASYNC) \
	X(NCCL_ALLTOALL,                  GP_FAM_NCCL,   "ncclAlltoAll",                  GP_SHAPE_NCCL_COLL,        GP_A_ASYNC) \
	X(NCCL_ALL_TO_ALL,                GP_FAM_NCCL,   "ncclAllToAll",                  GP_SHAPE_NCCL_COLL,        GP_A_ASYNC) /* RCCL's spelling */ \
	X(NCCL_SEND,                      GP_FAM_NCCL,   "ncclSend",                      GP_SHAPE_NCCL_COLL,        GP_A_ASYNC) \
	X(NCCL_RECV,                      GP_FAM_NCCL,   "ncclRecv",                      GP_SHAPE_NCCL_COLL,        GP_A_ASYNC) \
	X(NCCL_GROUP_START,               GP_FAM_NCCL,   "ncclGroupStart",                GP_SHAPE_NONE,             0) \
	X(NCCL_GROUP_END,                 GP_FAM_NCCL,   "ncclGroupEnd",                  GP_SHAPE_NONE,             0)

enum gp_api_id {
	GP_API_INVALID = 0,
#define GP_API_ENUM(id, fam, sym, shape, attr) GP_API_##id,
	GP_API_TABLE(GP_API_ENUM)
#undef GP_API_ENUM
	GP_API_MAX,
};

#ifndef __VMLINUX_H__ /* userspace only */
#include <stdbool.h>

struct gp_api_info {
	const char *symbol;
	enum gp_family family;
	enum gp_shape shape;
	unsigned attr;
};

/* Indexed by enum gp_api_id; entry 0 is { NULL }. Defined in src/api.c. */
extern const struct gp_api_info gp_apis[GP_API_MAX];

/* Cookie flags (GP_CK_*) that the generic BPF programs need for an API. */
unsigned gp_api_cookie_flags(enum gp_api_id id);

/*
 * Whether a call of id gets its caller's user stack when stacks are on:
 * calls that queue GPU work (launches, copies, memsets, collectives), that
 * allocate or free memory, or that wait for the GPU.
 */
bool gp_api_wants_stack(enum gp_api_id id);

/* NCCL collectives and point-to-point calls (GP_SHAPE_NCCL_COLL). */
enum gp_nccl_op {
	GP_NCCL_ALL_REDUCE = 0,
	GP_NCCL_BROADCAST,
	GP_NCCL_REDUCE,
	GP_NCCL_ALL_GATHER,
	GP_NCCL_REDUCE_SCATTER,
	GP_NCCL_ALL_TO_ALL,
	GP_NCCL_SEND,
	GP_NCCL_RECV,
	GP_NCCL_OP_MAX,
};

/*
 * Where a GP_SHAPE_NCCL_COLL call keeps its arguments (slot numbers of
 * gp_api_call.args; -1: none) and what nccl-tests calls its size and bus
 * factor: bytes = count x dtype size x (per_rank_count ? nranks : 1);
 * busbw = algbw x factor, factor = bus_num / bus_den with n = nranks:
 * AllReduce 2(n-1)/n; AllGather, ReduceScatter, AllToAll (n-1)/n; others 1.
 */
struct gp_nccl_layout {
	enum gp_nccl_op op;
	int count, dtype, redop, root_or_peer, comm, stream;
	bool per_rank_count; /* count is per rank: the message is count x nranks elements */
};
/* false when id is not a GP_SHAPE_NCCL_COLL API. */
bool gp_nccl_layout(enum gp_api_id id, struct gp_nccl_layout *out);
const char *gp_nccl_op_name(enum gp_nccl_op op); /* "AllReduce", ... */
/* ncclDataType_t -> bytes per element (0: unknown) and name ("float32", ...; NULL: unknown). */
unsigned gp_nccl_dtype_size(int dtype);
const char *gp_nccl_dtype_name(int dtype);
const char *gp_nccl_redop_name(int op); /* "sum", ...; NULL: unknown */
/* nccl-tests' bus bandwidth factor of op over n ranks. */
double gp_nccl_bus_factor(enum gp_nccl_op op, unsigned n);

/* Which argument slot holds the stream for this API, or -1 if none. */
int gp_api_stream_slot(enum gp_api_id id);

/* "cudart", "cuda", "nccl". */
const char *gp_family_name(enum gp_family fam);
#endif

/* cudaMemcpyKind values (the runtime's ABI). */
enum gp_memcpy_kind {
	GP_MEMCPY_HTOH = 0,
	GP_MEMCPY_HTOD = 1,
	GP_MEMCPY_DTOH = 2,
	GP_MEMCPY_DTOD = 3,
	GP_MEMCPY_DEFAULT = 4,
};

#endif /* GPUPROBED_API_H */
