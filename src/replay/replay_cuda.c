/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* replay_cuda.c — loading the CUDA runtime and driver for the replay (replay_cuda.h). */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "replay/replay_cuda.h"

static const char *const runtimes[] = { "libcudart.so.13", "libcudart.so.12", "libcudart.so" };

#define SYM(lib, name, required)                                                       \
	do {                                                                           \
		*(void **)&c->name = dlsym(c->lib, #name);                             \
		if ((required) && !c->name) {                                          \
			snprintf(errmsg, errlen, "%s has no %s",                       \
				 #lib[0] == 'r' ? c->rt_name : "libcuda.so.1", #name); \
			goto fail;                                                     \
		}                                                                      \
	} while (0)

int gp_cuda_open(struct gp_cuda *c, char *errmsg, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < sizeof(runtimes) / sizeof(runtimes[0]) && !c->rt; i++) {
		c->rt = dlopen(runtimes[i], RTLD_NOW | RTLD_LOCAL);
		if (c->rt)
			snprintf(c->rt_name, sizeof(c->rt_name), "%s", runtimes[i]);
	}
	if (!c->rt) {
		snprintf(
			errmsg, errlen,
			"no CUDA runtime: none of libcudart.so.13, libcudart.so.12, libcudart.so could be loaded "
			"(set LD_LIBRARY_PATH to the directory that holds one)");
		return -ENOENT;
	}
	c->drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!c->drv) {
		snprintf(errmsg, errlen, "no CUDA driver: libcuda.so.1 could not be loaded (%s)",
			 dlerror());
		goto fail;
	}
	SYM(rt, cudaSetDevice, 1);
	SYM(rt, cudaMalloc, 1);
	SYM(rt, cudaMallocManaged, 1);
	SYM(rt, cudaMallocHost, 1);
	SYM(rt, cudaMallocAsync, 0);
	SYM(rt, cudaFree, 1);
	SYM(rt, cudaFreeAsync, 0);
	SYM(rt, cudaFreeHost, 1);
	SYM(rt, cudaHostRegister, 1);
	SYM(rt, cudaHostUnregister, 1);
	SYM(rt, cudaMemcpy, 1);
	SYM(rt, cudaMemcpy_ptds, 0);
	SYM(rt, cudaMemcpyAsync, 1);
	SYM(rt, cudaMemset, 1);
	SYM(rt, cudaMemset_ptds, 0);
	SYM(rt, cudaMemsetAsync, 1);
	SYM(rt, cudaStreamCreateWithFlags, 1);
	SYM(rt, cudaStreamDestroy, 1);
	SYM(rt, cudaStreamSynchronize, 1);
	SYM(rt, cudaStreamWaitEvent, 1);
	SYM(rt, cudaEventCreateWithFlags, 1);
	SYM(rt, cudaEventRecord, 1);
	SYM(rt, cudaEventSynchronize, 1);
	SYM(rt, cudaEventDestroy, 1);
	SYM(rt, cudaDeviceSynchronize, 1);
	SYM(rt, cudaGetErrorString, 1);
	SYM(drv, cuInit, 1);
	SYM(drv, cuDeviceGet, 1);
	SYM(drv, cuDevicePrimaryCtxRetain, 1);
	SYM(drv, cuCtxSetCurrent, 1);
	SYM(drv, cuModuleLoadData, 1);
	SYM(drv, cuModuleGetFunction, 1);
	SYM(drv, cuModuleUnload, 1);
	SYM(drv, cuLaunchKernel, 1);
	return 0;
fail:
	gp_cuda_close(c);
	return -ENOENT;
}

void gp_cuda_close(struct gp_cuda *c)
{
	/* the runtime keeps threads and atexit handlers: it stays loaded, like in any CUDA program */
	memset(c, 0, sizeof(*c));
}

const char *gp_cuda_error(const struct gp_cuda *c, int err)
{
	const char *s = c->cudaGetErrorString ? c->cudaGetErrorString(err) : NULL;

	return s ? s : "unknown error";
}

int gp_cuda_bind_thread(const struct gp_cuda *c, int device)
{
	void *ctx = NULL;
	int dev = 0, rc;

	if ((rc = c->cuInit(0)) || (rc = c->cuDeviceGet(&dev, device)) ||
	    (rc = c->cuDevicePrimaryCtxRetain(&ctx, dev)))
		return rc;
	return c->cuCtxSetCurrent(ctx);
}
