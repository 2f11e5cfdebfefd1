/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cuda_context.c — driver API: devices (count, ordinal, name, memory,
 * attributes) and contexts: each device's primary context (retained and
 * released, active while retained), created contexts, and the calling
 * thread's context stack, whose top is the current context every call
 * that needs one uses (cuCtxSetCurrent replaces it, cuCtxPush/PopCurrent
 * push and pop, cuCtxCreate pushes). cuCtxSynchronize waits for all work of
 * the current context's device.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "gpu_board.h"

#define STACK_MAX 64

__thread struct cu_ctx *cu_cur;
static __thread struct cu_ctx *stack[STACK_MAX];
static __thread int depth;

static pthread_mutex_t ctx_mu = PTHREAD_MUTEX_INITIALIZER;
static struct cu_ctx primary[SG_MAX_DEVICES];
static struct cu_ctx *created; /* every created context, destroyed ones too */

bool cu_ctx_valid(const struct cu_ctx *c)
{
	const struct cu_ctx *p;
	bool ok = false;

	if (!c)
		return false;
	if (c >= primary && c < primary + SG_MAX_DEVICES)
		return c->dev < sg_device_count() &&
		       ((uintptr_t)c - (uintptr_t)primary) % sizeof(*c) == 0;
	pthread_mutex_lock(&ctx_mu);
	for (p = created; p; p = p->next)
		if (p == c) {
			ok = !p->destroyed;
			break;
		}
	pthread_mutex_unlock(&ctx_mu);
	return ok;
}

CUresult cu_ctx_unusable(const struct cu_ctx *c)
{
	if (c && c->destroyed)
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	return CUDA_ERROR_INVALID_CONTEXT;
}

static void set_top(struct cu_ctx *c)
{
	if (!depth)
		depth = 1;
	stack[depth - 1] = c;
	cu_cur = c;
}

static int push(struct cu_ctx *c)
{
	if (depth == STACK_MAX)
		return -1;
	stack[depth++] = c;
	cu_cur = c;
	return 0;
}

static struct cu_ctx *pop(void)
{
	struct cu_ctx *c = depth ? stack[--depth] : NULL;

	cu_cur = depth ? stack[depth - 1] : NULL;
	return c;
}

static bool device_ok(CUdevice dev)
{
	return dev >= 0 && dev < sg_device_count();
}

/* ---- devices ------------------------------------------------------------------------- */
CU_API CUresult cuDeviceGetCount(int *count)
{
	CUresult r = cu_enter();

	if (!r && !count)
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r)
		*count = sg_device_count();
	CU_RETURN(r, "count=%d", !r ? *count : -1);
}

CU_API CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	CUresult r = cu_enter();

	if (!r && !device)
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r && !device_ok(ordinal))
		r = CUDA_ERROR_INVALID_DEVICE;
	if (!r)
		*device = ordinal;
	CU_RETURN(r, "ordinal=%d", ordinal);
}

CU_API CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	CUresult r = cu_enter();

	if (!r && (!name || len <= 0))
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r && !device_ok(dev))
		r = CUDA_ERROR_INVALID_DEVICE;
	if (!r)
		snprintf(name, (size_t)len, "simgpu simulated GPU %d", dev);
	CU_RETURN(r, "dev=%d", dev);
}

CU_API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	size_t fr = 0, tot = 0;
	CUresult r = cu_enter();

	if (!r && !bytes)
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r && !device_ok(dev))
		r = CUDA_ERROR_INVALID_DEVICE;
	if (!r) {
		sg_mem_info(dev, &fr, &tot);
		*bytes = tot;
	}
	CU_RETURN(r, "dev=%d bytes=%zu", dev, tot);
}

/* An H100-like device: the limits the launch checks use, and the features the
 * simulator provides (unified addressing, managed memory, VMM, memory pools). */
static int attribute(CUdevice_attribute a, CUdevice dev)
{
	switch (a) {
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
		return 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
		return 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
		return 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
		return 64;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
		return 0x7fffffff;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
		return 65535;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
		return 65535;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
		return 48 * 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
		return 227 * 1024;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
		return 32;
	case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
		return 1755000;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
		return 132;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
		return 2048;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
		return 0x10 + dev;
	case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
		return 5120;
	case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
		return 50 * 1024 * 1024;
	case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
		return 3;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
		return 9;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
		return 0;
	case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
	case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
	case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
	case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
		return 1;
	default:
		return 0;
	}
}

CU_API CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	CUresult r = cu_enter();

	if (!r && (!pi || (int)attrib < 1 || attrib >= CU_DEVICE_ATTRIBUTE_MAX))
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r && !device_ok(dev))
		r = CUDA_ERROR_INVALID_DEVICE;
	if (!r)
		*pi = attribute(attrib, dev);
	CU_RETURN(r, "attrib=%d dev=%d value=%d", (int)attrib, dev, !r ? *pi : 0);
}

/* ---- primary contexts ------------------------------------------------------------------- */
CU_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	CUresult r = cu_enter();

	if (!r && !pctx)
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r && !device_ok(dev))
		r = CUDA_ERROR_INVALID_DEVICE;
	if (!r) {
		pthread_mutex_lock(&ctx_mu);
		primary[dev].magic = CU_CTX_MAGIC;
		primary[dev].dev = dev;
		primary[dev].primary = true;
		__atomic_add_fetch(&primary[dev].refs, 1, __ATOMIC_RELAXED);
		sg_board_context(dev);
		pthread_mutex_unlock(&ctx_mu);
		*pctx = (CUcontext)&primary[dev];
	}
	CU_RETURN(r, "dev=%d ctx=%p", dev, !r ? (void *)*pctx : NULL);
}

static CUresult primary_release(CUdevice dev)
{
	CUresult r = cu_enter();

	if (!r && !device_ok(dev))
		r = CUDA_ERROR_INVALID_DEVICE;
	if (!r) {
		pthread_mutex_lock(&ctx_mu);
		if (primary[dev].refs > 0)
			__atomic_sub_fetch(&primary[dev].refs, 1, __ATOMIC_RELAXED);
		else
			r = CUDA_ERROR_INVALID_CONTEXT;
		pthread_mutex_unlock(&ctx_mu);
	}
	return r;
}

CU_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	CU_RETURN(primary_release(dev), "dev=%d", dev);
}

#undef cuDevicePrimaryCtxRelease
CU_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev);
CU_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	CU_RETURN(primary_release(dev), "dev=%d", dev);
}

/* ---- created contexts --------------------------------------------------------------------- */
static CUresult create(CUcontext *pctx, unsigned flags, CUdevice dev)
{
	struct cu_ctx *c;
	CUresult r = cu_enter();

	if (r)
		return r;
	if (!pctx || (flags & ~(unsigned)CU_CTX_FLAGS_MASK))
		return CUDA_ERROR_INVALID_VALUE;
	if (!device_ok(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	if (depth == STACK_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c = calloc(1, sizeof(*c));
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->magic = CU_CTX_MAGIC;
	c->dev = dev;
	c->flags = flags;
	pthread_mutex_lock(&ctx_mu);
	c->next = created;
	created = c;
	pthread_mutex_unlock(&ctx_mu);
	push(c);
	*pctx = (CUcontext)c;
	sg_board_context(dev); /* NVML lists the process on the device from now on */
	return CUDA_SUCCESS;
}

CU_API CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	CUresult r = create(pctx, flags, dev);

	CU_RETURN(r, "flags=%#x dev=%d ctx=%p", flags, dev, !r ? (void *)*pctx : NULL);
}

CU_API CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
			       unsigned int flags, CUdevice dev)
{
	CUresult r = create(pctx, flags, dev);

	CU_RETURN(r, "params=%p flags=%#x dev=%d ctx=%p", (void *)ctxCreateParams, flags, dev,
		  !r ? (void *)*pctx : NULL);
}

CU_API CUresult cuCtxDestroy_v2(CUcontext ctx)
{
	struct cu_ctx *c = (struct cu_ctx *)ctx;
	CUresult r = cu_enter();

	if (!r && !ctx)
		r = CUDA_ERROR_INVALID_VALUE;
	else if (!r && (!cu_ctx_valid(c) || c->primary))
		r = CUDA_ERROR_INVALID_CONTEXT;
	if (!r) {
		pthread_mutex_lock(&ctx_mu);
		c->destroyed = true;
		pthread_mutex_unlock(&ctx_mu);
		if (cu_cur == c)
			pop();
	}
	CU_RETURN(r, "ctx=%p", (void *)ctx);
}

/* ---- the current context ------------------------------------------------------------------- */
CU_API CUresult cuCtxSetCurrent(CUcontext ctx)
{
	CUresult r = cu_enter();

	if (!r && ctx && !cu_ctx_valid((struct cu_ctx *)ctx))
		r = CUDA_ERROR_INVALID_CONTEXT;
	if (!r)
		set_top((struct cu_ctx *)ctx);
	CU_RETURN(r, "ctx=%p", (void *)ctx);
}

CU_API CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	CUresult r = cu_enter();

	if (!r && !pctx)
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r)
		*pctx = (CUcontext)cu_cur;
	CU_RETURN(r, "ctx=%p", (void *)cu_cur);
}

CU_API CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
	CUresult r = cu_enter();

	if (!r && !cu_ctx_valid((struct cu_ctx *)ctx))
		r = CUDA_ERROR_INVALID_CONTEXT;
	if (!r && push((struct cu_ctx *)ctx))
		r = CUDA_ERROR_OUT_OF_MEMORY;
	CU_RETURN(r, "ctx=%p", (void *)ctx);
}

CU_API CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
	struct cu_ctx *c = NULL;
	CUresult r = cu_enter();

	if (!r && !depth)
		r = CUDA_ERROR_INVALID_CONTEXT;
	if (!r)
		c = pop();
	if (!r && pctx)
		*pctx = (CUcontext)c;
	CU_RETURN(r, "ctx=%p", (void *)c);
}

CU_API CUresult cuCtxGetDevice(CUdevice *device)
{
	int dev = -1;
	CUresult r = cu_enter_ctx(&dev);

	if (!r && !device)
		r = CUDA_ERROR_INVALID_VALUE;
	if (!r)
		*device = dev;
	CU_RETURN(r, "device=%d", dev);
}

CU_API CUresult cuCtxSynchronize(void)
{
	int dev;
	CUresult r = cu_enter_ctx(&dev);

	if (!r)
		r = cu_err(sg_device_sync(dev));
	CU_RETURN(r, "");
}
