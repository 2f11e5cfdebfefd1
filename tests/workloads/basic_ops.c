/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * basic_ops — one thread that uses every traced runtime API at least once,
 * with exactly known counts, bytes, error codes and leftovers:
 *   allocations of every kind (device, async, managed, pinned, registered),
 *   copies in every direction from pageable, pinned, registered and managed
 *   memory, sync and async, 1D/2D/peer, cudaMemcpyDefault resolved by the
 *   pointers; memsets; kernel launches (plain, ExC, cooperative, graphs);
 *   streams and events; failing calls with known error codes; allocations
 *   left live at exit (leaks).
 * Runs against the simulated GPU (exact reference) or the real libcudart
 * (every call fails: the reference then holds the calls and error codes).
 */
#include <sys/mman.h>

#include "wl.h"

#define MiB (1024ull * 1024ull)

/* "Kernels": host functions whose addresses are launched (gcc builds have no stubs). */
__attribute__((noinline)) void vector_add(float *a, const float *b, int n)
{
	for (int i = 0; i < n; i++)
		a[i] += b[i];
}

__attribute__((noinline)) void reduce_sum(float *out, const float *in, int n)
{
	float s = 0;

	for (int i = 0; i < n; i++)
		s += in[i];
	*out = s;
}

__attribute__((noinline)) void graph_step(float *a)
{
	a[0] = 0;
}

static void launch(const void *fn, const char *name, dim3 grid, dim3 block, size_t smem,
		   cudaStream_t stream, void **args)
{
	if (WL(cudaLaunchKernel, fn, grid, block, args, smem, stream) == cudaSuccess) {
		wl_launched(name);
		wl_stream_work(stream, false, WL_KERNEL, 0);
	}
}

/* A successful copy: its transfer row, and the stream it went to (NULL: synchronous). */
static void copied(const char *direction, const char *host_memory, unsigned long long bytes,
		   cudaStream_t s, bool sync)
{
	wl_transfer(direction, host_memory, sync, bytes);
	wl_stream_work(s, false, WL_COPY, bytes);
}

static void *pre_alloc; /* allocated before attach (--pre), freed while traced */

int main(int argc, char **argv)
{
	void *d_a = NULL, *d_b = NULL, *d_async = NULL, *managed = NULL, *pinned = NULL;
	void *pinned2 = NULL, *leak1 = NULL, *leak2 = NULL, *bad = NULL;
	cudaStream_t s1 = NULL, s2 = NULL, s3 = NULL, dead = NULL;
	cudaEvent_t ev = NULL;
	cudaGraph_t graph = NULL;
	cudaGraphExec_t exec = NULL;
	char *pageable, *registered;
	int ndev = 0;

	wl_init(argc, argv);
	if (wl.pre && cudaMalloc(&pre_alloc, 3 * MiB) != cudaSuccess)
		pre_alloc = NULL;
	pageable = malloc(8 * MiB);
	registered =
		mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!pageable || registered == MAP_FAILED)
		wl_die("out of memory");
	memset(pageable, 7, 8 * MiB);
	memset(registered, 9, 4 * MiB);
	cudaGetDeviceCount(&ndev); /* untraced API: not in the reference */

	wl_begin();
	wl_set_device(0);

	/* ---- allocations ---- */
	if (WL(cudaMalloc, &d_a, 4 * MiB) == cudaSuccess)
		wl_allocated(WL_DEVICE, d_a, 4 * MiB);
	if (WL(cudaMalloc, &d_b, 2 * MiB) == cudaSuccess)
		wl_allocated(WL_DEVICE, d_b, 2 * MiB);
	if (WL(cudaMallocManaged, &managed, 1 * MiB, cudaMemAttachGlobal) == cudaSuccess)
		wl_allocated(WL_MANAGED, managed, 1 * MiB);
	if (WL(cudaMallocHost, &pinned, 4 * MiB) == cudaSuccess)
		wl_allocated(WL_PINNED, pinned, 4 * MiB);
	if (WL(cudaHostAlloc, &pinned2, 256 * 1024, cudaHostAllocDefault) == cudaSuccess)
		wl_allocated(WL_PINNED, pinned2, 256 * 1024);
	WL(cudaHostRegister, registered, 4 * MiB, cudaHostRegisterDefault);

	/* ---- streams and events ---- */
	WL(cudaStreamCreate, &s1);
	WL(cudaStreamCreateWithFlags, &s2, cudaStreamNonBlocking);
	WL(cudaStreamCreateWithPriority, &s3, cudaStreamDefault, 0);
	WL(cudaEventCreate, &ev);
	if (WL(cudaMallocAsync, &d_async, 512 * 1024, s1) == cudaSuccess)
		wl_allocated(WL_DEVICE, d_async, 512 * 1024);

	/* ---- synchronous copies ---- */
	if (WL(cudaMemcpy, d_a, pageable, 1 * MiB, cudaMemcpyHostToDevice) == cudaSuccess)
		copied("HtoD", "pageable", 1 * MiB, NULL, true);
	if (WL(cudaMemcpy, d_a, pageable, 3 * MiB, cudaMemcpyHostToDevice) == cudaSuccess)
		copied("HtoD", "pageable", 3 * MiB, NULL, true);
	if (WL(cudaMemcpy, d_a, pinned, 4 * MiB, cudaMemcpyHostToDevice) == cudaSuccess)
		copied("HtoD", "pinned", 4 * MiB, NULL, true);
	if (WL(cudaMemcpy, (char *)pinned + 4096, d_b, 64 * 1024, cudaMemcpyDeviceToHost) ==
	    cudaSuccess)
		copied("DtoH", "pinned", 64 * 1024, NULL, true);
	if (WL(cudaMemcpy, pageable, d_b, 2 * MiB, cudaMemcpyDeviceToHost) == cudaSuccess)
		copied("DtoH", "pageable", 2 * MiB, NULL, true);
	if (WL(cudaMemcpy, d_b, d_a, 2 * MiB, cudaMemcpyDeviceToDevice) == cudaSuccess)
		copied("DtoD", "device", 2 * MiB, NULL, true);
	/* registered host memory counts as pinned, inside the range too */
	if (WL(cudaMemcpy, d_a, registered + 8192, 1 * MiB, cudaMemcpyHostToDevice) == cudaSuccess)
		copied("HtoD", "pinned", 1 * MiB, NULL, true);
	/* managed memory on the host side */
	if (WL(cudaMemcpy, d_b, managed, 512 * 1024, cudaMemcpyHostToDevice) == cudaSuccess)
		copied("HtoD", "managed", 512 * 1024, NULL, true);
	/* cudaMemcpyDefault: the direction comes from the pointers */
	if (WL(cudaMemcpy, d_b, pinned, 100000, cudaMemcpyDefault) == cudaSuccess)
		copied("HtoD", "pinned", 100000, NULL, true);
	if (WL(cudaMemcpy, pageable, d_a, 12345, cudaMemcpyDefault) == cudaSuccess)
		copied("DtoH", "pageable", 12345, NULL, true);
	/* 2D: width x height bytes move */
	if (WL(cudaMemcpy2D, d_a, 1024, pageable, 2048, 1000, 300, cudaMemcpyHostToDevice) ==
	    cudaSuccess)
		copied("HtoD", "pageable", 1000ull * 300, NULL, true);

	/* ---- asynchronous copies on streams ---- */
	for (int i = 0; i < 5; i++)
		if (WL(cudaMemcpyAsync, d_a, pinned, 256 * 1024, cudaMemcpyHostToDevice, s1) ==
		    cudaSuccess)
			copied("HtoD", "pinned", 256 * 1024, s1, false);
	for (int i = 0; i < 3; i++)
		if (WL(cudaMemcpyAsync, pageable, d_b, 4096 * (i + 1), cudaMemcpyDeviceToHost,
		       s2) == cudaSuccess)
			copied("DtoH", "pageable", 4096ull * (i + 1), s2, false);
	if (WL(cudaMemcpy2DAsync, pinned, 512, d_b, 512, 500, 100, cudaMemcpyDeviceToHost, s1) ==
	    cudaSuccess)
		copied("DtoH", "pinned", 500ull * 100, s1, false);

	/* ---- memsets ---- */
	if (WL(cudaMemset, d_a, 0, 4 * MiB) == cudaSuccess) {
		wl_memset(4 * MiB);
		wl_stream_work(NULL, false, WL_MEMSET, 4 * MiB);
	}
	if (WL(cudaMemsetAsync, d_b, 1, 1 * MiB, s1) == cudaSuccess) {
		wl_memset(1 * MiB);
		wl_stream_work(s1, false, WL_MEMSET, 1 * MiB);
	}

	/* ---- kernels ---- */
	{
		int n = 1024;
		float *pa = d_a, *pb = d_b;
		void *args[] = { &pa, &pb, &n };
		cudaLaunchConfig_t cfg;

		for (int i = 0; i < 7; i++)
			launch((const void *)vector_add, "vector_add", (dim3){ 128, 2, 1 },
			       (dim3){ 256, 1, 1 }, 0, s1, args);
		for (int i = 0; i < 4; i++)
			launch((const void *)reduce_sum, "reduce_sum", (dim3){ 64, 1, 1 },
			       (dim3){ 512, 1, 1 }, 4096, s2, args);
		memset(&cfg, 0, sizeof(cfg));
		cfg.gridDim = (dim3){ 16, 8, 2 };
		cfg.blockDim = (dim3){ 32, 4, 2 };
		cfg.dynamicSmemBytes = 1024;
		cfg.stream = s3;
		if (WL(cudaLaunchKernelExC, &cfg, (const void *)vector_add, args) == cudaSuccess) {
			wl_launched("vector_add");
			wl_stream_work(s3, false, WL_KERNEL, 0);
		}
		if (WL(cudaLaunchCooperativeKernel, (const void *)reduce_sum, (dim3){ 8, 1, 1 },
		       (dim3){ 128, 1, 1 }, args, 0, s1) == cudaSuccess) {
			wl_launched("reduce_sum");
			wl_stream_work(s1, false, WL_KERNEL, 0);
		}
	}

	/* ---- graph: capture two launches, replay twice ---- */
	if (cudaStreamBeginCapture(s3, cudaStreamCaptureModeGlobal) == cudaSuccess) {
		float *pa = d_a;
		void *args[] = { &pa };

		launch((const void *)graph_step, "graph_step", (dim3){ 1, 1, 1 },
		       (dim3){ 32, 1, 1 }, 0, s3, args);
		launch((const void *)graph_step, "graph_step", (dim3){ 1, 1, 1 },
		       (dim3){ 32, 1, 1 }, 0, s3, args);
		if (cudaStreamEndCapture(s3, &graph) == cudaSuccess &&
		    cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess) {
			if (WL(cudaGraphLaunch, exec, s3) == cudaSuccess)
				wl_stream_work(s3, false, WL_GRAPH, 0);
			if (WL(cudaGraphLaunch, exec, s1) == cudaSuccess)
				wl_stream_work(s1, false, WL_GRAPH, 0);
		}
	}

	/* ---- synchronisation ---- */
	WL(cudaEventRecord, ev, s1);
	WL(cudaStreamWaitEvent, s2, ev, 0);
	WL(cudaEventSynchronize, ev);
	WL(cudaStreamSynchronize, s2);
	wl_stream_work(s2, false, WL_SYNC, 0);
	WL(cudaDeviceSynchronize);

	/* ---- failing calls, each with a known error code ---- */
	WL(cudaMalloc, NULL, 16);				   /* 1 invalid value */
	WL(cudaMalloc, &bad, 1ull << 40);			   /* 2 out of memory */
	WL(cudaMemcpy, d_a, pageable, 16, (enum cudaMemcpyKind)7); /* 21 invalid direction */
	WL(cudaFree, (void *)0x1234);				   /* 1 not an allocation */
	WL(cudaSetDevice, 99);					   /* 101 invalid device */
	WL(cudaStreamCreate, &dead);
	WL(cudaStreamDestroy, dead);
	WL(cudaStreamSynchronize, dead);	 /* 400 destroyed stream */
	wl_stream_work(dead, false, WL_SYNC, 0); /* it waited anyway */

	/* ---- frees ---- */
	if (WL(cudaFreeAsync, d_async, s1) == cudaSuccess)
		wl_freed(d_async);
	WL(cudaStreamSynchronize, s1);
	wl_stream_work(s1, false, WL_SYNC, 0);
	if (WL(cudaFree, d_b) == cudaSuccess)
		wl_freed(d_b);
	if (WL(cudaFree, managed) == cudaSuccess)
		wl_freed(managed);
	if (WL(cudaFreeHost, pinned2) == cudaSuccess)
		wl_freed(pinned2);
	WL(cudaHostUnregister, registered);
	/* after unregistering, the same buffer is pageable again */
	if (WL(cudaMemcpy, d_a, registered, 4096, cudaMemcpyHostToDevice) == cudaSuccess)
		copied("HtoD", "pageable", 4096, NULL, true);
	if (pre_alloc && WL(cudaFree, pre_alloc) == cudaSuccess)
		wl_freed_untracked(); /* allocated before attach */

	/* ---- left live: leaks at exit (d_a, pinned, leak1, leak2) ---- */
	if (WL(cudaMalloc, &leak1, 777) == cudaSuccess)
		wl_allocated(WL_DEVICE, leak1, 777);
	if (WL(cudaMalloc, &leak2, 5 * MiB) == cudaSuccess)
		wl_allocated(WL_DEVICE, leak2, 5 * MiB);

	WL(cudaEventDestroy, ev);
	WL(cudaStreamDestroy, s1);
	WL(cudaStreamDestroy, s2);
	WL(cudaStreamDestroy, s3);
	wl_end();
	return 0;
}
