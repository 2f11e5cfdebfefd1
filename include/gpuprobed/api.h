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
	X(CUDA_HOST_UNREGISTER,           GP_FAM_CUDART, "cudaHostUnregister",            GP_SHAPE_FREE,             GP_A_MEM_PINNED) \
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
	X(CUDA_GET_KERNEL,                GP_FAM_CUDART, "__cudaGetKernel",               GP_SHAPE_GET_KERNEL,       0)

enum gp_api_id {
	GP_API_INVALID = 0,
#define GP_API_ENUM(id, fam, sym, shape, attr) GP_API_##id,
	GP_API_TABLE(GP_API_ENUM)
#undef GP_API_ENUM
	GP_API_MAX,
};

#ifndef __VMLINUX_H__ /* userspace only */
struct gp_api_info {
	const char *symbol;
	enum gp_family family;
	enum gp_shape shape;
	unsigned attr;
};

/* Indexed by enum gp_api_id; entry 0 is { NULL }. Defined in src/api.c. */
extern const struct gp_api_info gp_apis[GP_API_MAX];

/* Cookie flags (GP_CK_*) that the generic BPF programs need for a shape. */
unsigned gp_shape_cookie_flags(enum gp_shape shape);

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
