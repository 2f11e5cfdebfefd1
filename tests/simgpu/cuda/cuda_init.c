/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cuda_init.c — driver API: cuInit, the driver version, error names and
 * strings, and the shared helpers of the driver layer (error mapping from
 * the model, the not-initialised path).
 *
 * SIMGPU_INIT_ERROR=N makes cuInit fail (35, the runtime's "no driver",
 * becomes CUDA_ERROR_STUB_LIBRARY: a libcuda without a driver behind it;
 * another value is returned as it is when it names a CUresult, else
 * CUDA_ERROR_UNKNOWN); SIMGPU_DEVICES=0 makes it fail with
 * CUDA_ERROR_NO_DEVICE. As with a real driver, every later call that needs
 * an initialised driver then fails with CUDA_ERROR_NOT_INITIALIZED.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

int cu_initialized;

/* ---- helpers ---------------------------------------------------------------------- */
CUresult cu_err(int st)
{
	switch (st) {
	case SG_OK:
		return CUDA_SUCCESS;
	case SG_EINVAL:
		return CUDA_ERROR_INVALID_VALUE;
	case SG_ENOMEM:
		return CUDA_ERROR_OUT_OF_MEMORY;
	case SG_EHANDLE:
		return CUDA_ERROR_INVALID_HANDLE;
	case SG_ENOTREADY:
		return CUDA_ERROR_NOT_READY;
	case SG_EDEVICE:
		return CUDA_ERROR_INVALID_DEVICE;
	case SG_ENODEVICE:
		return CUDA_ERROR_NO_DEVICE;
	case SG_EALREADY_REGISTERED:
		return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	case SG_ENOT_REGISTERED:
		return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	case SG_ECAPTURE_UNSUPPORTED:
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	case SG_ECAPTURE_IMPLICIT:
		return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
	case SG_ECAPTURE_INVALIDATED:
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	case SG_ECAPTURE_MERGE:
		return CUDA_ERROR_STREAM_CAPTURE_MERGE;
	case SG_ECAPTURE_UNMATCHED:
		return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
	case SG_EILLEGAL_STATE:
		return CUDA_ERROR_ILLEGAL_STATE;
	case SG_EDIRECTION:
	case SG_EPITCH:
	case SG_ECONFIG:
		return CUDA_ERROR_INVALID_VALUE;
	default:
		return CUDA_ERROR_UNKNOWN;
	}
}

const char *cu_errname(CUresult r)
{
	switch ((int)r) {
#define CU_ERR_NAME(name, value) \
	case value:              \
		return #name;
		__SIMGPU_CU_ERRORS(CU_ERR_NAME)
#undef CU_ERR_NAME
	default:
		return NULL;
	}
}

CUresult cu_not_initialized(void)
{
	sg_config(); /* so that SIMGPU_LOG shows calls made before cuInit */
	return CUDA_ERROR_NOT_INITIALIZED;
}

static CUresult init_error(int code)
{
	if (code == 35) /* cudaErrorInsufficientDriver: no driver behind libcuda */
		return CUDA_ERROR_STUB_LIBRARY;
	return cu_errname((CUresult)code) ? (CUresult)code : CUDA_ERROR_UNKNOWN;
}

/* ---- initialisation and version ------------------------------------------------------ */
CU_API CUresult cuInit(unsigned int Flags)
{
	const struct sg_config *c = sg_config();
	CUresult r = CUDA_SUCCESS;

	if (c->init_error)
		r = init_error(c->init_error);
	else if (Flags)
		r = CUDA_ERROR_INVALID_VALUE;
	else if (!sg_device_count())
		r = CUDA_ERROR_NO_DEVICE;
	else
		__atomic_store_n(&cu_initialized, 1, __ATOMIC_RELEASE);
	CU_RETURN(r, "flags=%#x", Flags);
}

CU_API CUresult cuDriverGetVersion(int *driverVersion)
{
	CUresult r = driverVersion ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;

	sg_config();
	if (!r)
		*driverVersion = CUDA_VERSION;
	CU_RETURN(r, "version=%d", driverVersion ? *driverVersion : -1);
}

/* ---- error names and strings ----------------------------------------------------------- */
static const struct {
	CUresult r;
	const char *s;
} descriptions[] = {
	{ CUDA_SUCCESS, "no error" },
	{ CUDA_ERROR_INVALID_VALUE, "invalid argument" },
	{ CUDA_ERROR_OUT_OF_MEMORY, "out of memory" },
	{ CUDA_ERROR_NOT_INITIALIZED, "initialization error" },
	{ CUDA_ERROR_DEINITIALIZED, "driver shutting down" },
	{ CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library" },
	{ CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected" },
	{ CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal" },
	{ CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid" },
	{ CUDA_ERROR_INVALID_CONTEXT, "invalid device context" },
	{ CUDA_ERROR_FILE_NOT_FOUND, "file not found" },
	{ CUDA_ERROR_INVALID_HANDLE, "invalid resource handle" },
	{ CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state" },
	{ CUDA_ERROR_NOT_FOUND, "named symbol not found" },
	{ CUDA_ERROR_NOT_READY, "device not ready" },
	{ CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed" },
	{ CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
	  "part or all of the requested memory range is already mapped" },
	{ CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
	  "pointer does not correspond to a registered memory region" },
	{ CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
	  "operation not permitted when stream is capturing" },
	{ CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
	  "operation failed due to a previous error during capture" },
	{ CUDA_ERROR_UNKNOWN, "unknown error" },
};

/* "CUDA_ERROR_LAUNCH_TIMEOUT" -> "launch timeout", written once per code. */
static char generated[1000][64];

CU_API CUresult cuGetErrorName(CUresult error, const char **pStr)
{
	const char *n = cu_errname(error);
	CUresult r = CUDA_SUCCESS;

	if (!pStr)
		r = CUDA_ERROR_INVALID_VALUE;
	else if (!n)
		r = CUDA_ERROR_INVALID_VALUE, *pStr = NULL;
	else
		*pStr = n;
	CU_RETURN(r, "error=%d", (int)error);
}

CU_API CUresult cuGetErrorString(CUresult error, const char **pStr)
{
	const char *n = cu_errname(error), *p, *s = NULL;
	CUresult r = CUDA_SUCCESS;
	size_t i, o = 0;

	for (i = 0; n && i < sizeof(descriptions) / sizeof(descriptions[0]); i++)
		if (descriptions[i].r == error)
			s = descriptions[i].s;
	if (n && !s && (unsigned)error < 1000) {
		char *out = generated[error];

		if (!out[0]) {
			for (p = n + strlen("CUDA_ERROR_"); *p && o < sizeof(generated[0]) - 1; p++)
				out[o++] = *p == '_' ? ' ' : (char)tolower((unsigned char)*p);
			out[o] = '\0';
		}
		s = out;
	}
	if (!pStr)
		r = CUDA_ERROR_INVALID_VALUE;
	else if (!s)
		r = CUDA_ERROR_INVALID_VALUE, *pStr = NULL;
	else
		*pStr = s;
	CU_RETURN(r, "error=%d", (int)error);
}
