/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpu_attrib — what happens to a thread inside GPU calls, measured by the
 * thread itself around each call (getrusage(RUSAGE_THREAD), its CPU clock,
 * the wall clock), for checking gpuprobed's attribution:
 *   --mode sync   long kernels, then cudaStreamSynchronize: the thread blocks
 *                 inside the call (off-CPU, voluntary switches); then copies
 *                 from and to fresh pageable memory: page faults inside
 *                 cudaMemcpy. The process waits on the GPU.
 *   --mode spin   CPU work between short GPU steps: CPU-bound.
 *   --mode sleep  sleeping (as if waiting for I/O) between short GPU steps.
 *   --mode copy   large synchronous copies (8 MiB: pinned and pageable host to
 *                 device, device to pinned host), each timed by the thread,
 *                 for checking durations and achieved bandwidth.
 * Prints one JSON line (its reference) before DONE. Kernels are named
 * long_kernel and short_kernel (SIMGPU_KERNEL_TIMES sets their durations).
 *
 * usage: gpu_attrib [--mode sync|spin|sleep] [--steps N] [--step-ms N] [wl options]
 */
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "wl.h"

#define MiB (1024ull * 1024ull)

__attribute__((noinline)) void long_kernel(float *a) { a[0] = 1; }
__attribute__((noinline)) void short_kernel(float *a) { a[0] = 2; }

struct inside {
	unsigned long calls;
	long long wall_ns, cpu_ns;
	long vol, invol, minflt, majflt;
};

struct probe {
	struct rusage ru;
	long long wall, cpu;
};

static long long clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void before(struct probe *p)
{
	getrusage(RUSAGE_THREAD, &p->ru);
	p->cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	p->wall = clock_ns(CLOCK_MONOTONIC);
}

static void after(const struct probe *p, struct inside *in)
{
	long long wall = clock_ns(CLOCK_MONOTONIC), cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	in->calls++;
	in->wall_ns += wall - p->wall;
	in->cpu_ns += cpu - p->cpu;
	in->vol += ru.ru_nvcsw - p->ru.ru_nvcsw;
	in->invol += ru.ru_nivcsw - p->ru.ru_nivcsw;
	in->minflt += ru.ru_minflt - p->ru.ru_minflt;
	in->majflt += ru.ru_majflt - p->ru.ru_majflt;
}

static void print_inside(const char *name, const struct inside *in, bool last)
{
	printf("\"%s\": {\"calls\": %lu, \"wall_ns\": %lld, \"cpu_ns\": %lld, \"voluntary_switches\": %ld, "
	       "\"involuntary_switches\": %ld, \"minor_faults\": %ld, \"major_faults\": %ld}%s",
	       name, in->calls, in->wall_ns, in->cpu_ns, in->vol, in->invol, in->minflt, in->majflt,
	       last ? "" : ", ");
}

static void *fresh(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		wl_die("mmap failed");
	madvise(p, bytes, MADV_NOHUGEPAGE); /* one fault per page */
	return p;
}

int main(int argc, char **argv)
{
	const char *mode = "sync";
	int steps = 8, step_ms = 20;
	struct inside sync = { 0 }, copy = { 0 }, htod_pinned = { 0 }, htod_pageable = { 0 }, dtoh_pinned = { 0 };
	struct probe pr;
	cudaStream_t s = NULL;
	void *dev = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mode") && i + 1 < argc)
			mode = argv[++i];
		else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--step-ms") && i + 1 < argc)
			step_ms = atoi(argv[++i]);
	}
	if (strcmp(mode, "sync") && strcmp(mode, "spin") && strcmp(mode, "sleep") && strcmp(mode, "copy"))
		wl_die("--mode sync|spin|sleep|copy");
	wl_init(argc, argv);
	wl_begin();
	if (cudaStreamCreate(&s) != cudaSuccess || cudaMalloc(&dev, 8 * MiB) != cudaSuccess)
		wl_die("no simulated GPU");
	if (!strcmp(mode, "copy")) {
		void *pinned = NULL, *pageable = fresh(8 * MiB);

		if (cudaMallocHost(&pinned, 8 * MiB) != cudaSuccess)
			wl_die("cudaMallocHost failed");
		memset(pageable, 1, 8 * MiB); /* no first-touch faults in the measured copies */
		for (int i = 0; i < steps; i++) {
			before(&pr);
			cudaMemcpy(dev, pinned, 8 * MiB, cudaMemcpyHostToDevice);
			after(&pr, &htod_pinned);
			before(&pr);
			cudaMemcpy(dev, pageable, 8 * MiB, cudaMemcpyHostToDevice);
			after(&pr, &htod_pageable);
			before(&pr);
			cudaMemcpy(pinned, dev, 8 * MiB, cudaMemcpyDeviceToHost);
			after(&pr, &dtoh_pinned);
		}
		printf("{\"pid\": %d, \"tid\": %d, \"mode\": \"copy\", \"bytes\": %llu, ", (int)getpid(),
		       (int)syscall(SYS_gettid), 8 * MiB);
		print_inside("htod_pinned", &htod_pinned, false);
		print_inside("htod_pageable", &htod_pageable, false);
		print_inside("dtoh_pinned", &dtoh_pinned, true);
		printf("}\n");
		fflush(stdout);
		cudaFreeHost(pinned);
		cudaFree(dev);
		cudaStreamDestroy(s);
		wl_end();
		return 0;
	}
	for (int i = 0; i < steps; i++) {
		float *p = dev;
		void *args[] = { &p };

		if (!strcmp(mode, "spin")) {
			long long until = clock_ns(CLOCK_MONOTONIC) + (long long)step_ms * 1000000LL;
			volatile unsigned long x = 0;

			while (clock_ns(CLOCK_MONOTONIC) < until) /* "preprocessing" on the host */
				x++;
		} else if (!strcmp(mode, "sleep")) {
			struct timespec ts = { step_ms / 1000, (long)(step_ms % 1000) * 1000000L };

			nanosleep(&ts, NULL); /* "waiting for the next batch" */
		}
		cudaLaunchKernel((const void *)(!strcmp(mode, "sync") ? long_kernel : short_kernel),
				 (dim3){ 64, 1, 1 }, (dim3){ 256, 1, 1 }, args, 0, s);
		before(&pr);
		cudaStreamSynchronize(s);
		after(&pr, &sync);
	}
	if (!strcmp(mode, "sync")) {
		for (int i = 0; i < 3; i++) {
			void *src = fresh(4 * MiB), *dst = fresh(4 * MiB);

			before(&pr);
			cudaMemcpy(dev, src, 4 * MiB, cudaMemcpyHostToDevice); /* reads untouched pages */
			after(&pr, &copy);
			before(&pr);
			cudaMemcpy(dst, dev, 4 * MiB, cudaMemcpyDeviceToHost); /* writes untouched pages */
			after(&pr, &copy);
			munmap(src, 4 * MiB);
			munmap(dst, 4 * MiB);
		}
	}
	printf("{\"pid\": %d, \"tid\": %d, \"mode\": \"%s\", ", (int)getpid(), (int)syscall(SYS_gettid), mode);
	print_inside("cudaStreamSynchronize", &sync, false);
	print_inside("cudaMemcpy", &copy, true);
	printf("}\n");
	fflush(stdout);
	cudaFree(dev);
	cudaStreamDestroy(s);
	wl_end();
	return 0;
}
