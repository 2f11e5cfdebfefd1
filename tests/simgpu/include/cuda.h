/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cuda.h — the simulated GPU's CUDA driver API header.
 *
 * The C declarations of what build/simgpu/libcuda.so.1 exports, with the
 * real CUDA 13 driver names, types, CUresult values, enum values, struct
 * layouts and signatures, and the real header's mapping of the public
 * names to the exported ones (cuMemAlloc -> cuMemAlloc_v2, and with
 * CUDA_API_PER_THREAD_DEFAULT_STREAM cuMemcpyHtoD -> cuMemcpyHtoD_v2_ptds,
 * cuLaunchKernel -> cuLaunchKernel_ptsz, ...), so that a driver-API program
 * builds without the toolkit and runs against either the simulator or a
 * real driver. Usable from C (gnu11) and C++, together with the
 * simulator's cuda_runtime_api.h. Only what the simulator implements is
 * declared; see tests/simgpu/README.md.
 */
#ifndef SIMGPU_CUDA_H
#define SIMGPU_CUDA_H

#include <stddef.h>
#include <stdint.h>

#define CUDA_VERSION 13000
#ifndef __SIMGPU__
#define __SIMGPU__ 1
#endif
#define CUDAAPI

typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;

/* ---- public names -> exported symbols (as the real header maps them) ---------------- */
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
#define __SIMGPU_CU_PTDS(api) api##_ptds
#define __SIMGPU_CU_PTSZ(api) api##_ptsz
#else
#define __SIMGPU_CU_PTDS(api) api
#define __SIMGPU_CU_PTSZ(api) api
#endif

#define cuDeviceTotalMem	  cuDeviceTotalMem_v2
#define cuCtxCreate		  cuCtxCreate_v4
#define cuCtxDestroy		  cuCtxDestroy_v2
#define cuCtxPushCurrent	  cuCtxPushCurrent_v2
#define cuCtxPopCurrent		  cuCtxPopCurrent_v2
#define cuDevicePrimaryCtxRelease cuDevicePrimaryCtxRelease_v2
#define cuMemGetInfo		  cuMemGetInfo_v2
#define cuMemAlloc		  cuMemAlloc_v2
#define cuMemFree		  cuMemFree_v2
#define cuMemAllocHost		  cuMemAllocHost_v2
#define cuMemHostRegister	  cuMemHostRegister_v2
#define cuStreamDestroy		  cuStreamDestroy_v2
#define cuEventDestroy		  cuEventDestroy_v2
#define cuEventElapsedTime	  cuEventElapsedTime_v2
#define cuGetProcAddress	  cuGetProcAddress_v2
#define cuMemcpyHtoD		  __SIMGPU_CU_PTDS(cuMemcpyHtoD_v2)
#define cuMemcpyDtoH		  __SIMGPU_CU_PTDS(cuMemcpyDtoH_v2)
#define cuMemcpyDtoD		  __SIMGPU_CU_PTDS(cuMemcpyDtoD_v2)
#define cuMemcpyHtoDAsync	  __SIMGPU_CU_PTSZ(cuMemcpyHtoDAsync_v2)
#define cuMemcpyDtoHAsync	  __SIMGPU_CU_PTSZ(cuMemcpyDtoHAsync_v2)
#define cuMemcpyDtoDAsync	  __SIMGPU_CU_PTSZ(cuMemcpyDtoDAsync_v2)
#define cuMemsetD8		  __SIMGPU_CU_PTDS(cuMemsetD8_v2)
#define cuMemsetD32		  __SIMGPU_CU_PTDS(cuMemsetD32_v2)
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
#define cuMemcpy		  __SIMGPU_CU_PTDS(cuMemcpy)
#define cuMemcpyAsync		  __SIMGPU_CU_PTSZ(cuMemcpyAsync)
#define cuMemsetD8Async		  __SIMGPU_CU_PTSZ(cuMemsetD8Async)
#define cuMemsetD32Async	  __SIMGPU_CU_PTSZ(cuMemsetD32Async)
#define cuStreamQuery		  __SIMGPU_CU_PTSZ(cuStreamQuery)
#define cuStreamSynchronize	  __SIMGPU_CU_PTSZ(cuStreamSynchronize)
#define cuStreamWaitEvent	  __SIMGPU_CU_PTSZ(cuStreamWaitEvent)
#define cuEventRecord		  __SIMGPU_CU_PTSZ(cuEventRecord)
#define cuLaunchKernel		  __SIMGPU_CU_PTSZ(cuLaunchKernel)
#define cuLaunchKernelEx	  __SIMGPU_CU_PTSZ(cuLaunchKernelEx)
#define cuLaunchCooperativeKernel __SIMGPU_CU_PTSZ(cuLaunchCooperativeKernel)
#define cuGraphLaunch		  __SIMGPU_CU_PTSZ(cuGraphLaunch)
#define cuMemAllocAsync		  __SIMGPU_CU_PTSZ(cuMemAllocAsync)
#define cuMemFreeAsync		  __SIMGPU_CU_PTSZ(cuMemFreeAsync)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- handles and scalar types ---------------------------------------------------------- */
typedef unsigned long long CUdeviceptr_v2;
typedef CUdeviceptr_v2 CUdeviceptr;
typedef int CUdevice_v1;
typedef CUdevice_v1 CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExec_st *CUgraphExec;
typedef unsigned long long CUmemGenericAllocationHandle_v1;
typedef CUmemGenericAllocationHandle_v1 CUmemGenericAllocationHandle;

/* ---- CUresult (values of the real driver) ---------------------------------------------- */
#define __SIMGPU_CU_ERRORS(X)                             \
	X(CUDA_SUCCESS, 0)                                \
	X(CUDA_ERROR_INVALID_VALUE, 1)                    \
	X(CUDA_ERROR_OUT_OF_MEMORY, 2)                    \
	X(CUDA_ERROR_NOT_INITIALIZED, 3)                  \
	X(CUDA_ERROR_DEINITIALIZED, 4)                    \
	X(CUDA_ERROR_PROFILER_DISABLED, 5)                \
	X(CUDA_ERROR_PROFILER_NOT_INITIALIZED, 6)         \
	X(CUDA_ERROR_PROFILER_ALREADY_STARTED, 7)         \
	X(CUDA_ERROR_PROFILER_ALREADY_STOPPED, 8)         \
	X(CUDA_ERROR_STUB_LIBRARY, 34)                    \
	X(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, 36)      \
	X(CUDA_ERROR_DEVICE_UNAVAILABLE, 46)              \
	X(CUDA_ERROR_NO_DEVICE, 100)                      \
	X(CUDA_ERROR_INVALID_DEVICE, 101)                 \
	X(CUDA_ERROR_DEVICE_NOT_LICENSED, 102)            \
	X(CUDA_ERROR_INVALID_IMAGE, 200)                  \
	X(CUDA_ERROR_INVALID_CONTEXT, 201)                \
	X(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, 202)        \
	X(CUDA_ERROR_MAP_FAILED, 205)                     \
	X(CUDA_ERROR_UNMAP_FAILED, 206)                   \
	X(CUDA_ERROR_ARRAY_IS_MAPPED, 207)                \
	X(CUDA_ERROR_ALREADY_MAPPED, 208)                 \
	X(CUDA_ERROR_NO_BINARY_FOR_GPU, 209)              \
	X(CUDA_ERROR_ALREADY_ACQUIRED, 210)               \
	X(CUDA_ERROR_NOT_MAPPED, 211)                     \
	X(CUDA_ERROR_NOT_MAPPED_AS_ARRAY, 212)            \
	X(CUDA_ERROR_NOT_MAPPED_AS_POINTER, 213)          \
	X(CUDA_ERROR_ECC_UNCORRECTABLE, 214)              \
	X(CUDA_ERROR_UNSUPPORTED_LIMIT, 215)              \
	X(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, 216)         \
	X(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, 217)        \
	X(CUDA_ERROR_INVALID_PTX, 218)                    \
	X(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, 219)       \
	X(CUDA_ERROR_NVLINK_UNCORRECTABLE, 220)           \
	X(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, 221)         \
	X(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, 222)        \
	X(CUDA_ERROR_JIT_COMPILATION_DISABLED, 223)       \
	X(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, 224)      \
	X(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC, 225)       \
	X(CUDA_ERROR_CONTAINED, 226)                      \
	X(CUDA_ERROR_INVALID_SOURCE, 300)                 \
	X(CUDA_ERROR_FILE_NOT_FOUND, 301)                 \
	X(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, 302) \
	X(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, 303)      \
	X(CUDA_ERROR_OPERATING_SYSTEM, 304)               \
	X(CUDA_ERROR_INVALID_HANDLE, 400)                 \
	X(CUDA_ERROR_ILLEGAL_STATE, 401)                  \
	X(CUDA_ERROR_LOSSY_QUERY, 402)                    \
	X(CUDA_ERROR_NOT_FOUND, 500)                      \
	X(CUDA_ERROR_NOT_READY, 600)                      \
	X(CUDA_ERROR_ILLEGAL_ADDRESS, 700)                \
	X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 701)        \
	X(CUDA_ERROR_LAUNCH_TIMEOUT, 702)                 \
	X(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, 703)  \
	X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, 704)    \
	X(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, 705)        \
	X(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, 708)         \
	X(CUDA_ERROR_CONTEXT_IS_DESTROYED, 709)           \
	X(CUDA_ERROR_ASSERT, 710)                         \
	X(CUDA_ERROR_TOO_MANY_PEERS, 711)                 \
	X(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, 712) \
	X(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, 713)     \
	X(CUDA_ERROR_HARDWARE_STACK_ERROR, 714)           \
	X(CUDA_ERROR_ILLEGAL_INSTRUCTION, 715)            \
	X(CUDA_ERROR_MISALIGNED_ADDRESS, 716)             \
	X(CUDA_ERROR_INVALID_ADDRESS_SPACE, 717)          \
	X(CUDA_ERROR_INVALID_PC, 718)                     \
	X(CUDA_ERROR_LAUNCH_FAILED, 719)                  \
	X(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, 720)   \
	X(CUDA_ERROR_TENSOR_MEMORY_LEAK, 721)             \
	X(CUDA_ERROR_NOT_PERMITTED, 800)                  \
	X(CUDA_ERROR_NOT_SUPPORTED, 801)                  \
	X(CUDA_ERROR_SYSTEM_NOT_READY, 802)               \
	X(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, 803)         \
	X(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, 804) \
	X(CUDA_ERROR_MPS_CONNECTION_FAILED, 805)          \
	X(CUDA_ERROR_MPS_RPC_FAILURE, 806)                \
	X(CUDA_ERROR_MPS_SERVER_NOT_READY, 807)           \
	X(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED, 808)        \
	X(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED, 809)    \
	X(CUDA_ERROR_MPS_CLIENT_TERMINATED, 810)          \
	X(CUDA_ERROR_CDP_NOT_SUPPORTED, 811)              \
	X(CUDA_ERROR_CDP_VERSION_MISMATCH, 812)           \
	X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, 900)     \
	X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, 901)     \
	X(CUDA_ERROR_STREAM_CAPTURE_MERGE, 902)           \
	X(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, 903)       \
	X(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, 904)        \
	X(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, 905)       \
	X(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, 906)        \
	X(CUDA_ERROR_CAPTURED_EVENT, 907)                 \
	X(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, 908)    \
	X(CUDA_ERROR_TIMEOUT, 909)                        \
	X(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, 910)      \
	X(CUDA_ERROR_EXTERNAL_DEVICE, 911)                \
	X(CUDA_ERROR_INVALID_CLUSTER_SIZE, 912)           \
	X(CUDA_ERROR_FUNCTION_NOT_LOADED, 913)            \
	X(CUDA_ERROR_INVALID_RESOURCE_TYPE, 914)          \
	X(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, 915) \
	X(CUDA_ERROR_KEY_ROTATION, 916)                   \
	X(CUDA_ERROR_UNKNOWN, 999)

typedef enum cudaError_enum {
#define __SIMGPU_CU_ERR_ENUM(name, value) name = value,
	__SIMGPU_CU_ERRORS(__SIMGPU_CU_ERR_ENUM)
#undef __SIMGPU_CU_ERR_ENUM
} CUresult;

/* ---- flags and enums ---------------------------------------------------------------------- */
typedef enum CUctx_flags_enum {
	CU_CTX_SCHED_AUTO = 0x00,
	CU_CTX_SCHED_SPIN = 0x01,
	CU_CTX_SCHED_YIELD = 0x02,
	CU_CTX_SCHED_BLOCKING_SYNC = 0x04,
	CU_CTX_BLOCKING_SYNC = 0x04,
	CU_CTX_SCHED_MASK = 0x07,
	CU_CTX_MAP_HOST = 0x08,
	CU_CTX_LMEM_RESIZE_TO_MAX = 0x10,
	CU_CTX_COREDUMP_ENABLE = 0x20,
	CU_CTX_USER_COREDUMP_ENABLE = 0x40,
	CU_CTX_SYNC_MEMOPS = 0x80,
	CU_CTX_FLAGS_MASK = 0xFF
} CUctx_flags;

typedef enum CUstream_flags_enum {
	CU_STREAM_DEFAULT = 0x0,
	CU_STREAM_NON_BLOCKING = 0x1
} CUstream_flags;

#define CU_STREAM_LEGACY     ((CUstream)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)0x2)

typedef enum CUevent_flags_enum {
	CU_EVENT_DEFAULT = 0x0,
	CU_EVENT_BLOCKING_SYNC = 0x1,
	CU_EVENT_DISABLE_TIMING = 0x2,
	CU_EVENT_INTERPROCESS = 0x4
} CUevent_flags;

typedef enum CUevent_record_flags_enum {
	CU_EVENT_RECORD_DEFAULT = 0x0,
	CU_EVENT_RECORD_EXTERNAL = 0x1
} CUevent_record_flags;

typedef enum CUevent_wait_flags_enum {
	CU_EVENT_WAIT_DEFAULT = 0x0,
	CU_EVENT_WAIT_EXTERNAL = 0x1
} CUevent_wait_flags;

typedef enum CUmemAttach_flags_enum {
	CU_MEM_ATTACH_GLOBAL = 0x1,
	CU_MEM_ATTACH_HOST = 0x2,
	CU_MEM_ATTACH_SINGLE = 0x4
} CUmemAttach_flags;

#define CU_MEMHOSTALLOC_PORTABLE      0x01
#define CU_MEMHOSTALLOC_DEVICEMAP     0x02
#define CU_MEMHOSTALLOC_WRITECOMBINED 0x04
#define CU_MEMHOSTREGISTER_PORTABLE   0x01
#define CU_MEMHOSTREGISTER_DEVICEMAP  0x02
#define CU_MEMHOSTREGISTER_IOMEMORY   0x04
#define CU_MEMHOSTREGISTER_READ_ONLY  0x08

#define CU_LAUNCH_PARAM_END_AS_INT	      0x00
#define CU_LAUNCH_PARAM_END		      ((void *)CU_LAUNCH_PARAM_END_AS_INT)
#define CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT 0x01
#define CU_LAUNCH_PARAM_BUFFER_POINTER	      ((void *)CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT)
#define CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT    0x02
#define CU_LAUNCH_PARAM_BUFFER_SIZE	      ((void *)CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT)

/* A subset of the attributes; cuDeviceGetAttribute answers these (others read 0). */
typedef enum CUdevice_attribute_enum {
	CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
	CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
	CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3,
	CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4,
	CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
	CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
	CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
	CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
	CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
	CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
	CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
	CU_DEVICE_ATTRIBUTE_INTEGRATED = 18,
	CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 19,
	CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
	CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37,
	CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
	CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
	CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT = 40,
	CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
	CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 83,
	CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS = 89,
	CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 95,
	CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
	CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
	CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
	CU_DEVICE_ATTRIBUTE_MAX = 148
} CUdevice_attribute;

/* JIT options are accepted and ignored (there is nothing to compile). */
typedef enum CUjit_option_enum {
	CU_JIT_MAX_REGISTERS = 0,
	CU_JIT_THREADS_PER_BLOCK = 1,
	CU_JIT_WALL_TIME = 2,
	CU_JIT_INFO_LOG_BUFFER = 3,
	CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
	CU_JIT_ERROR_LOG_BUFFER = 5,
	CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
	CU_JIT_OPTIMIZATION_LEVEL = 7
} CUjit_option;

typedef enum CUlibraryOption_enum {
	CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE = 0,
	CU_LIBRARY_BINARY_IS_PRESERVED = 1,
	CU_LIBRARY_NUM_OPTIONS
} CUlibraryOption;

typedef enum CUdriverProcAddress_flags_enum {
	CU_GET_PROC_ADDRESS_DEFAULT = 0,
	CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1 << 0,
	CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 1 << 1
} CUdriverProcAddress_flags;

typedef enum CUdriverProcAddressQueryResult_enum {
	CU_GET_PROC_ADDRESS_SUCCESS = 0,
	CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
	CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2
} CUdriverProcAddressQueryResult;

/* ---- contexts ---------------------------------------------------------------------------- */
typedef enum CUexecAffinityType_enum {
	CU_EXEC_AFFINITY_TYPE_SM_COUNT = 0,
	CU_EXEC_AFFINITY_TYPE_MAX
} CUexecAffinityType;

typedef struct CUexecAffinitySmCount_st {
	unsigned int val;
} CUexecAffinitySmCount_v1;
typedef CUexecAffinitySmCount_v1 CUexecAffinitySmCount;

typedef struct CUexecAffinityParam_st {
	CUexecAffinityType type;
	union {
		CUexecAffinitySmCount smCount;
	} param;
} CUexecAffinityParam_v1;
typedef CUexecAffinityParam_v1 CUexecAffinityParam;

typedef enum CUcigDataType_enum {
	CIG_DATA_TYPE_D3D12_COMMAND_QUEUE = 0x1,
	CIG_DATA_TYPE_NV_BLOB = 0x2
} CUcigDataType;

typedef struct CUctxCigParam_st {
	CUcigDataType sharedDataType;
	void *sharedData;
} CUctxCigParam;

typedef struct CUctxCreateParams_st {
	CUexecAffinityParam *execAffinityParams;
	int numExecAffinityParams;
	CUctxCigParam *cigParams;
} CUctxCreateParams;

/* ---- launches ------------------------------------------------------------------------------ */
typedef enum CUlaunchAttributeID_enum {
	CU_LAUNCH_ATTRIBUTE_IGNORE = 0,
	CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1,
	CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2,
	CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY = 3,
	CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
	CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 5,
	CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6,
	CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT = 7
} CUlaunchAttributeID;

/* The value of a launch attribute: a 64-byte union (only some members here). */
typedef union CUlaunchAttributeValue_union {
	char pad[64];
	int cooperative;
	struct {
		unsigned int x, y, z;
	} clusterDim;
	unsigned int priority;
} CUlaunchAttributeValue;

typedef struct CUlaunchAttribute_st {
	CUlaunchAttributeID id;
	char pad[8 - sizeof(CUlaunchAttributeID)];
	CUlaunchAttributeValue value;
} CUlaunchAttribute;

typedef struct CUlaunchConfig_st {
	unsigned int gridDimX;
	unsigned int gridDimY;
	unsigned int gridDimZ;
	unsigned int blockDimX;
	unsigned int blockDimY;
	unsigned int blockDimZ;
	unsigned int sharedMemBytes;
	CUstream hStream;
	CUlaunchAttribute *attrs;
	unsigned int numAttrs;
} CUlaunchConfig;

/* ---- virtual memory management --------------------------------------------------------------- */
typedef enum CUmemAllocationHandleType_enum {
	CU_MEM_HANDLE_TYPE_NONE = 0x0,
	CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1,
	CU_MEM_HANDLE_TYPE_WIN32 = 0x2,
	CU_MEM_HANDLE_TYPE_WIN32_KMT = 0x4,
	CU_MEM_HANDLE_TYPE_FABRIC = 0x8,
	CU_MEM_HANDLE_TYPE_MAX = 0x7FFFFFFF
} CUmemAllocationHandleType;

typedef enum CUmemAccess_flags_enum {
	CU_MEM_ACCESS_FLAGS_PROT_NONE = 0x0,
	CU_MEM_ACCESS_FLAGS_PROT_READ = 0x1,
	CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3,
	CU_MEM_ACCESS_FLAGS_PROT_MAX = 0x7FFFFFFF
} CUmemAccess_flags;

typedef enum CUmemLocationType_enum {
	CU_MEM_LOCATION_TYPE_INVALID = 0x0,
	CU_MEM_LOCATION_TYPE_NONE = 0x0,
	CU_MEM_LOCATION_TYPE_DEVICE = 0x1,
	CU_MEM_LOCATION_TYPE_HOST = 0x2,
	CU_MEM_LOCATION_TYPE_HOST_NUMA = 0x3,
	CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT = 0x4,
	CU_MEM_LOCATION_TYPE_MAX = 0x7FFFFFFF
} CUmemLocationType;

typedef enum CUmemAllocationType_enum {
	CU_MEM_ALLOCATION_TYPE_INVALID = 0x0,
	CU_MEM_ALLOCATION_TYPE_PINNED = 0x1,
	CU_MEM_ALLOCATION_TYPE_MANAGED = 0x2,
	CU_MEM_ALLOCATION_TYPE_MAX = 0x7FFFFFFF
} CUmemAllocationType;

typedef enum CUmemAllocationGranularity_flags_enum {
	CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0,
	CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1
} CUmemAllocationGranularity_flags;

typedef enum CUmemAllocationCompType_enum {
	CU_MEM_ALLOCATION_COMP_NONE = 0x0,
	CU_MEM_ALLOCATION_COMP_GENERIC = 0x1
} CUmemAllocationCompType;

typedef struct CUmemLocation_st {
	CUmemLocationType type;
	int id;
} CUmemLocation_v1;
typedef CUmemLocation_v1 CUmemLocation;

typedef struct CUmemAllocationProp_st {
	CUmemAllocationType type;
	CUmemAllocationHandleType requestedHandleTypes;
	CUmemLocation location;
	void *win32HandleMetaData;
	struct {
		unsigned char compressionType;
		unsigned char gpuDirectRDMACapable;
		unsigned short usage;
		unsigned char reserved[4];
	} allocFlags;
} CUmemAllocationProp_v1;
typedef CUmemAllocationProp_v1 CUmemAllocationProp;

typedef struct CUmemAccessDesc_st {
	CUmemLocation location;
	CUmemAccess_flags flags;
} CUmemAccessDesc_v1;
typedef CUmemAccessDesc_v1 CUmemAccessDesc;

/* ---- initialisation, versions, errors, entry points ----------------------------------------- */
CUresult CUDAAPI cuInit(unsigned int Flags);
CUresult CUDAAPI cuDriverGetVersion(int *driverVersion);
CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr);
CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr);
CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
				     cuuint64_t flags,
				     CUdriverProcAddressQueryResult *symbolStatus);

/* ---- devices ---------------------------------------------------------------------------------- */
CUresult CUDAAPI cuDeviceGetCount(int *count);
CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal);
CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev);
CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev);
CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev);

/* ---- contexts --------------------------------------------------------------------------------- */
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev);
CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
				unsigned int flags, CUdevice dev);
CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx);
CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx);
CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx);
CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx);
CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx);
CUresult CUDAAPI cuCtxGetDevice(CUdevice *device);
CUresult CUDAAPI cuCtxSynchronize(void);

/* ---- memory ----------------------------------------------------------------------------------- */
CUresult CUDAAPI cuMemGetInfo_v2(size_t *free, size_t *total);
CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);
CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t bytesize);
CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags);
CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr);
CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream);
CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult CUDAAPI cuMemFreeHost(void *p);
CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags);
CUresult CUDAAPI cuMemHostUnregister(void *p);

/* ---- virtual memory management ---------------------------------------------------------------- */
CUresult CUDAAPI cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
					       CUmemAllocationGranularity_flags option);
CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
			     const CUmemAllocationProp *prop, unsigned long long flags);
CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle);
CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
				     CUdeviceptr addr, unsigned long long flags);
CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size);
CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
			  CUmemGenericAllocationHandle handle, unsigned long long flags);
CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size);
CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
				size_t count);

/* ---- copies and memsets ----------------------------------------------------------------------- */
CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
			       CUstream hStream);
CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
				    CUstream hStream);
CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
CUresult CUDAAPI cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount);
CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
				      size_t ByteCount);
CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
				      CUstream hStream);
CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost,
					   size_t ByteCount, CUstream hStream);
CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
				      CUstream hStream);
CUresult CUDAAPI cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
					   CUstream hStream);
CUresult CUDAAPI cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
				      size_t ByteCount, CUstream hStream);
CUresult CUDAAPI cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
					   size_t ByteCount, CUstream hStream);
CUresult CUDAAPI cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N);
CUresult CUDAAPI cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N);
CUresult CUDAAPI cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N);
CUresult CUDAAPI cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N);
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
				 CUstream hStream);
CUresult CUDAAPI cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N,
				      CUstream hStream);
CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N,
				  CUstream hStream);
CUresult CUDAAPI cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N,
				       CUstream hStream);

/* ---- streams, events, graphs ------------------------------------------------------------------ */
CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags);
CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority);
CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream);
CUresult CUDAAPI cuStreamQuery(CUstream hStream);
CUresult CUDAAPI cuStreamQuery_ptsz(CUstream hStream);
CUresult CUDAAPI cuStreamSynchronize(CUstream hStream);
CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream);
CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags);
CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags);
CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags);
CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream);
CUresult CUDAAPI cuEventRecord_ptsz(CUevent hEvent, CUstream hStream);
CUresult CUDAAPI cuEventQuery(CUevent hEvent);
CUresult CUDAAPI cuEventSynchronize(CUevent hEvent);
CUresult CUDAAPI cuEventDestroy_v2(CUevent hEvent);
CUresult CUDAAPI cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd);
CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream);
CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);

/* ---- modules, libraries, functions, kernels ------------------------------------------------------ */
CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname);
CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image);
CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
				    CUjit_option *options, void **optionValues);
CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin);
CUresult CUDAAPI cuModuleUnload(CUmodule hmod);
CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name);
CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
				   void **jitOptionsValues, unsigned int numJitOptions,
				   CUlibraryOption *libraryOptions, void **libraryOptionValues,
				   unsigned int numLibraryOptions);
CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
				       CUjit_option *jitOptions, void **jitOptionsValues,
				       unsigned int numJitOptions, CUlibraryOption *libraryOptions,
				       void **libraryOptionValues, unsigned int numLibraryOptions);
CUresult CUDAAPI cuLibraryUnload(CUlibrary library);
CUresult CUDAAPI cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name);
CUresult CUDAAPI cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel);
CUresult CUDAAPI cuKernelGetName(const char **name, CUkernel hfunc);
CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction hfunc);

/* ---- launches ----------------------------------------------------------------------------------- */
CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
				unsigned int gridDimZ, unsigned int blockDimX,
				unsigned int blockDimY, unsigned int blockDimZ,
				unsigned int sharedMemBytes, CUstream hStream, void **kernelParams,
				void **extra);
CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
				     unsigned int gridDimZ, unsigned int blockDimX,
				     unsigned int blockDimY, unsigned int blockDimZ,
				     unsigned int sharedMemBytes, CUstream hStream,
				     void **kernelParams, void **extra);
CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
				  void **extra);
CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
				       void **kernelParams, void **extra);
CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
					   unsigned int gridDimY, unsigned int gridDimZ,
					   unsigned int blockDimX, unsigned int blockDimY,
					   unsigned int blockDimZ, unsigned int sharedMemBytes,
					   CUstream hStream, void **kernelParams);
CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
						unsigned int gridDimY, unsigned int gridDimZ,
						unsigned int blockDimX, unsigned int blockDimY,
						unsigned int blockDimZ, unsigned int sharedMemBytes,
						CUstream hStream, void **kernelParams);

#ifdef __cplusplus
}
#endif

#endif /* SIMGPU_CUDA_H */
