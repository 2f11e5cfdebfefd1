/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cuda_errors.c — names of the CUDA runtime's cudaError_t codes (CUDA 13,
 * driver_types.h), the driver's CUresult codes (cuda.h) and NCCL's
 * ncclResult_t (nccl.h), so that reports say "cudaErrorInsufficientDriver"
 * rather than 35. Codes not listed here are printed as their number.
 */
#include <stdlib.h>

#include "model/model_internal.h"

struct code_name {
	int code;
	const char *name;
};

/* Sorted by code, for bsearch. */
static const struct code_name cuda_errors[] = {
	{ 0, "cudaSuccess" },
	{ 1, "cudaErrorInvalidValue" },
	{ 2, "cudaErrorMemoryAllocation" },
	{ 3, "cudaErrorInitializationError" },
	{ 4, "cudaErrorCudartUnloading" },
	{ 5, "cudaErrorProfilerDisabled" },
	{ 6, "cudaErrorProfilerNotInitialized" },
	{ 7, "cudaErrorProfilerAlreadyStarted" },
	{ 8, "cudaErrorProfilerAlreadyStopped" },
	{ 9, "cudaErrorInvalidConfiguration" },
	{ 12, "cudaErrorInvalidPitchValue" },
	{ 13, "cudaErrorInvalidSymbol" },
	{ 16, "cudaErrorInvalidHostPointer" },
	{ 17, "cudaErrorInvalidDevicePointer" },
	{ 18, "cudaErrorInvalidTexture" },
	{ 19, "cudaErrorInvalidTextureBinding" },
	{ 20, "cudaErrorInvalidChannelDescriptor" },
	{ 21, "cudaErrorInvalidMemcpyDirection" },
	{ 22, "cudaErrorAddressOfConstant" },
	{ 23, "cudaErrorTextureFetchFailed" },
	{ 24, "cudaErrorTextureNotBound" },
	{ 25, "cudaErrorSynchronizationError" },
	{ 26, "cudaErrorInvalidFilterSetting" },
	{ 27, "cudaErrorInvalidNormSetting" },
	{ 28, "cudaErrorMixedDeviceExecution" },
	{ 31, "cudaErrorNotYetImplemented" },
	{ 32, "cudaErrorMemoryValueTooLarge" },
	{ 34, "cudaErrorStubLibrary" },
	{ 35, "cudaErrorInsufficientDriver" },
	{ 36, "cudaErrorCallRequiresNewerDriver" },
	{ 37, "cudaErrorInvalidSurface" },
	{ 43, "cudaErrorDuplicateVariableName" },
	{ 44, "cudaErrorDuplicateTextureName" },
	{ 45, "cudaErrorDuplicateSurfaceName" },
	{ 46, "cudaErrorDevicesUnavailable" },
	{ 49, "cudaErrorIncompatibleDriverContext" },
	{ 52, "cudaErrorMissingConfiguration" },
	{ 53, "cudaErrorPriorLaunchFailure" },
	{ 65, "cudaErrorLaunchMaxDepthExceeded" },
	{ 66, "cudaErrorLaunchFileScopedTex" },
	{ 67, "cudaErrorLaunchFileScopedSurf" },
	{ 68, "cudaErrorSyncDepthExceeded" },
	{ 69, "cudaErrorLaunchPendingCountExceeded" },
	{ 98, "cudaErrorInvalidDeviceFunction" },
	{ 100, "cudaErrorNoDevice" },
	{ 101, "cudaErrorInvalidDevice" },
	{ 102, "cudaErrorDeviceNotLicensed" },
	{ 103, "cudaErrorSoftwareValidityNotEstablished" },
	{ 127, "cudaErrorStartupFailure" },
	{ 200, "cudaErrorInvalidKernelImage" },
	{ 201, "cudaErrorDeviceUninitialized" },
	{ 205, "cudaErrorMapBufferObjectFailed" },
	{ 206, "cudaErrorUnmapBufferObjectFailed" },
	{ 207, "cudaErrorArrayIsMapped" },
	{ 208, "cudaErrorAlreadyMapped" },
	{ 209, "cudaErrorNoKernelImageForDevice" },
	{ 210, "cudaErrorAlreadyAcquired" },
	{ 211, "cudaErrorNotMapped" },
	{ 212, "cudaErrorNotMappedAsArray" },
	{ 213, "cudaErrorNotMappedAsPointer" },
	{ 214, "cudaErrorECCUncorrectable" },
	{ 215, "cudaErrorUnsupportedLimit" },
	{ 216, "cudaErrorDeviceAlreadyInUse" },
	{ 217, "cudaErrorPeerAccessUnsupported" },
	{ 218, "cudaErrorInvalidPtx" },
	{ 219, "cudaErrorInvalidGraphicsContext" },
	{ 220, "cudaErrorNvlinkUncorrectable" },
	{ 221, "cudaErrorJitCompilerNotFound" },
	{ 222, "cudaErrorUnsupportedPtxVersion" },
	{ 223, "cudaErrorJitCompilationDisabled" },
	{ 224, "cudaErrorUnsupportedExecAffinity" },
	{ 225, "cudaErrorUnsupportedDevSideSync" },
	{ 226, "cudaErrorContained" },
	{ 300, "cudaErrorInvalidSource" },
	{ 301, "cudaErrorFileNotFound" },
	{ 302, "cudaErrorSharedObjectSymbolNotFound" },
	{ 303, "cudaErrorSharedObjectInitFailed" },
	{ 304, "cudaErrorOperatingSystem" },
	{ 400, "cudaErrorInvalidResourceHandle" },
	{ 401, "cudaErrorIllegalState" },
	{ 402, "cudaErrorLossyQuery" },
	{ 500, "cudaErrorSymbolNotFound" },
	{ 600, "cudaErrorNotReady" },
	{ 700, "cudaErrorIllegalAddress" },
	{ 701, "cudaErrorLaunchOutOfResources" },
	{ 702, "cudaErrorLaunchTimeout" },
	{ 703, "cudaErrorLaunchIncompatibleTexturing" },
	{ 704, "cudaErrorPeerAccessAlreadyEnabled" },
	{ 705, "cudaErrorPeerAccessNotEnabled" },
	{ 708, "cudaErrorSetOnActiveProcess" },
	{ 709, "cudaErrorContextIsDestroyed" },
	{ 710, "cudaErrorAssert" },
	{ 711, "cudaErrorTooManyPeers" },
	{ 712, "cudaErrorHostMemoryAlreadyRegistered" },
	{ 713, "cudaErrorHostMemoryNotRegistered" },
	{ 714, "cudaErrorHardwareStackError" },
	{ 715, "cudaErrorIllegalInstruction" },
	{ 716, "cudaErrorMisalignedAddress" },
	{ 717, "cudaErrorInvalidAddressSpace" },
	{ 718, "cudaErrorInvalidPc" },
	{ 719, "cudaErrorLaunchFailure" },
	{ 720, "cudaErrorCooperativeLaunchTooLarge" },
	{ 721, "cudaErrorTensorMemoryLeak" },
	{ 800, "cudaErrorNotPermitted" },
	{ 801, "cudaErrorNotSupported" },
	{ 802, "cudaErrorSystemNotReady" },
	{ 803, "cudaErrorSystemDriverMismatch" },
	{ 804, "cudaErrorCompatNotSupportedOnDevice" },
	{ 805, "cudaErrorMpsConnectionFailed" },
	{ 806, "cudaErrorMpsRpcFailure" },
	{ 807, "cudaErrorMpsServerNotReady" },
	{ 808, "cudaErrorMpsMaxClientsReached" },
	{ 809, "cudaErrorMpsMaxConnectionsReached" },
	{ 810, "cudaErrorMpsClientTerminated" },
	{ 811, "cudaErrorCdpNotSupported" },
	{ 812, "cudaErrorCdpVersionMismatch" },
	{ 900, "cudaErrorStreamCaptureUnsupported" },
	{ 901, "cudaErrorStreamCaptureInvalidated" },
	{ 902, "cudaErrorStreamCaptureMerge" },
	{ 903, "cudaErrorStreamCaptureUnmatched" },
	{ 904, "cudaErrorStreamCaptureUnjoined" },
	{ 905, "cudaErrorStreamCaptureIsolation" },
	{ 906, "cudaErrorStreamCaptureImplicit" },
	{ 907, "cudaErrorCapturedEvent" },
	{ 908, "cudaErrorStreamCaptureWrongThread" },
	{ 909, "cudaErrorTimeout" },
	{ 910, "cudaErrorGraphExecUpdateFailure" },
	{ 911, "cudaErrorExternalDevice" },
	{ 912, "cudaErrorInvalidClusterSize" },
	{ 913, "cudaErrorFunctionNotLoaded" },
	{ 914, "cudaErrorInvalidResourceType" },
	{ 915, "cudaErrorInvalidResourceConfiguration" },
	{ 999, "cudaErrorUnknown" },
};

/* CUresult, sorted by code. */
static const struct code_name cu_errors[] = {
	{ 0, "CUDA_SUCCESS" },
	{ 1, "CUDA_ERROR_INVALID_VALUE" },
	{ 2, "CUDA_ERROR_OUT_OF_MEMORY" },
	{ 3, "CUDA_ERROR_NOT_INITIALIZED" },
	{ 4, "CUDA_ERROR_DEINITIALIZED" },
	{ 5, "CUDA_ERROR_PROFILER_DISABLED" },
	{ 34, "CUDA_ERROR_STUB_LIBRARY" },
	{ 46, "CUDA_ERROR_DEVICE_UNAVAILABLE" },
	{ 100, "CUDA_ERROR_NO_DEVICE" },
	{ 101, "CUDA_ERROR_INVALID_DEVICE" },
	{ 102, "CUDA_ERROR_DEVICE_NOT_LICENSED" },
	{ 200, "CUDA_ERROR_INVALID_IMAGE" },
	{ 201, "CUDA_ERROR_INVALID_CONTEXT" },
	{ 202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT" },
	{ 205, "CUDA_ERROR_MAP_FAILED" },
	{ 206, "CUDA_ERROR_UNMAP_FAILED" },
	{ 207, "CUDA_ERROR_ARRAY_IS_MAPPED" },
	{ 208, "CUDA_ERROR_ALREADY_MAPPED" },
	{ 209, "CUDA_ERROR_NO_BINARY_FOR_GPU" },
	{ 210, "CUDA_ERROR_ALREADY_ACQUIRED" },
	{ 211, "CUDA_ERROR_NOT_MAPPED" },
	{ 214, "CUDA_ERROR_ECC_UNCORRECTABLE" },
	{ 216, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE" },
	{ 217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED" },
	{ 218, "CUDA_ERROR_INVALID_PTX" },
	{ 300, "CUDA_ERROR_INVALID_SOURCE" },
	{ 301, "CUDA_ERROR_FILE_NOT_FOUND" },
	{ 302, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND" },
	{ 303, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED" },
	{ 304, "CUDA_ERROR_OPERATING_SYSTEM" },
	{ 400, "CUDA_ERROR_INVALID_HANDLE" },
	{ 401, "CUDA_ERROR_ILLEGAL_STATE" },
	{ 402, "CUDA_ERROR_LOSSY_QUERY" },
	{ 500, "CUDA_ERROR_NOT_FOUND" },
	{ 600, "CUDA_ERROR_NOT_READY" },
	{ 700, "CUDA_ERROR_ILLEGAL_ADDRESS" },
	{ 701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES" },
	{ 702, "CUDA_ERROR_LAUNCH_TIMEOUT" },
	{ 703, "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING" },
	{ 704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED" },
	{ 705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED" },
	{ 708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE" },
	{ 709, "CUDA_ERROR_CONTEXT_IS_DESTROYED" },
	{ 710, "CUDA_ERROR_ASSERT" },
	{ 712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED" },
	{ 713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED" },
	{ 714, "CUDA_ERROR_HARDWARE_STACK_ERROR" },
	{ 715, "CUDA_ERROR_ILLEGAL_INSTRUCTION" },
	{ 716, "CUDA_ERROR_MISALIGNED_ADDRESS" },
	{ 717, "CUDA_ERROR_INVALID_ADDRESS_SPACE" },
	{ 718, "CUDA_ERROR_INVALID_PC" },
	{ 719, "CUDA_ERROR_LAUNCH_FAILED" },
	{ 720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE" },
	{ 800, "CUDA_ERROR_NOT_PERMITTED" },
	{ 801, "CUDA_ERROR_NOT_SUPPORTED" },
	{ 900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED" },
	{ 901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED" },
	{ 902, "CUDA_ERROR_STREAM_CAPTURE_MERGE" },
	{ 903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED" },
	{ 904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED" },
	{ 905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION" },
	{ 906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT" },
	{ 907, "CUDA_ERROR_CAPTURED_EVENT" },
	{ 908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD" },
	{ 909, "CUDA_ERROR_TIMEOUT" },
	{ 910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE" },
	{ 999, "CUDA_ERROR_UNKNOWN" },
};

/* ncclResult_t, sorted by code. */
static const struct code_name nccl_errors[] = {
	{ 0, "ncclSuccess" },	    { 1, "ncclUnhandledCudaError" }, { 2, "ncclSystemError" },
	{ 3, "ncclInternalError" }, { 4, "ncclInvalidArgument" },    { 5, "ncclInvalidUsage" },
	{ 6, "ncclRemoteError" },   { 7, "ncclInProgress" },
};

static int cmp_code(const void *key, const void *elem)
{
	int k = *(const int *)key, c = ((const struct code_name *)elem)->code;

	return (k > c) - (k < c);
}

static const char *lookup(const struct code_name *table, size_t n, int code)
{
	const struct code_name *e = bsearch(&code, table, n, sizeof(table[0]), cmp_code);

	return e ? e->name : NULL;
}

#define LOOKUP(table, code) lookup(table, sizeof(table) / sizeof(table[0]), code)

const char *gp_cuda_error_name(int code)
{
	return LOOKUP(cuda_errors, code);
}

const char *gp_error_name(enum gp_family family, int code)
{
	switch (family) {
	case GP_FAM_CUDART:
		return LOOKUP(cuda_errors, code);
	case GP_FAM_CUDA:
		return LOOKUP(cu_errors, code);
	case GP_FAM_NCCL:
		return LOOKUP(nccl_errors, code);
	}
	return NULL;
}
