/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cudart_launch.c — runtime API: kernel launches (cudaLaunchKernel,
 * cudaLaunchKernelExC, cudaLaunchCooperativeKernel and their _ptsz
 * variants) and the nvcc launch-stub protocol of CUDA 13
 * (__cudaRegisterFatBinary/Function/Var/ManagedVar, __cudaPush/Pop-
 * CallConfiguration, __cudaGetKernel, __cudaLaunchKernel).
 *
 * Kernels: a registry maps both a host function address and the opaque
 * cudaKernel_t handle returned by __cudaGetKernel to one entry holding the
 * kernel's name (the deviceName nvcc registers, else dladdr() of the host
 * function), its modelled duration and its driver function (an sg_func of
 * the model, made without the exported cuModule* calls, as the real runtime
 * loads its modules through hidden entry points). A launch runs no code:
 * cudaLaunchKernel calls cuLaunchKernel with that function (ExC:
 * cuLaunchKernelEx, Cooperative: cuLaunchCooperativeKernel, _ptsz: theirs),
 * which queues a kernel of that duration on the stream.
 *
 * __cudaLaunchKernel is a tail call (push %rbp; mov %rsp,%rbp; pop %rbp;
 * jmp cudaLaunchKernel), as in the real libcudart.so.13: a uprobe on
 * cudaLaunchKernel sees the return address in the caller's launch stub and
 * every launch is counted once.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudart_internal.h"

#define KMAGIC 0x4b53494d47505531ull /* "1UPGMISK" */

struct kernel {
	uint64_t magic;
	const void *hostfun;
	char *name;
	uint64_t dur_ns;
	struct sg_func *func; /* the model's function: the CUfunction of driver launches */
};

/* ---- registry: pointer -> kernel, for host functions and handles ------------- */
struct kslot {
	const void *key;
	struct kernel *k;
};

static pthread_rwlock_t reg_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct kslot *kslots;
static size_t kcap, kused;

static size_t khash(const void *p)
{
	uint64_t k = (uint64_t)(uintptr_t)p;

	k ^= k >> 31;
	k *= 0x9e3779b97f4a7c15ull;
	return (size_t)(k >> 17);
}

static struct kernel *kfind_locked(const void *key)
{
	size_t i;

	if (!kcap)
		return NULL;
	for (i = khash(key) & (kcap - 1); kslots[i].key; i = (i + 1) & (kcap - 1))
		if (kslots[i].key == key)
			return kslots[i].k;
	return NULL;
}

static int kput_locked(const void *key, struct kernel *k)
{
	size_t i;

	if ((kused + 1) * 2 > kcap) {
		size_t nc = kcap ? kcap * 2 : 128, j;
		struct kslot *n = calloc(nc, sizeof(*n));

		if (!n)
			return -1;
		for (j = 0; j < kcap; j++) {
			if (!kslots[j].key)
				continue;
			for (i = khash(kslots[j].key) & (nc - 1); n[i].key; i = (i + 1) & (nc - 1))
				;
			n[i] = kslots[j];
		}
		free(kslots);
		kslots = n;
		kcap = nc;
	}
	for (i = khash(key) & (kcap - 1); kslots[i].key; i = (i + 1) & (kcap - 1))
		if (kslots[i].key == key)
			return 0;
	kslots[i].key = key;
	kslots[i].k = k;
	kused++;
	return 0;
}

/* The entry for a host function, created on first sight (with `name`, or
 * the dynamic symbol that dladdr() finds, or the address). */
static struct kernel *kernel_for(const void *hostfun, const char *name)
{
	struct kernel *k;
	char buf[64];

	pthread_rwlock_rdlock(&reg_lock);
	k = kfind_locked(hostfun);
	pthread_rwlock_unlock(&reg_lock);
	if (k)
		return k;

	if (!name) {
		Dl_info info;

		if (dladdr(hostfun, &info) && info.dli_sname && info.dli_saddr == hostfun) {
			name = info.dli_sname;
		} else {
			snprintf(buf, sizeof(buf), "kernel@%p", hostfun);
			name = buf;
		}
	}
	pthread_rwlock_wrlock(&reg_lock);
	k = kfind_locked(hostfun);
	if (!k && (k = calloc(1, sizeof(*k)))) {
		k->magic = KMAGIC;
		k->hostfun = hostfun;
		k->name = strdup(name);
		k->dur_ns = sg_kernel_ns(name);
		/* like the real runtime's hidden module loading: a driver function
		 * handle made through the model, not through exported cuModule* */
		sg_func_create(name, SG_FUNC_FUNCTION, &k->func);
		if (!k->name || kput_locked(hostfun, k) || kput_locked(k, k)) {
			/* keep it alive: a half-registered entry may be in the table */
			k->name = k->name ? k->name : (char *)"kernel";
		}
	}
	pthread_rwlock_unlock(&reg_lock);
	return k;
}

/* func is either a host function or a handle from __cudaGetKernel. */
static struct kernel *resolve(const void *func)
{
	struct kernel *k;

	pthread_rwlock_rdlock(&reg_lock);
	k = kfind_locked(func);
	pthread_rwlock_unlock(&reg_lock);
	return k ? k : kernel_for(func, NULL);
}

/* ---- launches ---------------------------------------------------------------------- */
enum launch_how { PLAIN, COOPERATIVE };

static cudaError_t launch(const void *func, dim3 g, dim3 b, void **args, size_t smem,
			  cudaStream_t h, bool per_thread, enum launch_how how, const char **name)
{
	const unsigned grid[3] = { g.x, g.y, g.z }, block[3] = { b.x, b.y, b.z };
	struct sg_target t = rt_target(h, per_thread, false);
	const struct rt_driver *D = &rt_drv;
	struct kernel *k;
	cudaError_t e;

	*name = NULL;
	e = rt_enter_drv();
	if (e)
		return e;
	if (!func)
		return cudaErrorInvalidDeviceFunction;
	k = resolve(func);
	if (!k || !k->func)
		return cudaErrorMemoryAllocation;
	*name = k->name;
	/* the host-side launch cost (SIMGPU_LAUNCH_US) is spent by whichever
	 * layer queues the kernel: the driver, or the model when direct */
	if (rt_direct)
		return rt_err(sg_launch(&t, k->func, grid, block, smem, NULL));
	e = rt_err(sg_launch_check(grid, block, smem));
	if (e)
		return e;
	if (how == COOPERATIVE)
		return rt_cu((per_thread ? D->cuLaunchCooperativeKernel_ptsz
					 : D->cuLaunchCooperativeKernel)((CUfunction)k->func, g.x,
									 g.y, g.z, b.x, b.y, b.z,
									 (unsigned)smem, h, args));
	return rt_cu((per_thread ? D->cuLaunchKernel_ptsz : D->cuLaunchKernel)(
		(CUfunction)k->func, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)smem, h, args, NULL));
}

#define LAUNCH_FMT "kernel=%s grid=%u,%u,%u block=%u,%u,%u smem=%zu stream=%p"
#define LAUNCH_ARGS(n, g, b, smem, st) \
	(n) ? (n) : "?", (g).x, (g).y, (g).z, (b).x, (b).y, (b).z, (smem), (void *)(st)

/* The four <<<>>>-style entry points differ only in name, which default
 * stream they mean and which driver call they make. */
#define LAUNCH_ENTRY(name, per_thread, how)                                                    \
	RT_API cudaError_t name(const void *func, dim3 gridDim, dim3 blockDim, void **args,    \
				size_t sharedMem, cudaStream_t stream)                         \
	{                                                                                      \
		const char *n;                                                                 \
                                                                                               \
		RT_RETURN(launch(func, gridDim, blockDim, args, sharedMem, stream, per_thread, \
				 how, &n),                                                     \
			  LAUNCH_FMT, LAUNCH_ARGS(n, gridDim, blockDim, sharedMem, stream));   \
	}

LAUNCH_ENTRY(cudaLaunchKernel, false, PLAIN)
LAUNCH_ENTRY(cudaLaunchKernel_ptsz, true, PLAIN)
LAUNCH_ENTRY(cudaLaunchCooperativeKernel, false, COOPERATIVE)
LAUNCH_ENTRY(cudaLaunchCooperativeKernel_ptsz, true, COOPERATIVE)

/* cudaLaunchKernelExC -> cuLaunchKernelEx: the same configuration in the
 * driver's layout (cudaLaunchAttribute and CUlaunchAttribute are one layout). */
static cudaError_t launch_exc(const cudaLaunchConfig_t *cfg, const void *func, void **args,
			      bool per_thread, const char **n)
{
	const unsigned grid[3] = { cfg ? cfg->gridDim.x : 0, cfg ? cfg->gridDim.y : 0,
				   cfg ? cfg->gridDim.z : 0 };
	const unsigned block[3] = { cfg ? cfg->blockDim.x : 0, cfg ? cfg->blockDim.y : 0,
				    cfg ? cfg->blockDim.z : 0 };
	struct sg_target t;
	struct kernel *k;
	CUlaunchConfig c;
	cudaError_t e;

	*n = NULL;
	e = rt_enter_drv();
	if (e)
		return e;
	if (!cfg)
		return cudaErrorInvalidValue;
	if (!func)
		return cudaErrorInvalidDeviceFunction;
	k = resolve(func);
	if (!k || !k->func)
		return cudaErrorMemoryAllocation;
	*n = k->name;
	t = rt_target(cfg->stream, per_thread, false);
	if (rt_direct)
		return rt_err(sg_launch(&t, k->func, grid, block, cfg->dynamicSmemBytes, NULL));
	e = rt_err(sg_launch_check(grid, block, cfg->dynamicSmemBytes));
	if (e)
		return e;
	c = (CUlaunchConfig){
		.gridDimX = grid[0],
		.gridDimY = grid[1],
		.gridDimZ = grid[2],
		.blockDimX = block[0],
		.blockDimY = block[1],
		.blockDimZ = block[2],
		.sharedMemBytes = (unsigned)cfg->dynamicSmemBytes,
		.hStream = cfg->stream,
		.attrs = (CUlaunchAttribute *)(void *)cfg->attrs,
		.numAttrs = cfg->numAttrs,
	};
	return rt_cu((per_thread ? rt_drv.cuLaunchKernelEx_ptsz
				 : rt_drv.cuLaunchKernelEx)(&c, (CUfunction)k->func, args, NULL));
}

static const cudaLaunchConfig_t no_cfg;

RT_API cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func,
				       void **args)
{
	const cudaLaunchConfig_t *c = config ? config : &no_cfg;
	const char *n;

	RT_RETURN(launch_exc(config, func, args, false, &n), LAUNCH_FMT,
		  LAUNCH_ARGS(n, c->gridDim, c->blockDim, c->dynamicSmemBytes, c->stream));
}

RT_API cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func,
					    void **args)
{
	const cudaLaunchConfig_t *c = config ? config : &no_cfg;
	const char *n;

	RT_RETURN(launch_exc(config, func, args, true, &n), LAUNCH_FMT,
		  LAUNCH_ARGS(n, c->gridDim, c->blockDim, c->dynamicSmemBytes, c->stream));
}

/* ---- the nvcc launch-stub protocol ------------------------------------------------------ */
/* Declarations (the toolkit keeps them in crt/host_runtime.h). */
RT_API void **__cudaRegisterFatBinary(void *fatCubin);
RT_API void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
RT_API void __cudaUnregisterFatBinary(void **fatCubinHandle);
RT_API void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
				   const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
				   dim3 *bDim, dim3 *gDim, int *wSize);
RT_API void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
			      const char *deviceName, int ext, size_t size, int constant,
			      int global);
RT_API void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress,
				     char *deviceAddress, const char *deviceName, int ext,
				     size_t size, int constant, int global);
RT_API char __cudaInitModule(void **fatCubinHandle);
RT_API unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
					    struct CUstream_st *stream);
RT_API cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
					      void *stream);
RT_API cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun);

struct fatbin {
	void *cubin;
	int functions;
};

RT_API void **__cudaRegisterFatBinary(void *fatCubin)
{
	struct fatbin *f = calloc(1, sizeof(*f));

	sg_config();
	if (f)
		f->cubin = fatCubin;
	if (__builtin_expect(sg_log_level != 0, 0))
		sg_log("%s(fatCubin=%p) = %p", __func__, fatCubin, (void *)f);
	return (void **)f;
}

RT_API void __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
	RT_FRAME();
	(void)fatCubinHandle;
}

RT_API void __cudaUnregisterFatBinary(void **fatCubinHandle)
{
	/* kernel entries stay: captured graphs and logs may still name them */
	RT_FRAME();
	free(fatCubinHandle);
}

RT_API void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
				   const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
				   dim3 *bDim, dim3 *gDim, int *wSize)
{
	struct kernel *k = kernel_for(hostFun, deviceName ? deviceName : deviceFun);

	(void)thread_limit, (void)tid, (void)bid, (void)bDim, (void)gDim, (void)wSize;
	if (fatCubinHandle)
		((struct fatbin *)fatCubinHandle)->functions++;
	if (__builtin_expect(sg_log_level != 0, 0))
		sg_log("%s(hostFun=%p deviceName=%s) duration_ns=%llu", __func__,
		       (const void *)hostFun, k ? k->name : "?",
		       k ? (unsigned long long)k->dur_ns : 0ull);
}

RT_API void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
			      const char *deviceName, int ext, size_t size, int constant,
			      int global)
{
	/* device variables live in the host shadow nvcc already allocated */
	RT_FRAME();
	(void)fatCubinHandle, (void)hostVar, (void)deviceAddress, (void)deviceName;
	(void)ext, (void)size, (void)constant, (void)global;
}

RT_API void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress,
				     char *deviceAddress, const char *deviceName, int ext,
				     size_t size, int constant, int global)
{
	void *p = NULL;

	(void)fatCubinHandle, (void)deviceAddress, (void)deviceName, (void)ext, (void)constant,
		(void)global;
	if (!hostVarPtrAddress)
		return;
	/* host code reaches a __managed__ variable through this pointer */
	/* (a static constructor: the model only, the driver is loaded later) */
	if (sg_config()->init_error || !sg_device_count() ||
	    sg_mem_alloc(0, size ? size : 1, SG_MEM_MANAGED, cudaMemAttachGlobal, &p))
		p = calloc(1, size ? size : 1);
	*hostVarPtrAddress = p;
}

RT_API char __cudaInitModule(void **fatCubinHandle)
{
	RT_FRAME();
	(void)fatCubinHandle;
	return 1;
}

/* Launch configurations pushed by <<<...>>>, per host thread. */
struct call_config {
	dim3 grid, block;
	size_t smem;
	struct CUstream_st *stream;
};
static __thread struct call_config cfg_stack[16];
static __thread unsigned cfg_depth;

RT_API unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
					    struct CUstream_st *stream)
{
	if (cfg_depth >= sizeof(cfg_stack) / sizeof(cfg_stack[0]))
		return 1;
	cfg_stack[cfg_depth++] = (struct call_config){ gridDim, blockDim, sharedMem, stream };
	return 0;
}

RT_API cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
					      void *stream)
{
	struct call_config *c;

	if (!cfg_depth)
		return cudaErrorMissingConfiguration;
	c = &cfg_stack[--cfg_depth];
	*gridDim = c->grid;
	*blockDim = c->block;
	*sharedMem = c->smem;
	*(cudaStream_t *)stream = c->stream;
	return cudaSuccess;
}

RT_API cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun)
{
	struct kernel *k;
	cudaError_t e = cudaSuccess;

	if (!kernel || !hostFun)
		e = cudaErrorInvalidValue;
	else if (!(k = kernel_for(hostFun, NULL)))
		e = cudaErrorMemoryAllocation;
	else
		*kernel = (cudaKernel_t)k;
	RT_RETURN(e, "hostFun=%p kernel=%p", hostFun, !e ? (void *)*kernel : NULL);
}

/* __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void **, size_t, cudaStream_t)
 * and its _ptsz twin: a frame that is torn down at once, then a jump, so the
 * arguments (registers and the two stack slots) reach cudaLaunchKernel
 * untouched and it returns straight to the launch stub. */
#define TRAMPOLINE(from, to)            \
	".globl " from "\n"             \
	".type " from ", @function\n"   \
	".p2align 4\n" from ":\n"       \
	"	.cfi_startproc\n"             \
	"	pushq %rbp\n"                 \
	"	.cfi_def_cfa_offset 16\n"     \
	"	.cfi_offset %rbp, -16\n"      \
	"	movq %rsp, %rbp\n"            \
	"	.cfi_def_cfa_register %rbp\n" \
	"	popq %rbp\n"                  \
	"	.cfi_def_cfa %rsp, 8\n"       \
	"	jmp " to "@PLT\n"       \
	"	.cfi_endproc\n"               \
	".size " from ", .-" from "\n"

__asm__(".text\n" TRAMPOLINE("__cudaLaunchKernel", "cudaLaunchKernel")
		TRAMPOLINE("__cudaLaunchKernel_ptsz", "cudaLaunchKernel_ptsz"));
