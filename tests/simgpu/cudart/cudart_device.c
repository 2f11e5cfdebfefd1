/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cudart_device.c — runtime API: device management (count, current device,
 * flags, peer access, reset, synchronise), versions, error names and
 * strings, the per-thread last error, and the shared helpers of the runtime
 * layer (error mapping, the entry check, stream resolution).
 * cudaDeviceSynchronize is cuCtxSynchronize.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cudart_internal.h"

__thread int rt_dev;
__thread cudaError_t rt_last_error;

static pthread_mutex_t dev_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned dev_flags;
static unsigned peer_enabled[SG_MAX_DEVICES]; /* bit p: peer p enabled */

/* ---- helpers ------------------------------------------------------------------ */
cudaError_t rt_err(int st)
{
	switch (st) {
	case SG_OK:
		return cudaSuccess;
	case SG_EINVAL:
		return cudaErrorInvalidValue;
	case SG_ENOMEM:
		return cudaErrorMemoryAllocation;
	case SG_EHANDLE:
		return cudaErrorInvalidResourceHandle;
	case SG_ENOTREADY:
		return cudaErrorNotReady;
	case SG_EDEVICE:
		return cudaErrorInvalidDevice;
	case SG_ENODEVICE:
		return cudaErrorNoDevice;
	case SG_EALREADY_REGISTERED:
		return cudaErrorHostMemoryAlreadyRegistered;
	case SG_ENOT_REGISTERED:
		return cudaErrorHostMemoryNotRegistered;
	case SG_ECAPTURE_UNSUPPORTED:
		return cudaErrorStreamCaptureUnsupported;
	case SG_ECAPTURE_IMPLICIT:
		return cudaErrorStreamCaptureImplicit;
	case SG_ECAPTURE_INVALIDATED:
		return cudaErrorStreamCaptureInvalidated;
	case SG_ECAPTURE_MERGE:
		return cudaErrorStreamCaptureMerge;
	case SG_ECAPTURE_UNMATCHED:
		return cudaErrorStreamCaptureUnmatched;
	case SG_EILLEGAL_STATE:
		return cudaErrorIllegalState;
	case SG_EDIRECTION:
		return cudaErrorInvalidMemcpyDirection;
	case SG_EPITCH:
		return cudaErrorInvalidPitchValue;
	case SG_ECONFIG:
		return cudaErrorInvalidConfiguration;
	default:
		return cudaErrorUnknown;
	}
}

cudaError_t rt_enter(void)
{
	const struct sg_config *c = sg_config();

	sg_call_mark();
	if (__builtin_expect(c->init_error != 0, 0))
		return (cudaError_t)c->init_error;
	if (__builtin_expect(sg_device_count() == 0, 0))
		return cudaErrorNoDevice;
	return rt_driver_load();
}

cudaError_t rt_stream(cudaStream_t h, bool per_thread, struct sg_stream **out)
{
	return rt_err(sg_stream_get(h, per_thread, rt_dev, out));
}

/* ---- errors ---------------------------------------------------------------------- */
const char *rt_errname(cudaError_t e)
{
	switch ((int)e) {
#define RT_ERR_NAME(name, value) \
	case value:              \
		return #name;
		__SIMGPU_CUDA_ERRORS(RT_ERR_NAME)
#undef RT_ERR_NAME
	default:
		return NULL;
	}
}

static const struct {
	cudaError_t e;
	const char *s;
} descriptions[] = {
	{ cudaSuccess, "no error" },
	{ cudaErrorInvalidValue, "invalid argument" },
	{ cudaErrorMemoryAllocation, "out of memory" },
	{ cudaErrorInitializationError, "initialization error" },
	{ cudaErrorInvalidConfiguration, "invalid configuration argument" },
	{ cudaErrorInvalidPitchValue, "invalid pitch argument" },
	{ cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy" },
	{ cudaErrorInsufficientDriver,
	  "CUDA driver version is insufficient for CUDA runtime version" },
	{ cudaErrorInvalidDeviceFunction, "invalid device function" },
	{ cudaErrorNoDevice, "no CUDA-capable device is detected" },
	{ cudaErrorInvalidDevice, "invalid device ordinal" },
	{ cudaErrorInvalidResourceHandle, "invalid resource handle" },
	{ cudaErrorIllegalState, "the operation cannot be performed in the present state" },
	{ cudaErrorNotReady, "device not ready" },
	{ cudaErrorPeerAccessAlreadyEnabled, "peer access is already enabled" },
	{ cudaErrorPeerAccessNotEnabled, "peer access has not been enabled" },
	{ cudaErrorHostMemoryAlreadyRegistered,
	  "part or all of the requested memory range is already mapped" },
	{ cudaErrorHostMemoryNotRegistered,
	  "pointer does not correspond to a registered memory region" },
	{ cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing" },
	{ cudaErrorStreamCaptureInvalidated,
	  "operation failed due to a previous error during capture" },
	{ cudaErrorStreamCaptureImplicit,
	  "operation would make the legacy stream depend on a capturing blocking stream" },
	{ cudaErrorUnknown, "unknown error" },
};

/* "cudaErrorLaunchTimeout" -> "launch timeout", written once per code. */
static char generated[1000][64];

static const char *describe(cudaError_t e)
{
	const char *name = rt_errname(e), *p;
	size_t i, o = 0;
	char *out;

	for (i = 0; i < sizeof(descriptions) / sizeof(descriptions[0]); i++)
		if (descriptions[i].e == e)
			return descriptions[i].s;
	if (!name || (unsigned)e >= 1000)
		return "unrecognized error code";
	out = generated[e];
	if (out[0])
		return out;
	for (p = name + strlen("cudaError"); *p && o < sizeof(generated[0]) - 2; p++) {
		if (isupper((unsigned char)*p) && o)
			out[o++] = ' ';
		out[o++] = (char)tolower((unsigned char)*p);
	}
	out[o] = '\0';
	return out;
}

RT_API const char *cudaGetErrorName(cudaError_t error)
{
	const char *n = rt_errname(error);

	return n ? n : "unrecognized error code";
}

RT_API const char *cudaGetErrorString(cudaError_t error)
{
	return describe(error);
}

RT_API cudaError_t cudaGetLastError(void)
{
	cudaError_t e = rt_last_error;

	rt_last_error = cudaSuccess;
	if (__builtin_expect(sg_log_level != 0, 0))
		sg_log("cudaGetLastError() = %d %s", (int)e, rt_errname(e));
	return e;
}

RT_API cudaError_t cudaPeekAtLastError(void)
{
	cudaError_t e = rt_last_error;

	if (__builtin_expect(sg_log_level != 0, 0))
		sg_log("cudaPeekAtLastError() = %d %s", (int)e, rt_errname(e));
	return e;
}

/* ---- versions ------------------------------------------------------------------ */
RT_API cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
	cudaError_t e = runtimeVersion ? cudaSuccess : cudaErrorInvalidValue;

	if (!e)
		*runtimeVersion = CUDART_VERSION;
	RT_RETURN(e, "");
}

RT_API cudaError_t cudaDriverGetVersion(int *driverVersion)
{
	cudaError_t e = driverVersion ? cudaSuccess : cudaErrorInvalidValue;

	/* no driver (SIMGPU_INIT_ERROR=35): version 0, as the real runtime says */
	if (!e)
		*driverVersion =
			sg_config()->init_error == cudaErrorInsufficientDriver ? 0 : CUDART_VERSION;
	RT_RETURN(e, "");
}

/* ---- devices --------------------------------------------------------------------- */
RT_API cudaError_t cudaGetDeviceCount(int *count)
{
	cudaError_t e = rt_enter();

	if (count)
		*count = e ? 0 : sg_device_count();
	if (!e && !count)
		e = cudaErrorInvalidValue;
	RT_RETURN(e, "count=%d", count ? *count : -1);
}

RT_API cudaError_t cudaGetDevice(int *device)
{
	cudaError_t e = rt_enter();

	if (!e && !device)
		e = cudaErrorInvalidValue;
	if (!e)
		*device = rt_dev;
	RT_RETURN(e, "device=%d", rt_dev);
}

RT_API cudaError_t cudaSetDevice(int device)
{
	cudaError_t e = rt_enter();

	if (!e && (device < 0 || device >= sg_device_count()))
		e = cudaErrorInvalidDevice;
	if (!e)
		rt_dev = device;
	RT_RETURN(e, "device=%d", device);
}

RT_API cudaError_t cudaSetDeviceFlags(unsigned int flags)
{
	cudaError_t e = rt_enter();

	if (!e && (flags & ~(unsigned)cudaDeviceMask))
		e = cudaErrorInvalidValue;
	if (!e) {
		pthread_mutex_lock(&dev_mu);
		dev_flags = flags;
		pthread_mutex_unlock(&dev_mu);
	}
	RT_RETURN(e, "flags=%#x", flags);
}

RT_API cudaError_t cudaGetDeviceFlags(unsigned int *flags)
{
	cudaError_t e = rt_enter();

	if (!e && !flags)
		e = cudaErrorInvalidValue;
	if (!e) {
		pthread_mutex_lock(&dev_mu);
		*flags = dev_flags | cudaDeviceMapHost;
		pthread_mutex_unlock(&dev_mu);
	}
	RT_RETURN(e, "");
}

RT_API cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	cudaError_t e = rt_enter();

	if (!e && leastPriority)
		*leastPriority = 0;
	if (!e && greatestPriority)
		*greatestPriority = -5;
	RT_RETURN(e, "");
}

RT_API cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice)
{
	cudaError_t e = rt_enter();
	int n = sg_device_count();

	if (!e && !canAccessPeer)
		e = cudaErrorInvalidValue;
	if (!e && (device < 0 || device >= n || peerDevice < 0 || peerDevice >= n))
		e = cudaErrorInvalidDevice;
	if (!e)
		*canAccessPeer = device != peerDevice;
	RT_RETURN(e, "device=%d peer=%d", device, peerDevice);
}

RT_API cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags)
{
	cudaError_t e = rt_enter();

	if (!e && flags)
		e = cudaErrorInvalidValue;
	if (!e && (peerDevice < 0 || peerDevice >= sg_device_count() || peerDevice == rt_dev))
		e = cudaErrorInvalidDevice;
	if (!e) {
		pthread_mutex_lock(&dev_mu);
		if (peer_enabled[rt_dev] & (1u << peerDevice))
			e = cudaErrorPeerAccessAlreadyEnabled;
		peer_enabled[rt_dev] |= 1u << peerDevice;
		pthread_mutex_unlock(&dev_mu);
	}
	RT_RETURN(e, "peer=%d", peerDevice);
}

RT_API cudaError_t cudaDeviceDisablePeerAccess(int peerDevice)
{
	cudaError_t e = rt_enter();

	if (!e && (peerDevice < 0 || peerDevice >= sg_device_count()))
		e = cudaErrorInvalidDevice;
	if (!e) {
		pthread_mutex_lock(&dev_mu);
		if (!(peer_enabled[rt_dev] & (1u << peerDevice)))
			e = cudaErrorPeerAccessNotEnabled;
		peer_enabled[rt_dev] &= ~(1u << peerDevice);
		pthread_mutex_unlock(&dev_mu);
	}
	RT_RETURN(e, "peer=%d", peerDevice);
}

RT_API cudaError_t cudaDeviceSynchronize(void)
{
	cudaError_t e = rt_enter_drv();

	if (!e)
		e = rt_direct ? rt_err(sg_device_sync(rt_dev)) : rt_cu(rt_drv.cuCtxSynchronize());
	RT_RETURN(e, "");
}

RT_API cudaError_t cudaDeviceReset(void)
{
	cudaError_t e = rt_enter();

	if (!e) {
		sg_all_sync();
		sg_device_reset_streams(rt_dev);
		sg_mem_reset(rt_dev);
		pthread_mutex_lock(&dev_mu);
		peer_enabled[rt_dev] = 0;
		pthread_mutex_unlock(&dev_mu);
	}
	RT_RETURN(e, "");
}
