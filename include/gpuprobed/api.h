/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * api.h — the one table of every traced API, and the one table of what
 * their argument shapes mean.
 *
 * An API row is: id, library family, exported symbol, argument shape,
 * attributes. A shape row says where its arguments are and what the
 * generic BPF programs, the probes and the model do with them (cookie
 * flags, stream slot, stack, in-kernel counting, GPU work, model handler).
 * Adding an API is adding a row (plus, at most, a shape row when its
 * arguments are like no existing shape's, and a GP_CK_* flag read by
 * bpf/gpu_api.bpf.c when no flag says what to read).
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

/*
 * Argument shapes, one row each. A row is:
 *   name     GP_SHAPE_<name>; the comment above it says what the argument slots hold
 *   ck       GP_CK_* cookie flags (events.h): what the generic BPF programs read beyond registers
 *   stream   the argument slot of the stream: 0..7, GP_SLOT_NONE, or GP_SLOT_ASYNC(n): slot n in
 *            the shape's GP_A_ASYNC APIs, none in the others (they run on their default stream)
 *   stack    1: with stacks on, an outermost call carries its caller's user stack (it queues GPU
 *            work, allocates or frees memory, or waits for the GPU)
 *   agg      1: --aggregate may count its calls in the kernel: their records would feed nothing
 *            but counts, times, errors and CPU attribution (no state the model tracks)
 *   nested   1: the model's handler also sees the calls made inside another traced call (the
 *            handles they create are the process's); 0: outermost calls only
 *   queues   the GPU work a call queues (enum gp_queues), which the model counts per layer and
 *            per stream, also for calls counted in the kernel
 *   handler  what the model does with a call: gp_shape_<handler>() (src/model/shapes.h); the
 *            shapes that share one have their arguments where it reads them
 * Adding a shape is adding a row and, unless it shares one, writing its handler; the build fails
 * until the other places that must decide about it do: replay_plan.c's switch, and for a shape
 * that queues a copy or a memset, transfers.c's decoder.
 */
#define GP_SLOT_NONE	 (-1)
#define GP_SLOT_ASYNC(n) (16 + (n))

enum gp_queues {
	GP_Q_NONE = 0,
	GP_Q_KERNEL, /* a kernel launch */
	GP_Q_GRAPH,  /* a graph launch */
	GP_Q_COPY,   /* a copy (bytes and direction: src/model/transfers.c) */
	GP_Q_MEMSET, /* a memset */
	GP_Q_COLL,   /* an NCCL collective or point-to-point operation (src/model/nccl.c) */
};

/*        name                 ck                                  stream            stack agg nested queues handler */
#define GP_SHAPE_TABLE(X)                                                                                     \
	/* nothing read beyond the return code, nothing done (GP_API_INVALID's shape) */                      \
	X(NONE, 0, GP_SLOT_NONE, 0, 0, 0, GP_Q_NONE, none)                                                    \
	/* (void): waits for the whole device */                                                              \
	X(DEVICE_SYNC, 0, GP_SLOT_NONE, 1, 1, 0, GP_Q_NONE, device_sync)                                      \
	/* (void **out, size_t bytes, unsigned flags); out read at return */                                  \
	X(ALLOC, GP_CK_OUT_AT(0), GP_SLOT_NONE, 1, 0, 0, GP_Q_NONE, alloc)                                    \
	/* (void **out, size_t bytes, stream); out read at return */                                          \
	X(ALLOC_ASYNC, GP_CK_OUT_AT(0), 2, 1, 0, 0, GP_Q_NONE, alloc)                                         \
	/* (void *ptr) */                                                                                     \
	X(FREE, 0, GP_SLOT_NONE, 1, 0, 0, GP_Q_NONE, free)                                                    \
	/* (void *ptr, stream) */                                                                             \
	X(FREE_ASYNC, 0, 1, 1, 0, 0, GP_Q_NONE, free)                                                         \
	/* (void *ptr, size_t bytes, unsigned flags) */                                                       \
	X(HOST_REGISTER, 0, GP_SLOT_NONE, 1, 0, 0, GP_Q_NONE, host_register)                                  \
	/* (dst, src, size_t count, kind[, stream]) */                                                        \
	X(MEMCPY, 0, GP_SLOT_ASYNC(4), 1, 0, 0, GP_Q_COPY, copy)                                              \
	/* (dst, dpitch, src, spitch, width, height, [sp+8] kind[, [sp+16] stream]) */                        \
	X(MEMCPY_2D, GP_CK_STACK2, GP_SLOT_ASYNC(7), 1, 0, 0, GP_Q_COPY, copy)                                \
	/* (dst, int dstDev, src, int srcDev, size_t count[, stream]) */                                      \
	X(MEMCPY_PEER, 0, GP_SLOT_ASYNC(5), 1, 0, 0, GP_Q_COPY, copy)                                         \
	/* (ptr, int value, size_t count[, stream]); GP_A_ELEM4: count is in 4-byte elements */               \
	X(MEMSET, 0, GP_SLOT_ASYNC(3), 1, 0, 0, GP_Q_MEMSET, memset)                                          \
	/* (func, grid.xy, grid.z, block.xy, block.z, args, [sp+8] smem, [sp+16] stream) */                   \
	X(LAUNCH, GP_CK_STACK2, 7, 1, 1, 0, GP_Q_KERNEL, launch)                                              \
	/* (const cudaLaunchConfig_t *cfg, func, args); slots 3..7 = *cfg (slot 7: its stream) */             \
	X(LAUNCH_EXC, GP_CK_LAUNCH_CFG, 7, 1, 1, 0, GP_Q_KERNEL, launch_exc)                                  \
	/* (cudaGraphExec_t exec, stream) */                                                                  \
	X(GRAPH_LAUNCH, 0, 1, 1, 1, 0, GP_Q_GRAPH, graph_launch)                                              \
	/* (cudaStream_t *out[, flags[, priority]]); out read at return */                                    \
	X(STREAM_CREATE, GP_CK_OUT_AT(0), GP_SLOT_NONE, 0, 0, 0, GP_Q_NONE, stream_create)                    \
	/* (stream): waits for it */                                                                          \
	X(STREAM_SYNC, 0, 0, 1, 1, 0, GP_Q_NONE, stream_sync)                                                 \
	/* (stream): rare, and it closes what a recorded create opened: never counted in the kernel */        \
	X(STREAM_DESTROY, 0, 0, 0, 0, 0, GP_Q_NONE, stream_destroy)                                           \
	/* (stream, event, unsigned flags) */                                                                 \
	X(STREAM_WAIT_EVENT, 0, 0, 0, 1, 0, GP_Q_NONE, stream_wait_event)                                     \
	/* (cudaEvent_t *out[, flags]); out read at return */                                                 \
	X(EVENT_CREATE, GP_CK_OUT_AT(0), GP_SLOT_NONE, 0, 0, 0, GP_Q_NONE, event_create)                      \
	/* (event, stream) */                                                                                 \
	X(EVENT_RECORD, 0, 1, 0, 1, 0, GP_Q_NONE, event_record)                                               \
	/* (event): waits for it */                                                                           \
	X(EVENT_SYNC, 0, GP_SLOT_NONE, 1, 1, 0, GP_Q_NONE, event_sync)                                        \
	/* (event): rare, and it closes what a recorded create opened: never counted in the kernel */         \
	X(EVENT_DESTROY, 0, GP_SLOT_NONE, 0, 0, 0, GP_Q_NONE, event_destroy)                                  \
	/* (int device) */                                                                                    \
	X(SET_DEVICE, 0, GP_SLOT_NONE, 0, 0, 0, GP_Q_NONE, set_device)                                        \
	/* (cudaKernel_t *out, const void *hostFun); out read at return */                                    \
	X(GET_KERNEL, GP_CK_OUT_AT(0), GP_SLOT_NONE, 0, 0, 0, GP_Q_NONE, get_kernel)                          \
	/* (void **fatCubinHandle, const char *hostFun, char *deviceFun, const char *deviceName, ...) \
	   returning void: deviceName (slot 3) in the extension */       \
	X(REGISTER_FUNCTION, GP_CK_STR_AT(3) | GP_CK_VOID, GP_SLOT_NONE, 0, 0, 0, GP_Q_NONE,                  \
	  register_function)                                                                                  \
	/* ---- CUDA driver ---- */                                                                           \
	/* (f, gx, gy, gz, bx, by, [sp+8] bz, [sp+16] smem, [sp+24] stream, params, extra): \
	   slot 5 = by | bz << 32, 6 = smem, 7 = stream */                 \
	X(CU_LAUNCH, GP_CK_CU_LAUNCH, 7, 1, 1, 0, GP_Q_KERNEL, cu_launch)                                     \
	/* (const CUlaunchConfig *cfg, f, params, extra); slots 3..7 = *cfg: \
	   gx|gy<<32, gz|bx<<32, by|bz<<32, smem (low 32 bits), stream */                                \
	X(CU_LAUNCH_EX, GP_CK_LAUNCH_CFG, 7, 1, 1, 0, GP_Q_KERNEL, cu_launch_ex)                              \
	/* (dst, src, size_t bytes[, stream]); direction from GP_A_HTOD/DTOH/DTOD, else the pointers */       \
	X(CU_MEMCPY, 0, GP_SLOT_ASYNC(3), 1, 0, 0, GP_Q_COPY, copy)                                           \
	/* (CUmemGenericAllocationHandle *out, size_t size, const CUmemAllocationProp *prop, flags); \
	   out read at return; slots 6..7 = the first 16 bytes of *prop (location.id at byte 12) */        \
	X(VMM_CREATE, GP_CK_OUT_AT(0) | GP_CK_DEREF2, GP_SLOT_NONE, 1, 0, 0, GP_Q_NONE,                       \
	  vmm_create)                                                                                         \
	/* (CUmemGenericAllocationHandle handle) */                                                           \
	X(VMM_RELEASE, 0, GP_SLOT_NONE, 1, 0, 0, GP_Q_NONE, vmm_release)                                      \
	/* (CUdeviceptr ptr, size_t size, size_t offset, handle, flags) */                                    \
	X(VMM_MAP, 0, GP_SLOT_NONE, 0, 0, 0, GP_Q_NONE, vmm_map)                                              \
	/* (CUdeviceptr ptr, size_t size) */                                                                  \
	X(VMM_UNMAP, 0, GP_SLOT_NONE, 0, 0, 0, GP_Q_NONE, vmm_unmap)                                          \
	/* (CUmodule/CUlibrary *out, const void *image, ...); out read at return */                           \
	X(MODULE_LOAD, GP_CK_OUT_AT(0), GP_SLOT_NONE, 0, 0, 1, GP_Q_NONE, module_load)                        \
	/* (CUmodule/CUlibrary *out, const char *path, ...); out read at return, the path in the extension */ \
	X(MODULE_LOAD_FILE, GP_CK_OUT_AT(0) | GP_CK_STR_AT(1), GP_SLOT_NONE, 0, 0, 1, GP_Q_NONE,              \
	  module_load)                                                                                        \
	/* (CUmodule/CUlibrary handle) */                                                                     \
	X(MODULE_UNLOAD, 0, GP_SLOT_NONE, 0, 0, 1, GP_Q_NONE, module_unload)                                  \
	/* (CUfunction/CUkernel *out, CUmodule/CUlibrary owner, const char *name): out read at return, \
	   name (slot 2) in the extension */      \
	X(GET_FUNCTION, GP_CK_OUT_AT(0) | GP_CK_STR_AT(2), GP_SLOT_NONE, 0, 0, 1, GP_Q_NONE,                  \
	  get_function)                                                                                       \
	/* (CUfunction *out, CUkernel kernel); out read at return */                                          \
	X(KERNEL_GET_FUNCTION, GP_CK_OUT_AT(0), GP_SLOT_NONE, 0, 0, 1, GP_Q_NONE,                             \
	  kernel_get_function)                                                                                \
	/* ---- NCCL: communicators, communication, not counted in the kernel (each call's bytes and \
	   communicator matter) ---- */        \
	/* (ncclComm_t *out, int nranks, ncclUniqueId id (128 bytes on the stack), int rank (rdx) \
	   [, ncclConfig_t *config]); out read at return */           \
	X(NCCL_INIT_RANK, GP_CK_OUT_AT(0) | GP_CK_NCCL_ID, GP_SLOT_NONE, 0, 0, 0, GP_Q_NONE,                  \
	  nccl_init_rank)                                                                                     \
	/* (ncclComm_t *comms, int ndev, const int *devlist); the extension holds comms[0..ndev) \
	   (u64 each) then devlist[0..ndev) (s32 each, when not NULL) */            \
	X(NCCL_INIT_ALL, GP_CK_NCCL_ALL, GP_SLOT_NONE, 0, 0, 0, GP_Q_NONE, nccl_init_all)                     \
	/* (comm, int color, int key, ncclComm_t *newcomm, config); out = *newcomm */                         \
	X(NCCL_SPLIT, GP_CK_OUT_AT(3), GP_SLOT_NONE, 0, 0, 0, GP_Q_NONE, nccl_split)                          \
	/* (comm): its end (destroy, abort) */                                                                \
	X(NCCL_COMM, 0, GP_SLOT_NONE, 0, 0, 0, GP_Q_NONE, nccl_comm_end)                                      \
	/* (comm, int *out): ncclCommCount / UserRank / CuDevice; out (s32) read at return */                 \
	X(NCCL_COMM_QUERY, GP_CK_OUT_AT(1) | GP_CK_OUT32, GP_SLOT_NONE, 0, 0, 0, GP_Q_NONE,                   \
	  nccl_comm_query)                                                                                    \
	/* collectives and point-to-point calls of 6, 7 and 8 arguments: the last two are (comm, \
	   stream); the others' slots per API: gp_nccl_layout() */            \
	X(NCCL_COLL6, 0, 5, 1, 0, 0, GP_Q_COLL, nccl_coll)                                                    \
	X(NCCL_COLL7, GP_CK_STACK2, 6, 1, 0, 0, GP_Q_COLL, nccl_coll)                                         \
	X(NCCL_COLL8, GP_CK_STACK2, 7, 1, 0, 0, GP_Q_COLL, nccl_coll)                                         \
	/* (void) */                                                                                          \
	X(NCCL_GROUP_START, 0, GP_SLOT_NONE, 0, 0, 0, GP_Q_NONE, nccl_group_start)                            \
	X(NCCL_GROUP_END, 0, GP_SLOT_NONE, 0, 0, 0, GP_Q_NONE, nccl_group_end)

enum gp_shape {
#define GP_SHAPE_ENUM(name, ck, stream, stack, agg, nested, queues, handler) GP_SHAPE_##name,
	GP_SHAPE_TABLE(GP_SHAPE_ENUM)
#undef GP_SHAPE_ENUM
		GP_SHAPE_MAX,
};

/* Attributes (bitmask). */
#define GP_A_ASYNC	 (1u << 0)  /* stream-ordered: returns before the work is done */
#define GP_A_PTSZ	 (1u << 1)  /* per-thread default stream variant (_ptsz/_ptds) */
#define GP_A_MEM_DEVICE	 (1u << 2)  /* allocation kind: device memory */
#define GP_A_MEM_PINNED	 (1u << 3)  /* allocation kind: page-locked host memory */
#define GP_A_MEM_MANAGED (1u << 4)  /* allocation kind: managed (unified) memory */
#define GP_A_SYNC_CALL	 (1u << 5)  /* blocks the host until GPU work completes */
#define GP_A_LAUNCH	 (1u << 6)  /* enqueues GPU work that is not a copy or memset */
#define GP_A_HTOD	 (1u << 7)  /* driver copy: host -> device */
#define GP_A_DTOH	 (1u << 8)  /* driver copy: device -> host */
#define GP_A_DTOD	 (1u << 9)  /* driver copy: device -> device */
#define GP_A_ELEM4	 (1u << 10) /* memset count is in 4-byte elements (cuMemsetD32) */
#define GP_A_UNREGISTER \
	(1u << 11) /* frees a registered host range (cudaHostUnregister, cuMemHostUnregister) */
#define GP_A_VOID (1u << 12) /* returns nothing: the return register is not a result (ret is 0) */

/*
 * A new row goes at the end: a row's position is its id, which captures store (a row put in
 * between renumbers every later API, and old captures would read as other APIs).
 */
/*            id                           family        symbol                           shape                     attributes */
#define GP_API_TABLE(X)                                                                                         \
	X(CUDA_MALLOC, GP_FAM_CUDART, "cudaMalloc", GP_SHAPE_ALLOC, GP_A_MEM_DEVICE)                            \
	X(CUDA_MALLOC_ASYNC, GP_FAM_CUDART, "cudaMallocAsync", GP_SHAPE_ALLOC_ASYNC,                            \
	  GP_A_MEM_DEVICE | GP_A_ASYNC)                                                                         \
	X(CUDA_MALLOC_ASYNC_PTSZ, GP_FAM_CUDART, "cudaMallocAsync_ptsz", GP_SHAPE_ALLOC_ASYNC,                  \
	  GP_A_MEM_DEVICE | GP_A_ASYNC | GP_A_PTSZ)                                                             \
	X(CUDA_MALLOC_MANAGED, GP_FAM_CUDART, "cudaMallocManaged", GP_SHAPE_ALLOC,                              \
	  GP_A_MEM_MANAGED)                                                                                     \
	X(CUDA_MALLOC_HOST, GP_FAM_CUDART, "cudaMallocHost", GP_SHAPE_ALLOC, GP_A_MEM_PINNED)                   \
	X(CUDA_HOST_ALLOC, GP_FAM_CUDART, "cudaHostAlloc", GP_SHAPE_ALLOC, GP_A_MEM_PINNED)                     \
	X(CUDA_FREE, GP_FAM_CUDART, "cudaFree", GP_SHAPE_FREE, GP_A_MEM_DEVICE | GP_A_MEM_MANAGED)              \
	X(CUDA_FREE_ASYNC, GP_FAM_CUDART, "cudaFreeAsync", GP_SHAPE_FREE_ASYNC,                                 \
	  GP_A_MEM_DEVICE | GP_A_ASYNC)                                                                         \
	X(CUDA_FREE_ASYNC_PTSZ, GP_FAM_CUDART, "cudaFreeAsync_ptsz", GP_SHAPE_FREE_ASYNC,                       \
	  GP_A_MEM_DEVICE | GP_A_ASYNC | GP_A_PTSZ)                                                             \
	X(CUDA_FREE_HOST, GP_FAM_CUDART, "cudaFreeHost", GP_SHAPE_FREE, GP_A_MEM_PINNED)                        \
	X(CUDA_HOST_REGISTER, GP_FAM_CUDART, "cudaHostRegister", GP_SHAPE_HOST_REGISTER,                        \
	  GP_A_MEM_PINNED)                                                                                      \
	X(CUDA_HOST_UNREGISTER, GP_FAM_CUDART, "cudaHostUnregister", GP_SHAPE_FREE,                             \
	  GP_A_MEM_PINNED | GP_A_UNREGISTER)                                                                    \
	X(CUDA_MEMCPY, GP_FAM_CUDART, "cudaMemcpy", GP_SHAPE_MEMCPY, 0)                                         \
	X(CUDA_MEMCPY_PTDS, GP_FAM_CUDART, "cudaMemcpy_ptds", GP_SHAPE_MEMCPY, GP_A_PTSZ)                       \
	X(CUDA_MEMCPY_ASYNC, GP_FAM_CUDART, "cudaMemcpyAsync", GP_SHAPE_MEMCPY, GP_A_ASYNC)                     \
	X(CUDA_MEMCPY_ASYNC_PTSZ, GP_FAM_CUDART, "cudaMemcpyAsync_ptsz", GP_SHAPE_MEMCPY,                       \
	  GP_A_ASYNC | GP_A_PTSZ)                                                                               \
	X(CUDA_MEMCPY_2D, GP_FAM_CUDART, "cudaMemcpy2D", GP_SHAPE_MEMCPY_2D, 0)                                 \
	X(CUDA_MEMCPY_2D_PTDS, GP_FAM_CUDART, "cudaMemcpy2D_ptds", GP_SHAPE_MEMCPY_2D, GP_A_PTSZ)               \
	X(CUDA_MEMCPY_2D_ASYNC, GP_FAM_CUDART, "cudaMemcpy2DAsync", GP_SHAPE_MEMCPY_2D,                         \
	  GP_A_ASYNC)                                                                                           \
	X(CUDA_MEMCPY_2D_ASYNC_PTSZ, GP_FAM_CUDART, "cudaMemcpy2DAsync_ptsz", GP_SHAPE_MEMCPY_2D,               \
	  GP_A_ASYNC | GP_A_PTSZ)                                                                               \
	X(CUDA_MEMCPY_PEER, GP_FAM_CUDART, "cudaMemcpyPeer", GP_SHAPE_MEMCPY_PEER, 0)                           \
	X(CUDA_MEMCPY_PEER_ASYNC, GP_FAM_CUDART, "cudaMemcpyPeerAsync", GP_SHAPE_MEMCPY_PEER,                   \
	  GP_A_ASYNC)                                                                                           \
	X(CUDA_MEMSET, GP_FAM_CUDART, "cudaMemset", GP_SHAPE_MEMSET, 0)                                         \
	X(CUDA_MEMSET_PTDS, GP_FAM_CUDART, "cudaMemset_ptds", GP_SHAPE_MEMSET, GP_A_PTSZ)                       \
	X(CUDA_MEMSET_ASYNC, GP_FAM_CUDART, "cudaMemsetAsync", GP_SHAPE_MEMSET, GP_A_ASYNC)                     \
	X(CUDA_MEMSET_ASYNC_PTSZ, GP_FAM_CUDART, "cudaMemsetAsync_ptsz", GP_SHAPE_MEMSET,                       \
	  GP_A_ASYNC | GP_A_PTSZ)                                                                               \
	X(CUDA_LAUNCH_KERNEL, GP_FAM_CUDART, "cudaLaunchKernel", GP_SHAPE_LAUNCH,                               \
	  GP_A_ASYNC | GP_A_LAUNCH)                                                                             \
	X(CUDA_LAUNCH_KERNEL_PTSZ, GP_FAM_CUDART, "cudaLaunchKernel_ptsz", GP_SHAPE_LAUNCH,                     \
	  GP_A_ASYNC | GP_A_LAUNCH | GP_A_PTSZ)                                                                 \
	X(CUDA_LAUNCH_KERNEL_EXC, GP_FAM_CUDART, "cudaLaunchKernelExC", GP_SHAPE_LAUNCH_EXC,                    \
	  GP_A_ASYNC | GP_A_LAUNCH)                                                                             \
	X(CUDA_LAUNCH_KERNEL_EXC_PTSZ, GP_FAM_CUDART, "cudaLaunchKernelExC_ptsz",                               \
	  GP_SHAPE_LAUNCH_EXC, GP_A_ASYNC | GP_A_LAUNCH | GP_A_PTSZ)                                            \
	X(CUDA_LAUNCH_COOPERATIVE, GP_FAM_CUDART, "cudaLaunchCooperativeKernel", GP_SHAPE_LAUNCH,               \
	  GP_A_ASYNC | GP_A_LAUNCH)                                                                             \
	X(CUDA_LAUNCH_COOPERATIVE_PTSZ, GP_FAM_CUDART, "cudaLaunchCooperativeKernel_ptsz",                      \
	  GP_SHAPE_LAUNCH, GP_A_ASYNC | GP_A_LAUNCH | GP_A_PTSZ)                                                \
	X(CUDA_GRAPH_LAUNCH, GP_FAM_CUDART, "cudaGraphLaunch", GP_SHAPE_GRAPH_LAUNCH,                           \
	  GP_A_ASYNC | GP_A_LAUNCH)                                                                             \
	X(CUDA_GRAPH_LAUNCH_PTSZ, GP_FAM_CUDART, "cudaGraphLaunch_ptsz", GP_SHAPE_GRAPH_LAUNCH,                 \
	  GP_A_ASYNC | GP_A_LAUNCH | GP_A_PTSZ)                                                                 \
	X(CUDA_STREAM_CREATE, GP_FAM_CUDART, "cudaStreamCreate", GP_SHAPE_STREAM_CREATE, 0)                     \
	X(CUDA_STREAM_CREATE_WITH_FLAGS, GP_FAM_CUDART, "cudaStreamCreateWithFlags",                            \
	  GP_SHAPE_STREAM_CREATE, 0)                                                                            \
	X(CUDA_STREAM_CREATE_WITH_PRIORITY, GP_FAM_CUDART, "cudaStreamCreateWithPriority",                      \
	  GP_SHAPE_STREAM_CREATE, 0)                                                                            \
	X(CUDA_STREAM_DESTROY, GP_FAM_CUDART, "cudaStreamDestroy", GP_SHAPE_STREAM_DESTROY, 0)                  \
	X(CUDA_STREAM_SYNCHRONIZE, GP_FAM_CUDART, "cudaStreamSynchronize", GP_SHAPE_STREAM_SYNC,                \
	  GP_A_SYNC_CALL)                                                                                       \
	X(CUDA_STREAM_SYNCHRONIZE_PTSZ, GP_FAM_CUDART, "cudaStreamSynchronize_ptsz",                            \
	  GP_SHAPE_STREAM_SYNC, GP_A_SYNC_CALL | GP_A_PTSZ)                                                     \
	X(CUDA_STREAM_WAIT_EVENT, GP_FAM_CUDART, "cudaStreamWaitEvent",                                         \
	  GP_SHAPE_STREAM_WAIT_EVENT, GP_A_ASYNC)                                                               \
	X(CUDA_STREAM_WAIT_EVENT_PTSZ, GP_FAM_CUDART, "cudaStreamWaitEvent_ptsz",                               \
	  GP_SHAPE_STREAM_WAIT_EVENT, GP_A_ASYNC | GP_A_PTSZ)                                                   \
	X(CUDA_EVENT_CREATE, GP_FAM_CUDART, "cudaEventCreate", GP_SHAPE_EVENT_CREATE, 0)                        \
	X(CUDA_EVENT_CREATE_WITH_FLAGS, GP_FAM_CUDART, "cudaEventCreateWithFlags",                              \
	  GP_SHAPE_EVENT_CREATE, 0)                                                                             \
	X(CUDA_EVENT_DESTROY, GP_FAM_CUDART, "cudaEventDestroy", GP_SHAPE_EVENT_DESTROY, 0)                     \
	X(CUDA_EVENT_RECORD, GP_FAM_CUDART, "cudaEventRecord", GP_SHAPE_EVENT_RECORD, GP_A_ASYNC)               \
	X(CUDA_EVENT_RECORD_PTSZ, GP_FAM_CUDART, "cudaEventRecord_ptsz", GP_SHAPE_EVENT_RECORD,                 \
	  GP_A_ASYNC | GP_A_PTSZ)                                                                               \
	X(CUDA_EVENT_SYNCHRONIZE, GP_FAM_CUDART, "cudaEventSynchronize", GP_SHAPE_EVENT_SYNC,                   \
	  GP_A_SYNC_CALL)                                                                                       \
	X(CUDA_DEVICE_SYNCHRONIZE, GP_FAM_CUDART, "cudaDeviceSynchronize", GP_SHAPE_DEVICE_SYNC,                \
	  GP_A_SYNC_CALL)                                                                                       \
	X(CUDA_SET_DEVICE, GP_FAM_CUDART, "cudaSetDevice", GP_SHAPE_SET_DEVICE, 0)                              \
	/* nvcc 13 launch stubs: once per kernel, handle <- host function; names handle launches */             \
	X(CUDA_GET_KERNEL, GP_FAM_CUDART, "__cudaGetKernel", GP_SHAPE_GET_KERNEL, 0)                            \
	/* nvcc's registration at start-up: host function -> device (kernel) name, even in stripped programs */ \
	X(CUDA_REGISTER_FUNCTION, GP_FAM_CUDART, "__cudaRegisterFunction",                                      \
	  GP_SHAPE_REGISTER_FUNCTION, GP_A_VOID)                                                                \
	/* ---- CUDA driver (libcuda.so.1) ---- */                                                              \
	X(CU_LAUNCH_KERNEL, GP_FAM_CUDA, "cuLaunchKernel", GP_SHAPE_CU_LAUNCH,                                  \
	  GP_A_ASYNC | GP_A_LAUNCH)                                                                             \
	X(CU_LAUNCH_KERNEL_PTSZ, GP_FAM_CUDA, "cuLaunchKernel_ptsz", GP_SHAPE_CU_LAUNCH,                        \
	  GP_A_ASYNC | GP_A_LAUNCH | GP_A_PTSZ)                                                                 \
	X(CU_LAUNCH_KERNEL_EX, GP_FAM_CUDA, "cuLaunchKernelEx", GP_SHAPE_CU_LAUNCH_EX,                          \
	  GP_A_ASYNC | GP_A_LAUNCH)                                                                             \
	X(CU_LAUNCH_KERNEL_EX_PTSZ, GP_FAM_CUDA, "cuLaunchKernelEx_ptsz", GP_SHAPE_CU_LAUNCH_EX,                \
	  GP_A_ASYNC | GP_A_LAUNCH | GP_A_PTSZ)                                                                 \
	X(CU_LAUNCH_COOPERATIVE, GP_FAM_CUDA, "cuLaunchCooperativeKernel", GP_SHAPE_CU_LAUNCH,                  \
	  GP_A_ASYNC | GP_A_LAUNCH)                                                                             \
	X(CU_LAUNCH_COOPERATIVE_PTSZ, GP_FAM_CUDA, "cuLaunchCooperativeKernel_ptsz",                            \
	  GP_SHAPE_CU_LAUNCH, GP_A_ASYNC | GP_A_LAUNCH | GP_A_PTSZ)                                             \
	X(CU_GRAPH_LAUNCH, GP_FAM_CUDA, "cuGraphLaunch", GP_SHAPE_GRAPH_LAUNCH,                                 \
	  GP_A_ASYNC | GP_A_LAUNCH)                                                                             \
	X(CU_GRAPH_LAUNCH_PTSZ, GP_FAM_CUDA, "cuGraphLaunch_ptsz", GP_SHAPE_GRAPH_LAUNCH,                       \
	  GP_A_ASYNC | GP_A_LAUNCH | GP_A_PTSZ)                                                                 \
	X(CU_MEM_ALLOC, GP_FAM_CUDA, "cuMemAlloc_v2", GP_SHAPE_ALLOC, GP_A_MEM_DEVICE)                          \
	X(CU_MEM_ALLOC_ASYNC, GP_FAM_CUDA, "cuMemAllocAsync", GP_SHAPE_ALLOC_ASYNC,                             \
	  GP_A_MEM_DEVICE | GP_A_ASYNC)                                                                         \
	X(CU_MEM_ALLOC_ASYNC_PTSZ, GP_FAM_CUDA, "cuMemAllocAsync_ptsz", GP_SHAPE_ALLOC_ASYNC,                   \
	  GP_A_MEM_DEVICE | GP_A_ASYNC | GP_A_PTSZ)                                                             \
	X(CU_MEM_ALLOC_MANAGED, GP_FAM_CUDA, "cuMemAllocManaged", GP_SHAPE_ALLOC,                               \
	  GP_A_MEM_MANAGED)                                                                                     \
	X(CU_MEM_ALLOC_HOST, GP_FAM_CUDA, "cuMemAllocHost_v2", GP_SHAPE_ALLOC, GP_A_MEM_PINNED)                 \
	X(CU_MEM_HOST_ALLOC, GP_FAM_CUDA, "cuMemHostAlloc", GP_SHAPE_ALLOC, GP_A_MEM_PINNED)                    \
	X(CU_MEM_FREE, GP_FAM_CUDA, "cuMemFree_v2", GP_SHAPE_FREE,                                              \
	  GP_A_MEM_DEVICE | GP_A_MEM_MANAGED)                                                                   \
	X(CU_MEM_FREE_ASYNC, GP_FAM_CUDA, "cuMemFreeAsync", GP_SHAPE_FREE_ASYNC,                                \
	  GP_A_MEM_DEVICE | GP_A_ASYNC)                                                                         \
	X(CU_MEM_FREE_ASYNC_PTSZ, GP_FAM_CUDA, "cuMemFreeAsync_ptsz", GP_SHAPE_FREE_ASYNC,                      \
	  GP_A_MEM_DEVICE | GP_A_ASYNC | GP_A_PTSZ)                                                             \
	X(CU_MEM_FREE_HOST, GP_FAM_CUDA, "cuMemFreeHost", GP_SHAPE_FREE, GP_A_MEM_PINNED)                       \
	X(CU_MEM_HOST_REGISTER, GP_FAM_CUDA, "cuMemHostRegister_v2", GP_SHAPE_HOST_REGISTER,                    \
	  GP_A_MEM_PINNED)                                                                                      \
	X(CU_MEM_HOST_UNREGISTER, GP_FAM_CUDA, "cuMemHostUnregister", GP_SHAPE_FREE,                            \
	  GP_A_MEM_PINNED | GP_A_UNREGISTER)                                                                    \
	X(CU_MEM_CREATE, GP_FAM_CUDA, "cuMemCreate", GP_SHAPE_VMM_CREATE, GP_A_MEM_DEVICE)                      \
	X(CU_MEM_RELEASE, GP_FAM_CUDA, "cuMemRelease", GP_SHAPE_VMM_RELEASE, GP_A_MEM_DEVICE)                   \
	X(CU_MEM_MAP, GP_FAM_CUDA, "cuMemMap", GP_SHAPE_VMM_MAP, GP_A_MEM_DEVICE)                               \
	X(CU_MEM_UNMAP, GP_FAM_CUDA, "cuMemUnmap", GP_SHAPE_VMM_UNMAP, GP_A_MEM_DEVICE)                         \
	X(CU_MEMCPY, GP_FAM_CUDA, "cuMemcpy", GP_SHAPE_CU_MEMCPY, 0)                                            \
	X(CU_MEMCPY_PTDS, GP_FAM_CUDA, "cuMemcpy_ptds", GP_SHAPE_CU_MEMCPY, GP_A_PTSZ)                          \
	X(CU_MEMCPY_ASYNC, GP_FAM_CUDA, "cuMemcpyAsync", GP_SHAPE_CU_MEMCPY, GP_A_ASYNC)                        \
	X(CU_MEMCPY_ASYNC_PTSZ, GP_FAM_CUDA, "cuMemcpyAsync_ptsz", GP_SHAPE_CU_MEMCPY,                          \
	  GP_A_ASYNC | GP_A_PTSZ)                                                                               \
	X(CU_MEMCPY_HTOD, GP_FAM_CUDA, "cuMemcpyHtoD_v2", GP_SHAPE_CU_MEMCPY, GP_A_HTOD)                        \
	X(CU_MEMCPY_HTOD_PTDS, GP_FAM_CUDA, "cuMemcpyHtoD_v2_ptds", GP_SHAPE_CU_MEMCPY,                         \
	  GP_A_HTOD | GP_A_PTSZ)                                                                                \
	X(CU_MEMCPY_DTOH, GP_FAM_CUDA, "cuMemcpyDtoH_v2", GP_SHAPE_CU_MEMCPY, GP_A_DTOH)                        \
	X(CU_MEMCPY_DTOH_PTDS, GP_FAM_CUDA, "cuMemcpyDtoH_v2_ptds", GP_SHAPE_CU_MEMCPY,                         \
	  GP_A_DTOH | GP_A_PTSZ)                                                                                \
	X(CU_MEMCPY_DTOD, GP_FAM_CUDA, "cuMemcpyDtoD_v2", GP_SHAPE_CU_MEMCPY, GP_A_DTOD)                        \
	X(CU_MEMCPY_DTOD_PTDS, GP_FAM_CUDA, "cuMemcpyDtoD_v2_ptds", GP_SHAPE_CU_MEMCPY,                         \
	  GP_A_DTOD | GP_A_PTSZ)                                                                                \
	X(CU_MEMCPY_HTOD_ASYNC, GP_FAM_CUDA, "cuMemcpyHtoDAsync_v2", GP_SHAPE_CU_MEMCPY,                        \
	  GP_A_HTOD | GP_A_ASYNC)                                                                               \
	X(CU_MEMCPY_HTOD_ASYNC_PTSZ, GP_FAM_CUDA, "cuMemcpyHtoDAsync_v2_ptsz", GP_SHAPE_CU_MEMCPY,              \
	  GP_A_HTOD | GP_A_ASYNC | GP_A_PTSZ)                                                                   \
	X(CU_MEMCPY_DTOH_ASYNC, GP_FAM_CUDA, "cuMemcpyDtoHAsync_v2", GP_SHAPE_CU_MEMCPY,                        \
	  GP_A_DTOH | GP_A_ASYNC)                                                                               \
	X(CU_MEMCPY_DTOH_ASYNC_PTSZ, GP_FAM_CUDA, "cuMemcpyDtoHAsync_v2_ptsz", GP_SHAPE_CU_MEMCPY,              \
	  GP_A_DTOH | GP_A_ASYNC | GP_A_PTSZ)                                                                   \
	X(CU_MEMCPY_DTOD_ASYNC, GP_FAM_CUDA, "cuMemcpyDtoDAsync_v2", GP_SHAPE_CU_MEMCPY,                        \
	  GP_A_DTOD | GP_A_ASYNC)                                                                               \
	X(CU_MEMCPY_DTOD_ASYNC_PTSZ, GP_FAM_CUDA, "cuMemcpyDtoDAsync_v2_ptsz", GP_SHAPE_CU_MEMCPY,              \
	  GP_A_DTOD | GP_A_ASYNC | GP_A_PTSZ)                                                                   \
	X(CU_MEMSET_D8, GP_FAM_CUDA, "cuMemsetD8_v2", GP_SHAPE_MEMSET, 0)                                       \
	X(CU_MEMSET_D8_PTDS, GP_FAM_CUDA, "cuMemsetD8_v2_ptds", GP_SHAPE_MEMSET, GP_A_PTSZ)                     \
	X(CU_MEMSET_D32, GP_FAM_CUDA, "cuMemsetD32_v2", GP_SHAPE_MEMSET, GP_A_ELEM4)                            \
	X(CU_MEMSET_D32_PTDS, GP_FAM_CUDA, "cuMemsetD32_v2_ptds", GP_SHAPE_MEMSET,                              \
	  GP_A_ELEM4 | GP_A_PTSZ)                                                                               \
	X(CU_MEMSET_D8_ASYNC, GP_FAM_CUDA, "cuMemsetD8Async", GP_SHAPE_MEMSET, GP_A_ASYNC)                      \
	X(CU_MEMSET_D8_ASYNC_PTSZ, GP_FAM_CUDA, "cuMemsetD8Async_ptsz", GP_SHAPE_MEMSET,                        \
	  GP_A_ASYNC | GP_A_PTSZ)                                                                               \
	X(CU_MEMSET_D32_ASYNC, GP_FAM_CUDA, "cuMemsetD32Async", GP_SHAPE_MEMSET,                                \
	  GP_A_ELEM4 | GP_A_ASYNC)                                                                              \
	X(CU_MEMSET_D32_ASYNC_PTSZ, GP_FAM_CUDA, "cuMemsetD32Async_ptsz", GP_SHAPE_MEMSET,                      \
	  GP_A_ELEM4 | GP_A_ASYNC | GP_A_PTSZ)                                                                  \
	X(CU_STREAM_SYNCHRONIZE, GP_FAM_CUDA, "cuStreamSynchronize", GP_SHAPE_STREAM_SYNC,                      \
	  GP_A_SYNC_CALL)                                                                                       \
	X(CU_STREAM_SYNCHRONIZE_PTSZ, GP_FAM_CUDA, "cuStreamSynchronize_ptsz",                                  \
	  GP_SHAPE_STREAM_SYNC, GP_A_SYNC_CALL | GP_A_PTSZ)                                                     \
	X(CU_CTX_SYNCHRONIZE, GP_FAM_CUDA, "cuCtxSynchronize", GP_SHAPE_DEVICE_SYNC,                            \
	  GP_A_SYNC_CALL)                                                                                       \
	X(CU_EVENT_SYNCHRONIZE, GP_FAM_CUDA, "cuEventSynchronize", GP_SHAPE_EVENT_SYNC,                         \
	  GP_A_SYNC_CALL)                                                                                       \
	X(CU_STREAM_WAIT_EVENT, GP_FAM_CUDA, "cuStreamWaitEvent", GP_SHAPE_STREAM_WAIT_EVENT,                   \
	  GP_A_ASYNC)                                                                                           \
	X(CU_STREAM_WAIT_EVENT_PTSZ, GP_FAM_CUDA, "cuStreamWaitEvent_ptsz",                                     \
	  GP_SHAPE_STREAM_WAIT_EVENT, GP_A_ASYNC | GP_A_PTSZ)                                                   \
	X(CU_MODULE_LOAD, GP_FAM_CUDA, "cuModuleLoad", GP_SHAPE_MODULE_LOAD_FILE, 0)                            \
	X(CU_MODULE_LOAD_DATA, GP_FAM_CUDA, "cuModuleLoadData", GP_SHAPE_MODULE_LOAD, 0)                        \
	X(CU_MODULE_LOAD_DATA_EX, GP_FAM_CUDA, "cuModuleLoadDataEx", GP_SHAPE_MODULE_LOAD, 0)                   \
	X(CU_MODULE_LOAD_FAT_BINARY, GP_FAM_CUDA, "cuModuleLoadFatBinary", GP_SHAPE_MODULE_LOAD,                \
	  0)                                                                                                    \
	X(CU_MODULE_UNLOAD, GP_FAM_CUDA, "cuModuleUnload", GP_SHAPE_MODULE_UNLOAD, 0)                           \
	X(CU_MODULE_GET_FUNCTION, GP_FAM_CUDA, "cuModuleGetFunction", GP_SHAPE_GET_FUNCTION, 0)                 \
	X(CU_LIBRARY_LOAD_DATA, GP_FAM_CUDA, "cuLibraryLoadData", GP_SHAPE_MODULE_LOAD, 0)                      \
	X(CU_LIBRARY_LOAD_FROM_FILE, GP_FAM_CUDA, "cuLibraryLoadFromFile",                                      \
	  GP_SHAPE_MODULE_LOAD_FILE, 0)                                                                         \
	X(CU_LIBRARY_UNLOAD, GP_FAM_CUDA, "cuLibraryUnload", GP_SHAPE_MODULE_UNLOAD, 0)                         \
	X(CU_LIBRARY_GET_KERNEL, GP_FAM_CUDA, "cuLibraryGetKernel", GP_SHAPE_GET_FUNCTION, 0)                   \
	X(CU_KERNEL_GET_FUNCTION, GP_FAM_CUDA, "cuKernelGetFunction",                                           \
	  GP_SHAPE_KERNEL_GET_FUNCTION, 0)                                                                      \
	/* ---- NCCL (libnccl.so.2) ---- */                                                                     \
	X(NCCL_COMM_INIT_RANK, GP_FAM_NCCL, "ncclCommInitRank", GP_SHAPE_NCCL_INIT_RANK, 0)                     \
	X(NCCL_COMM_INIT_RANK_CONFIG, GP_FAM_NCCL, "ncclCommInitRankConfig",                                    \
	  GP_SHAPE_NCCL_INIT_RANK, 0)                                                                           \
	X(NCCL_COMM_INIT_ALL, GP_FAM_NCCL, "ncclCommInitAll", GP_SHAPE_NCCL_INIT_ALL, 0)                        \
	X(NCCL_COMM_SPLIT, GP_FAM_NCCL, "ncclCommSplit", GP_SHAPE_NCCL_SPLIT, 0)                                \
	X(NCCL_COMM_DESTROY, GP_FAM_NCCL, "ncclCommDestroy", GP_SHAPE_NCCL_COMM, 0)                             \
	X(NCCL_COMM_ABORT, GP_FAM_NCCL, "ncclCommAbort", GP_SHAPE_NCCL_COMM, 0)                                 \
	X(NCCL_COMM_COUNT, GP_FAM_NCCL, "ncclCommCount", GP_SHAPE_NCCL_COMM_QUERY, 0)                           \
	X(NCCL_COMM_USER_RANK, GP_FAM_NCCL, "ncclCommUserRank", GP_SHAPE_NCCL_COMM_QUERY, 0)                    \
	X(NCCL_COMM_CU_DEVICE, GP_FAM_NCCL, "ncclCommCuDevice", GP_SHAPE_NCCL_COMM_QUERY, 0)                    \
	X(NCCL_ALL_REDUCE, GP_FAM_NCCL, "ncclAllReduce", GP_SHAPE_NCCL_COLL7, GP_A_ASYNC)                       \
	X(NCCL_BROADCAST, GP_FAM_NCCL, "ncclBroadcast", GP_SHAPE_NCCL_COLL7, GP_A_ASYNC)                        \
	X(NCCL_BCAST, GP_FAM_NCCL, "ncclBcast", GP_SHAPE_NCCL_COLL6, GP_A_ASYNC)                                \
	X(NCCL_REDUCE, GP_FAM_NCCL, "ncclReduce", GP_SHAPE_NCCL_COLL8, GP_A_ASYNC)                              \
	X(NCCL_ALL_GATHER, GP_FAM_NCCL, "ncclAllGather", GP_SHAPE_NCCL_COLL6, GP_A_ASYNC)                       \
	X(NCCL_REDUCE_SCATTER, GP_FAM_NCCL, "ncclReduceScatter", GP_SHAPE_NCCL_COLL7, GP_A_ASYNC)               \
	X(NCCL_ALLTOALL, GP_FAM_NCCL, "ncclAlltoAll", GP_SHAPE_NCCL_COLL6, GP_A_ASYNC)                          \
	X(NCCL_ALL_TO_ALL, GP_FAM_NCCL, "ncclAllToAll", GP_SHAPE_NCCL_COLL6,                                    \
	  GP_A_ASYNC) /* RCCL's spelling */                                                                     \
	X(NCCL_SEND, GP_FAM_NCCL, "ncclSend", GP_SHAPE_NCCL_COLL6, GP_A_ASYNC)                                  \
	X(NCCL_RECV, GP_FAM_NCCL, "ncclRecv", GP_SHAPE_NCCL_COLL6, GP_A_ASYNC)                                  \
	X(NCCL_GROUP_START, GP_FAM_NCCL, "ncclGroupStart", GP_SHAPE_NCCL_GROUP_START, 0)                        \
	X(NCCL_GROUP_END, GP_FAM_NCCL, "ncclGroupEnd", GP_SHAPE_NCCL_GROUP_END, 0)

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

/* GP_SHAPE_TABLE's columns but the model's (nested, handler: src/model/shapes.h). */
struct gp_shape_info {
	const char *name; /* "LAUNCH", ... */
	unsigned ck;	  /* GP_CK_* */
	int stream;	  /* as the table says it: read it with gp_api_stream_slot() */
	bool stack, agg;
	enum gp_queues queues;
};

/* Indexed by enum gp_shape. Defined in src/api.c. */
extern const struct gp_shape_info gp_shapes[GP_SHAPE_MAX];

/* Cookie flags (GP_CK_*) that the generic BPF programs need for an API: its shape's. */
unsigned gp_api_cookie_flags(enum gp_api_id id);

/*
 * Whether a call of id gets its caller's user stack when stacks are on:
 * calls that queue GPU work (launches, copies, memsets, collectives), that
 * allocate or free memory, or that wait for the GPU (its shape's "stack").
 */
bool gp_api_wants_stack(enum gp_api_id id);

/* What a call of id queues on the GPU (its shape's "queues"); GP_Q_NONE for an invalid id. */
enum gp_queues gp_api_queues(enum gp_api_id id);

/* NCCL collectives and point-to-point calls (shapes GP_SHAPE_NCCL_COLL6/7/8). */
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
 * Where an NCCL collective keeps its arguments (slot numbers of
 * gp_api_call.args; -1: none; comm and stream are its last two, where its
 * shape says) and what nccl-tests calls its size and bus factor:
 * bytes = count x dtype size x (per_rank_count ? nranks : 1);
 * busbw = algbw x factor, factor = bus_num / bus_den with n = nranks:
 * AllReduce 2(n-1)/n; AllGather, ReduceScatter, AllToAll (n-1)/n; others 1.
 */
struct gp_nccl_layout {
	enum gp_nccl_op op;
	int count, dtype, redop, root_or_peer, comm, stream;
	bool per_rank_count; /* count is per rank: the message is count x nranks elements */
};
/* false when id is not an NCCL collective (its queues is not GP_Q_COLL). */
bool gp_nccl_layout(enum gp_api_id id, struct gp_nccl_layout *out);
const char *gp_nccl_op_name(enum gp_nccl_op op); /* "AllReduce", ... */
/* ncclDataType_t -> bytes per element (0: unknown) and name ("float32", ...; NULL: unknown). */
unsigned gp_nccl_dtype_size(int dtype);
const char *gp_nccl_dtype_name(int dtype);
const char *gp_nccl_redop_name(int op); /* "sum", ...; NULL: unknown */
/* nccl-tests' bus bandwidth factor of op over n ranks. */
double gp_nccl_bus_factor(enum gp_nccl_op op, unsigned n);

/* Which argument slot holds the stream for this API (its shape's "stream"), or -1 if none. */
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
