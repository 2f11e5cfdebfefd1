/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cuda_runtime_api.h — the simulated GPU's CUDA runtime API header.
 *
 * Owns the C declarations of every function that build/simgpu/libcudart.so.13
 * exports, with the real CUDA 13 names, types, enum values, struct layouts
 * and signatures, so that a program can be compiled without the CUDA
 * toolkit and still run against either the simulator or the real runtime.
 * Usable from C (gnu11) and C++. Only what the simulator implements is
 * declared; see tests/simgpu/README.md.
 */
#ifndef SIMGPU_CUDA_RUNTIME_API_H
#define SIMGPU_CUDA_RUNTIME_API_H

#include <stddef.h>

#define CUDART_VERSION 13000
#define __SIMGPU__     1

#ifdef __cplusplus
#define __SIMGPU_DEFAULT(v) = v
#else
#define __SIMGPU_DEFAULT(v)
#endif

/* ---- error codes (values of the real runtime) --------------------------- */
#define __SIMGPU_CUDA_ERRORS(X)                         \
	X(cudaSuccess, 0)                               \
	X(cudaErrorInvalidValue, 1)                     \
	X(cudaErrorMemoryAllocation, 2)                 \
	X(cudaErrorInitializationError, 3)              \
	X(cudaErrorCudartUnloading, 4)                  \
	X(cudaErrorProfilerDisabled, 5)                 \
	X(cudaErrorProfilerNotInitialized, 6)           \
	X(cudaErrorProfilerAlreadyStarted, 7)           \
	X(cudaErrorProfilerAlreadyStopped, 8)           \
	X(cudaErrorInvalidConfiguration, 9)             \
	X(cudaErrorInvalidPitchValue, 12)               \
	X(cudaErrorInvalidSymbol, 13)                   \
	X(cudaErrorInvalidHostPointer, 16)              \
	X(cudaErrorInvalidDevicePointer, 17)            \
	X(cudaErrorInvalidTexture, 18)                  \
	X(cudaErrorInvalidTextureBinding, 19)           \
	X(cudaErrorInvalidChannelDescriptor, 20)        \
	X(cudaErrorInvalidMemcpyDirection, 21)          \
	X(cudaErrorAddressOfConstant, 22)               \
	X(cudaErrorTextureFetchFailed, 23)              \
	X(cudaErrorTextureNotBound, 24)                 \
	X(cudaErrorSynchronizationError, 25)            \
	X(cudaErrorInvalidFilterSetting, 26)            \
	X(cudaErrorInvalidNormSetting, 27)              \
	X(cudaErrorMixedDeviceExecution, 28)            \
	X(cudaErrorNotYetImplemented, 31)               \
	X(cudaErrorMemoryValueTooLarge, 32)             \
	X(cudaErrorStubLibrary, 34)                     \
	X(cudaErrorInsufficientDriver, 35)              \
	X(cudaErrorCallRequiresNewerDriver, 36)         \
	X(cudaErrorInvalidSurface, 37)                  \
	X(cudaErrorDuplicateVariableName, 43)           \
	X(cudaErrorDuplicateTextureName, 44)            \
	X(cudaErrorDuplicateSurfaceName, 45)            \
	X(cudaErrorDevicesUnavailable, 46)              \
	X(cudaErrorIncompatibleDriverContext, 49)       \
	X(cudaErrorMissingConfiguration, 52)            \
	X(cudaErrorPriorLaunchFailure, 53)              \
	X(cudaErrorLaunchMaxDepthExceeded, 65)          \
	X(cudaErrorLaunchFileScopedTex, 66)             \
	X(cudaErrorLaunchFileScopedSurf, 67)            \
	X(cudaErrorSyncDepthExceeded, 68)               \
	X(cudaErrorLaunchPendingCountExceeded, 69)      \
	X(cudaErrorInvalidDeviceFunction, 98)           \
	X(cudaErrorNoDevice, 100)                       \
	X(cudaErrorInvalidDevice, 101)                  \
	X(cudaErrorDeviceNotLicensed, 102)              \
	X(cudaErrorSoftwareValidityNotEstablished, 103) \
	X(cudaErrorStartupFailure, 127)                 \
	X(cudaErrorInvalidKernelImage, 200)             \
	X(cudaErrorDeviceUninitialized, 201)            \
	X(cudaErrorMapBufferObjectFailed, 205)          \
	X(cudaErrorUnmapBufferObjectFailed, 206)        \
	X(cudaErrorArrayIsMapped, 207)                  \
	X(cudaErrorAlreadyMapped, 208)                  \
	X(cudaErrorNoKernelImageForDevice, 209)         \
	X(cudaErrorAlreadyAcquired, 210)                \
	X(cudaErrorNotMapped, 211)                      \
	X(cudaErrorNotMappedAsArray, 212)               \
	X(cudaErrorNotMappedAsPointer, 213)             \
	X(cudaErrorECCUncorrectable, 214)               \
	X(cudaErrorUnsupportedLimit, 215)               \
	X(cudaErrorDeviceAlreadyInUse, 216)             \
	X(cudaErrorPeerAccessUnsupported, 217)          \
	X(cudaErrorInvalidPtx, 218)                     \
	X(cudaErrorInvalidGraphicsContext, 219)         \
	X(cudaErrorNvlinkUncorrectable, 220)            \
	X(cudaErrorJitCompilerNotFound, 221)            \
	X(cudaErrorUnsupportedPtxVersion, 222)          \
	X(cudaErrorJitCompilationDisabled, 223)         \
	X(cudaErrorUnsupportedExecAffinity, 224)        \
	X(cudaErrorUnsupportedDevSideSync, 225)         \
	X(cudaErrorContained, 226)                      \
	X(cudaErrorInvalidSource, 300)                  \
	X(cudaErrorFileNotFound, 301)                   \
	X(cudaErrorSharedObjectSymbolNotFound, 302)     \
	X(cudaErrorSharedObjectInitFailed, 303)         \
	X(cudaErrorOperatingSystem, 304)                \
	X(cudaErrorInvalidResourceHandle, 400)          \
	X(cudaErrorIllegalState, 401)                   \
	X(cudaErrorLossyQuery, 402)                     \
	X(cudaErrorSymbolNotFound, 500)                 \
	X(cudaErrorNotReady, 600)                       \
	X(cudaErrorIllegalAddress, 700)                 \
	X(cudaErrorLaunchOutOfResources, 701)           \
	X(cudaErrorLaunchTimeout, 702)                  \
	X(cudaErrorLaunchIncompatibleTexturing, 703)    \
	X(cudaErrorPeerAccessAlreadyEnabled, 704)       \
	X(cudaErrorPeerAccessNotEnabled, 705)           \
	X(cudaErrorSetOnActiveProcess, 708)             \
	X(cudaErrorContextIsDestroyed, 709)             \
	X(cudaErrorAssert, 710)                         \
	X(cudaErrorTooManyPeers, 711)                   \
	X(cudaErrorHostMemoryAlreadyRegistered, 712)    \
	X(cudaErrorHostMemoryNotRegistered, 713)        \
	X(cudaErrorHardwareStackError, 714)             \
	X(cudaErrorIllegalInstruction, 715)             \
	X(cudaErrorMisalignedAddress, 716)              \
	X(cudaErrorInvalidAddressSpace, 717)            \
	X(cudaErrorInvalidPc, 718)                      \
	X(cudaErrorLaunchFailure, 719)                  \
	X(cudaErrorCooperativeLaunchTooLarge, 720)      \
	X(cudaErrorTensorMemoryLeak, 721)               \
	X(cudaErrorNotPermitted, 800)                   \
	X(cudaErrorNotSupported, 801)                   \
	X(cudaErrorSystemNotReady, 802)                 \
	X(cudaErrorSystemDriverMismatch, 803)           \
	X(cudaErrorCompatNotSupportedOnDevice, 804)     \
	X(cudaErrorMpsConnectionFailed, 805)            \
	X(cudaErrorMpsRpcFailure, 806)                  \
	X(cudaErrorMpsServerNotReady, 807)              \
	X(cudaErrorMpsMaxClientsReached, 808)           \
	X(cudaErrorMpsMaxConnectionsReached, 809)       \
	X(cudaErrorMpsClientTerminated, 810)            \
	X(cudaErrorCdpNotSupported, 811)                \
	X(cudaErrorCdpVersionMismatch, 812)             \
	X(cudaErrorStreamCaptureUnsupported, 900)       \
	X(cudaErrorStreamCaptureInvalidated, 901)       \
	X(cudaErrorStreamCaptureMerge, 902)             \
	X(cudaErrorStreamCaptureUnmatched, 903)         \
	X(cudaErrorStreamCaptureUnjoined, 904)          \
	X(cudaErrorStreamCaptureIsolation, 905)         \
	X(cudaErrorStreamCaptureImplicit, 906)          \
	X(cudaErrorCapturedEvent, 907)                  \
	X(cudaErrorStreamCaptureWrongThread, 908)       \
	X(cudaErrorTimeout, 909)                        \
	X(cudaErrorGraphExecUpdateFailure, 910)         \
	X(cudaErrorExternalDevice, 911)                 \
	X(cudaErrorInvalidClusterSize, 912)             \
	X(cudaErrorFunctionNotLoaded, 913)              \
	X(cudaErrorInvalidResourceType, 914)            \
	X(cudaErrorInvalidResourceConfiguration, 915)   \
	X(cudaErrorUnknown, 999)

enum cudaError {
#define __SIMGPU_ERR_ENUM(name, value) name = value,
	__SIMGPU_CUDA_ERRORS(__SIMGPU_ERR_ENUM)
#undef __SIMGPU_ERR_ENUM
		cudaErrorApiFailureBase = 10000
};
typedef enum cudaError cudaError_t;

/* ---- vector types -------------------------------------------------------- */
struct uint3 {
	unsigned int x, y, z;
};
typedef struct uint3 uint3;

struct dim3 {
	unsigned int x, y, z;
#ifdef __cplusplus
	constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
	    : x(vx), y(vy), z(vz)
	{
	}
	constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z)
	{
	}
	constexpr operator uint3(void) const
	{
		return uint3{ x, y, z };
	}
#endif
};
typedef struct dim3 dim3;

/* ---- handles --------------------------------------------------------------- */
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef struct CUgraph_st *cudaGraph_t;
typedef struct CUgraphNode_st *cudaGraphNode_t;
typedef struct CUgraphExec_st *cudaGraphExec_t;
typedef struct CUkern_st *cudaKernel_t;
typedef struct CUfunc_st *cudaFunction_t;

/* ---- enums ----------------------------------------------------------------- */
enum cudaMemcpyKind {
	cudaMemcpyHostToHost = 0,
	cudaMemcpyHostToDevice = 1,
	cudaMemcpyDeviceToHost = 2,
	cudaMemcpyDeviceToDevice = 3,
	cudaMemcpyDefault = 4
};

enum cudaMemoryType {
	cudaMemoryTypeUnregistered = 0,
	cudaMemoryTypeHost = 1,
	cudaMemoryTypeDevice = 2,
	cudaMemoryTypeManaged = 3
};

enum cudaStreamCaptureStatus {
	cudaStreamCaptureStatusNone = 0,
	cudaStreamCaptureStatusActive = 1,
	cudaStreamCaptureStatusInvalidated = 2
};

enum cudaStreamCaptureMode {
	cudaStreamCaptureModeGlobal = 0,
	cudaStreamCaptureModeThreadLocal = 1,
	cudaStreamCaptureModeRelaxed = 2
};

/* ---- flags ------------------------------------------------------------------ */
#define cudaHostAllocDefault			 0x00
#define cudaHostAllocPortable			 0x01
#define cudaHostAllocMapped			 0x02
#define cudaHostAllocWriteCombined		 0x04
#define cudaHostRegisterDefault			 0x00
#define cudaHostRegisterPortable		 0x01
#define cudaHostRegisterMapped			 0x02
#define cudaHostRegisterIoMemory		 0x04
#define cudaHostRegisterReadOnly		 0x08
#define cudaStreamDefault			 0x00
#define cudaStreamNonBlocking			 0x01
#define cudaStreamLegacy			 ((cudaStream_t)0x1)
#define cudaStreamPerThread			 ((cudaStream_t)0x2)
#define cudaEventDefault			 0x00
#define cudaEventBlockingSync			 0x01
#define cudaEventDisableTiming			 0x02
#define cudaEventInterprocess			 0x04
#define cudaEventRecordDefault			 0x00
#define cudaEventRecordExternal			 0x01
#define cudaEventWaitDefault			 0x00
#define cudaEventWaitExternal			 0x01
#define cudaDeviceScheduleAuto			 0x00
#define cudaDeviceScheduleSpin			 0x01
#define cudaDeviceScheduleYield			 0x02
#define cudaDeviceScheduleBlockingSync		 0x04
#define cudaDeviceScheduleMask			 0x07
#define cudaDeviceMapHost			 0x08
#define cudaDeviceLmemResizeToMax		 0x10
#define cudaDeviceMask				 0xff
#define cudaMemAttachGlobal			 0x01
#define cudaMemAttachHost			 0x02
#define cudaMemAttachSingle			 0x04
#define cudaCpuDeviceId				 ((int)-1)
#define cudaInvalidDeviceId			 ((int)-2)
#define cudaGraphInstantiateFlagAutoFreeOnLaunch 1
#define cudaGraphInstantiateFlagUpload		 2
#define cudaGraphInstantiateFlagDeviceLaunch	 4
#define cudaGraphInstantiateFlagUseNodePriority	 8

/* ---- structs ------------------------------------------------------------- */
struct cudaPointerAttributes {
	enum cudaMemoryType type;
	int device;
	void *devicePointer;
	void *hostPointer;
	long reserved[8];
};

/* cudaLaunchAttribute: the id and a 64-byte value union (opaque here). */
typedef int cudaLaunchAttributeID;
typedef union cudaLaunchAttributeValue {
	char pad[64];
	int cooperative;
	unsigned int priority;
} cudaLaunchAttributeValue;

typedef struct cudaLaunchAttribute_st {
	cudaLaunchAttributeID id;
	char pad[8 - sizeof(cudaLaunchAttributeID)];
	cudaLaunchAttributeValue val;
} cudaLaunchAttribute;

typedef struct cudaLaunchConfig_st {
	dim3 gridDim;
	dim3 blockDim;
	size_t dynamicSmemBytes;
	cudaStream_t stream;
	cudaLaunchAttribute *attrs;
	unsigned int numAttrs;
} cudaLaunchConfig_t;

typedef void (*cudaHostFn_t)(void *userData);
typedef void (*cudaStreamCallback_t)(cudaStream_t stream, cudaError_t status, void *userData);

/* ---- per-thread default stream ---------------------------------------- */
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
#define cudaMemcpy		    cudaMemcpy_ptds
#define cudaMemcpy2D		    cudaMemcpy2D_ptds
#define cudaMemset		    cudaMemset_ptds
#define cudaMemcpyAsync		    cudaMemcpyAsync_ptsz
#define cudaMemcpy2DAsync	    cudaMemcpy2DAsync_ptsz
#define cudaMemsetAsync		    cudaMemsetAsync_ptsz
#define cudaMallocAsync		    cudaMallocAsync_ptsz
#define cudaFreeAsync		    cudaFreeAsync_ptsz
#define cudaLaunchKernel	    cudaLaunchKernel_ptsz
#define cudaLaunchKernelExC	    cudaLaunchKernelExC_ptsz
#define cudaLaunchCooperativeKernel cudaLaunchCooperativeKernel_ptsz
#define cudaLaunchHostFunc	    cudaLaunchHostFunc_ptsz
#define cudaStreamAddCallback	    cudaStreamAddCallback_ptsz
#define cudaGraphLaunch		    cudaGraphLaunch_ptsz
#define cudaStreamSynchronize	    cudaStreamSynchronize_ptsz
#define cudaStreamQuery		    cudaStreamQuery_ptsz
#define cudaStreamWaitEvent	    cudaStreamWaitEvent_ptsz
#define cudaStreamGetFlags	    cudaStreamGetFlags_ptsz
#define cudaStreamGetPriority	    cudaStreamGetPriority_ptsz
#define cudaStreamGetDevice	    cudaStreamGetDevice_ptsz
#define cudaStreamBeginCapture	    cudaStreamBeginCapture_ptsz
#define cudaStreamEndCapture	    cudaStreamEndCapture_ptsz
#define cudaStreamIsCapturing	    cudaStreamIsCapturing_ptsz
#define cudaEventRecord		    cudaEventRecord_ptsz
#define cudaEventRecordWithFlags    cudaEventRecordWithFlags_ptsz
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- device management and errors ---------------------------------------- */
extern cudaError_t cudaGetDeviceCount(int *count);
extern cudaError_t cudaGetDevice(int *device);
extern cudaError_t cudaSetDevice(int device);
extern cudaError_t cudaSetDeviceFlags(unsigned int flags);
extern cudaError_t cudaGetDeviceFlags(unsigned int *flags);
extern cudaError_t cudaDeviceReset(void);
extern cudaError_t cudaDeviceSynchronize(void);
extern cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority);
extern cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice);
extern cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags);
extern cudaError_t cudaDeviceDisablePeerAccess(int peerDevice);
extern cudaError_t cudaGetLastError(void);
extern cudaError_t cudaPeekAtLastError(void);
extern const char *cudaGetErrorString(cudaError_t error);
extern const char *cudaGetErrorName(cudaError_t error);
extern cudaError_t cudaRuntimeGetVersion(int *runtimeVersion);
extern cudaError_t cudaDriverGetVersion(int *driverVersion);

/* ---- memory ---------------------------------------------------------------- */
extern cudaError_t cudaMalloc(void **devPtr, size_t size);
extern cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height);
extern cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream);
extern cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
extern cudaError_t cudaMallocManaged(void **devPtr, size_t size,
				     unsigned int flags __SIMGPU_DEFAULT(cudaMemAttachGlobal));
extern cudaError_t cudaMallocHost(void **ptr, size_t size);
extern cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags);
extern cudaError_t cudaFree(void *devPtr);
extern cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream);
extern cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
extern cudaError_t cudaFreeHost(void *ptr);
extern cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags);
extern cudaError_t cudaHostUnregister(void *ptr);
extern cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags);
extern cudaError_t cudaHostGetFlags(unsigned int *pFlags, void *pHost);
extern cudaError_t cudaMemGetInfo(size_t *free, size_t *total);
extern cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes,
					    const void *ptr);

/* ---- copies and memsets ------------------------------------------------------ */
extern cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
extern cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count,
				   enum cudaMemcpyKind kind);
extern cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
				   enum cudaMemcpyKind kind,
				   cudaStream_t stream __SIMGPU_DEFAULT(0));
extern cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
					enum cudaMemcpyKind kind,
					cudaStream_t stream __SIMGPU_DEFAULT(0));
extern cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch,
				size_t width, size_t height, enum cudaMemcpyKind kind);
extern cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch,
				     size_t width, size_t height, enum cudaMemcpyKind kind);
extern cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
				     size_t width, size_t height, enum cudaMemcpyKind kind,
				     cudaStream_t stream __SIMGPU_DEFAULT(0));
extern cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch,
					  size_t width, size_t height, enum cudaMemcpyKind kind,
					  cudaStream_t stream __SIMGPU_DEFAULT(0));
extern cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice,
				  size_t count);
extern cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
				       size_t count, cudaStream_t stream __SIMGPU_DEFAULT(0));
extern cudaError_t cudaMemset(void *devPtr, int value, size_t count);
extern cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count);
extern cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count,
				   cudaStream_t stream __SIMGPU_DEFAULT(0));
extern cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count,
					cudaStream_t stream __SIMGPU_DEFAULT(0));

/* ---- launches ---------------------------------------------------------------- */
extern cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
				    size_t sharedMem, cudaStream_t stream);
extern cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
					 size_t sharedMem, cudaStream_t stream);
extern cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func,
				       void **args);
extern cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func,
					    void **args);
extern cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim,
					       void **args, size_t sharedMem, cudaStream_t stream);
extern cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim,
						    void **args, size_t sharedMem,
						    cudaStream_t stream);
extern cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData);
extern cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData);
extern cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
					 void *userData, unsigned int flags);
extern cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback,
					      void *userData, unsigned int flags);

/* ---- streams ------------------------------------------------------------------- */
extern cudaError_t cudaStreamCreate(cudaStream_t *pStream);
extern cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags);
extern cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags,
						int priority);
extern cudaError_t cudaStreamDestroy(cudaStream_t stream);
extern cudaError_t cudaStreamSynchronize(cudaStream_t stream);
extern cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
extern cudaError_t cudaStreamQuery(cudaStream_t stream);
extern cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream);
extern cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
				       unsigned int flags __SIMGPU_DEFAULT(0));
extern cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event,
					    unsigned int flags __SIMGPU_DEFAULT(0));
extern cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags);
extern cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t hStream, unsigned int *flags);
extern cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority);
extern cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t hStream, int *priority);
extern cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int *device);
extern cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t hStream, int *device);
extern cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode);
extern cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream,
					       enum cudaStreamCaptureMode mode);
extern cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph);
extern cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph);
extern cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
					 enum cudaStreamCaptureStatus *pCaptureStatus);
extern cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream,
					      enum cudaStreamCaptureStatus *pCaptureStatus);

/* ---- events -------------------------------------------------------------------- */
extern cudaError_t cudaEventCreate(cudaEvent_t *event);
extern cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags);
extern cudaError_t cudaEventDestroy(cudaEvent_t event);
extern cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream __SIMGPU_DEFAULT(0));
extern cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream __SIMGPU_DEFAULT(0));
extern cudaError_t cudaEventRecordWithFlags(cudaEvent_t event,
					    cudaStream_t stream __SIMGPU_DEFAULT(0),
					    unsigned int flags __SIMGPU_DEFAULT(0));
extern cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event,
						 cudaStream_t stream __SIMGPU_DEFAULT(0),
						 unsigned int flags __SIMGPU_DEFAULT(0));
extern cudaError_t cudaEventSynchronize(cudaEvent_t event);
extern cudaError_t cudaEventQuery(cudaEvent_t event);
extern cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);

/* ---- graphs --------------------------------------------------------------------- */
extern cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
					unsigned long long flags __SIMGPU_DEFAULT(0));
extern cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
						 unsigned long long flags __SIMGPU_DEFAULT(0));
extern cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream);
extern cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream);
extern cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec);
extern cudaError_t cudaGraphDestroy(cudaGraph_t graph);

#ifdef __cplusplus
}
#endif

#endif /* SIMGPU_CUDA_RUNTIME_API_H */
