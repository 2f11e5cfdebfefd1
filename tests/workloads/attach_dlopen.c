/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * attach_dlopen — a process that has no CUDA library mapped when the tracer
 * attaches, and loads one afterwards, as Python frameworks do: it is not
 * linked to libcudart at all, waits (--wait) before the dlopen, then calls
 * the runtime only through dlsym'd pointers, with exactly known counts. The
 * tracer must notice the new mapping and trace these calls.
 *
 * usage: attach_dlopen [--lib PATH] [--ref FILE] [--wait] [--hold]
 *   --lib PATH   the libcudart to dlopen (default "libcudart.so.13", which
 *                the RUNPATH $ORIGIN/../simgpu finds: the simulator's)
 * stdout: [READY <pid>], LOADED <path of the library as mapped>, DONE
 */
#define WL_RUNTIME_DLOPEN
#include <dlfcn.h>
#include <link.h>

#include "wl.h"

#define KiB 1024ull

/* The runtime entry points this workload calls, each under its API's name. */
static struct {
	__typeof__(cudaSetDevice) *cudaSetDevice;
	__typeof__(cudaMalloc) *cudaMalloc;
	__typeof__(cudaFree) *cudaFree;
	__typeof__(cudaMemcpy) *cudaMemcpy;
	__typeof__(cudaLaunchKernel) *cudaLaunchKernel;
	__typeof__(cudaDeviceSynchronize) *cudaDeviceSynchronize;
} rt;

/* RT(cudaMalloc, &p, n): call through the resolved pointer, count it under the API's name. */
#define RT(fn, ...)	 wl_count(#fn, rt.fn(__VA_ARGS__))
#define RESOLVE(lib, fn) (rt.fn = (__typeof__(rt.fn))resolve(lib, #fn))

/* "Kernels": host functions whose addresses are launched (named by dladdr, hence -rdynamic). */
__attribute__((noinline)) void dl_scale(float *a, int n)
{
	for (int i = 0; i < n; i++)
		a[i] *= 2;
}

__attribute__((noinline)) void dl_reduce(float *out, const float *in, int n)
{
	float s = 0;

	for (int i = 0; i < n; i++)
		s += in[i];
	*out = s;
}

static void *resolve(void *lib, const char *name)
{
	void *sym = dlsym(lib, name);

	if (!sym)
		wl_die("dlsym %s: %s", name, dlerror());
	return sym;
}

static void launch(const void *fn, const char *name, unsigned grid, void **args)
{
	if (RT(cudaLaunchKernel, fn, (dim3){ grid, 1, 1 }, (dim3){ 128, 1, 1 }, args, 0, NULL) ==
	    cudaSuccess) {
		wl_launched(name);
		wl_stream_work(NULL, false, WL_KERNEL, 0);
	}
}

/* A synchronous copy between pageable host memory and the device. */
static void copy(void *dst, const void *src, unsigned long long bytes, enum cudaMemcpyKind kind)
{
	if (RT(cudaMemcpy, dst, src, bytes, kind) == cudaSuccess) {
		wl_transfer(kind == cudaMemcpyHostToDevice ? "HtoD" : "DtoH", "pageable", true,
			    bytes);
		wl_stream_work(NULL, false, WL_COPY, bytes);
	}
}

int main(int argc, char **argv)
{
	const char *lib_path = "libcudart.so.13";
	struct link_map *map = NULL;
	void *lib, *d_a = NULL, *d_b = NULL, *d_c = NULL;
	char *host;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--lib") && i + 1 < argc)
			lib_path = argv[++i];
		else if ((!strcmp(argv[i], "--ref") || !strcmp(argv[i], "--pre")) && i + 1 < argc)
			i++;
		else if (strcmp(argv[i], "--wait") && strcmp(argv[i], "--hold"))
			wl_die("usage: attach_dlopen [--lib PATH] [--ref FILE] [--wait] [--hold]");
	}
	wl_init(argc, argv);
	host = malloc(1 * 1024 * KiB);
	if (!host)
		wl_die("out of memory");
	memset(host, 5, 1 * 1024 * KiB);

	wl_begin(); /* READY: nothing of CUDA is mapped yet */
	lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		wl_die("dlopen %s: %s", lib_path, dlerror());
	if (dlinfo(lib, RTLD_DI_LINKMAP, &map) || !map)
		wl_die("dlinfo %s: %s", lib_path, dlerror());
	printf("LOADED %s\n", map->l_name);
	fflush(stdout);
	RESOLVE(lib, cudaSetDevice);
	RESOLVE(lib, cudaMalloc);
	RESOLVE(lib, cudaFree);
	RESOLVE(lib, cudaMemcpy);
	RESOLVE(lib, cudaLaunchKernel);
	RESOLVE(lib, cudaDeviceSynchronize);

	/* 3 allocations */
	/* its device observed, not assumed: the report's devices[] says 0 */
	if (RT(cudaSetDevice, 0) == cudaSuccess)
		wl_device = 0;
	if (RT(cudaMalloc, &d_a, 1024 * KiB) == cudaSuccess)
		wl_allocated(WL_DEVICE, d_a, 1024 * KiB);
	if (RT(cudaMalloc, &d_b, 256 * KiB) == cudaSuccess)
		wl_allocated(WL_DEVICE, d_b, 256 * KiB);
	if (RT(cudaMalloc, &d_c, 4 * KiB) == cudaSuccess)
		wl_allocated(WL_DEVICE, d_c, 4 * KiB);

	/* copies: HtoD 1 MiB + 2 x 64 KiB, DtoH 256 KiB + 4 KiB, all pageable */
	copy(d_a, host, 1024 * KiB, cudaMemcpyHostToDevice);
	copy(d_b, host, 64 * KiB, cudaMemcpyHostToDevice);
	copy(d_b, host, 64 * KiB, cudaMemcpyHostToDevice);
	copy(host, d_b, 256 * KiB, cudaMemcpyDeviceToHost);
	copy(host, d_c, 4 * KiB, cudaMemcpyDeviceToHost);

	/* kernels: dl_scale x3, dl_reduce x2, on the legacy stream */
	{
		float *pa = d_a, *pb = d_b;
		int n = 256;
		void *scale_args[] = { &pa, &n }, *reduce_args[] = { &pa, &pb, &n };

		for (int i = 0; i < 3; i++)
			launch((const void *)dl_scale, "dl_scale", 64, scale_args);
		for (int i = 0; i < 2; i++)
			launch((const void *)dl_reduce, "dl_reduce", 8, reduce_args);
	}
	RT(cudaDeviceSynchronize);

	/* one failing call: freeing what is not an allocation, cudaErrorInvalidValue (1) */
	RT(cudaFree, (void *)0x1234);

	/* frees: nothing left live */
	if (RT(cudaFree, d_a) == cudaSuccess)
		wl_freed(d_a);
	if (RT(cudaFree, d_b) == cudaSuccess)
		wl_freed(d_b);
	if (RT(cudaFree, d_c) == cudaSuccess)
		wl_freed(d_c);
	wl_end();
	free(host);
	return 0;
}
