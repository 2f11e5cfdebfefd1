/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpu_attrib — what happens to a thread inside GPU calls, measured by the
 * thread itself around each call (getrusage(RUSAGE_THREAD), its CPU clock,
 * the wall clock), for checking gpuprobed's attribution:
 *   --mode sync   long kernels, then cudaStreamSynchronize: the thread blocks
 *                 inside the call (off-CPU, voluntary switches); then copies
 *                 (--copies rounds, 3) from and to fresh pageable memory:
 *                 page faults inside cudaMemcpy. The process waits on the GPU.
 *   --mode spin   CPU work (--step-ms of the thread's CPU time) between short
 *                 GPU steps: CPU-bound.
 *   --mode sleep  sleeping (as if waiting for I/O, --step-ms) between short GPU
 *                 steps.
 *   --mode copy   large synchronous copies (8 MiB: pinned and pageable host to
 *                 device, device to pinned host), each timed by the thread,
 *                 for checking durations and achieved bandwidth.
 * The calls are made by a thread created after the handshake: its window in a
 * tracer (from its creation to its exit) holds the workload's steps only, not
 * the wait for the go line, which a busy machine makes long.
 * Each measured call has a window: the thread's counters and CPU clock as of
 * two known CLOCK_MONOTONIC instants (the tracer's clock) before and after
 * it, so that what a tracer saw can be cut to the same window exactly.
 * Prints one JSON line (its reference: per API the sums and each window)
 * before DONE. Kernels are named long_kernel and short_kernel
 * (SIMGPU_KERNEL_TIMES sets their durations).
 *
 * usage: gpu_attrib [--mode sync|spin|sleep|copy] [--steps N] [--step-ms N] [--copies N]
 *                   [wl options]
 */
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "wl.h"

#define MiB (1024ull * 1024ull)

__attribute__((noinline)) void long_kernel(float *a)
{
	a[0] = 1;
}
__attribute__((noinline)) void short_kernel(float *a)
{
	a[0] = 2;
}

/* One measured call: the thread's counters over [mono_b, mono_e]. */
struct window {
	long long mono_b, mono_e, cpu_ns, read_ns;
	long vol, invol, minflt, majflt;
};

struct inside {
	unsigned long calls;
	long long wall_ns, cpu_ns;
	long vol, invol, minflt, majflt;
	struct window *w;
};

/* The thread's counters and CPU clock as of the instant mono (see usage_at()). */
struct probe {
	struct rusage ru;
	long long mono, cpu, read;
};

static long long clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * The thread's counters and CPU clock as of one CLOCK_MONOTONIC instant: read on both sides of
 * the clock, again until no context switch or fault came between the two reads. A switch-out the
 * kernel timestamps before p->mono is then counted in p->ru, one after it is not. The CPU clock is
 * read just after p->mono, in the same stay on the CPU: at an instant in [mono, mono + read].
 */
static void usage_at(struct probe *p)
{
	struct rusage again;

	for (;;) {
		getrusage(RUSAGE_THREAD, &p->ru);
		p->mono = clock_ns(CLOCK_MONOTONIC);
		p->cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		p->read = clock_ns(CLOCK_MONOTONIC) - p->mono;
		getrusage(RUSAGE_THREAD, &again);
		if (again.ru_nvcsw == p->ru.ru_nvcsw && again.ru_nivcsw == p->ru.ru_nivcsw &&
		    again.ru_minflt == p->ru.ru_minflt && again.ru_majflt == p->ru.ru_majflt)
			return;
	}
}

static void after(const struct probe *p, struct inside *in)
{
	struct window *w;
	struct probe e;

	usage_at(&e);
	w = realloc(in->w, (in->calls + 1) * sizeof(*w));
	if (!w)
		wl_die("out of memory");
	in->w = w;
	w += in->calls++;
	*w = (struct window){
		.mono_b = p->mono,
		.mono_e = e.mono,
		.cpu_ns = e.cpu - p->cpu,
		.read_ns = p->read + e.read,
		.vol = e.ru.ru_nvcsw - p->ru.ru_nvcsw,
		.invol = e.ru.ru_nivcsw - p->ru.ru_nivcsw,
		.minflt = e.ru.ru_minflt - p->ru.ru_minflt,
		.majflt = e.ru.ru_majflt - p->ru.ru_majflt,
	};
	in->wall_ns += w->mono_e - w->mono_b;
	in->cpu_ns += w->cpu_ns;
	in->vol += w->vol;
	in->invol += w->invol;
	in->minflt += w->minflt;
	in->majflt += w->majflt;
}

/*
 * The sums over an API's calls, then each call's window; read_ns: how long after the window's two
 * instants together the thread may have read its CPU clock.
 */
static void print_inside(const char *name, const struct inside *in, bool last)
{
	printf("\"%s\": {\"calls\": %lu, \"wall_ns\": %lld, \"cpu_ns\": %lld, "
	       "\"voluntary_switches\": %ld, \"involuntary_switches\": %ld, \"minor_faults\": %ld, "
	       "\"major_faults\": %ld, \"windows\": [",
	       name, in->calls, in->wall_ns, in->cpu_ns, in->vol, in->invol, in->minflt,
	       in->majflt);
	for (unsigned long i = 0; i < in->calls; i++) {
		const struct window *w = &in->w[i];

		printf("%s{\"begin_mono_ns\": %lld, \"end_mono_ns\": %lld, \"cpu_ns\": %lld, "
		       "\"read_ns\": %lld, \"voluntary_switches\": %ld, "
		       "\"involuntary_switches\": %ld, \"minor_faults\": %ld, "
		       "\"major_faults\": %ld}",
		       i ? ", " : "", w->mono_b, w->mono_e, w->cpu_ns, w->read_ns, w->vol, w->invol,
		       w->minflt, w->majflt);
	}
	printf("]}%s", last ? "" : ", ");
}

static void *fresh(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		wl_die("mmap failed");
	madvise(p, bytes, MADV_NOHUGEPAGE); /* one fault per page */
	return p;
}

static const char *mode = "sync";
static int steps = 8, step_ms = 20, copies = 3;

/* The measured calls, on a thread of their own (see the top of the file). */
static void *run(void *arg)
{
	struct inside sync = { 0 }, copy = { 0 }, htod_pinned = { 0 }, htod_pageable = { 0 },
		      dtoh_pinned = { 0 };
	struct probe pr;
	cudaStream_t s = NULL;
	void *dev = NULL;

	(void)arg;
	if (cudaStreamCreate(&s) != cudaSuccess || cudaMalloc(&dev, 8 * MiB) != cudaSuccess)
		wl_die("no simulated GPU");
	if (!strcmp(mode, "copy")) {
		void *pinned = NULL, *pageable = fresh(8 * MiB);

		if (cudaMallocHost(&pinned, 8 * MiB) != cudaSuccess)
			wl_die("cudaMallocHost failed");
		memset(pageable, 1, 8 * MiB); /* no first-touch faults in the measured copies */
		for (int i = 0; i < steps; i++) {
			usage_at(&pr);
			cudaMemcpy(dev, pinned, 8 * MiB, cudaMemcpyHostToDevice);
			after(&pr, &htod_pinned);
			usage_at(&pr);
			cudaMemcpy(dev, pageable, 8 * MiB, cudaMemcpyHostToDevice);
			after(&pr, &htod_pageable);
			usage_at(&pr);
			cudaMemcpy(pinned, dev, 8 * MiB, cudaMemcpyDeviceToHost);
			after(&pr, &dtoh_pinned);
		}
		printf("{\"pid\": %d, \"tid\": %d, \"mode\": \"copy\", \"bytes\": %llu, ",
		       (int)getpid(), (int)syscall(SYS_gettid), 8 * MiB);
		print_inside("htod_pinned", &htod_pinned, false);
		print_inside("htod_pageable", &htod_pageable, false);
		print_inside("dtoh_pinned", &dtoh_pinned, true);
		printf("}\n");
		fflush(stdout);
		cudaFreeHost(pinned);
		cudaFree(dev);
		cudaStreamDestroy(s);
		return NULL;
	}
	for (int i = 0; i < steps; i++) {
		float *p = dev;
		void *args[] = { &p };

		if (!strcmp(mode, "spin")) {
			/* "preprocessing" on the host: step_ms of CPU work, however long a busy
			 * machine makes it wait for a CPU meanwhile */
			long long until =
				clock_ns(CLOCK_THREAD_CPUTIME_ID) + (long long)step_ms * 1000000LL;
			volatile unsigned long x = 0;

			while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < until)
				x++;
		} else if (!strcmp(mode, "sleep")) {
			struct timespec ts = { step_ms / 1000, (long)(step_ms % 1000) * 1000000L };

			nanosleep(&ts, NULL); /* "waiting for the next batch" */
		}
		cudaLaunchKernel((const void *)(!strcmp(mode, "sync") ? long_kernel : short_kernel),
				 (dim3){ 64, 1, 1 }, (dim3){ 256, 1, 1 }, args, 0, s);
		usage_at(&pr);
		cudaStreamSynchronize(s);
		after(&pr, &sync);
	}
	if (!strcmp(mode, "sync")) {
		for (int i = 0; i < copies; i++) {
			void *src = fresh(4 * MiB), *dst = fresh(4 * MiB);

			usage_at(&pr);
			cudaMemcpy(dev, src, 4 * MiB,
				   cudaMemcpyHostToDevice); /* reads untouched pages */
			after(&pr, &copy);
			usage_at(&pr);
			cudaMemcpy(dst, dev, 4 * MiB,
				   cudaMemcpyDeviceToHost); /* writes untouched pages */
			after(&pr, &copy);
			munmap(src, 4 * MiB);
			munmap(dst, 4 * MiB);
		}
	}
	printf("{\"pid\": %d, \"tid\": %d, \"mode\": \"%s\", ", (int)getpid(),
	       (int)syscall(SYS_gettid), mode);
	print_inside("cudaStreamSynchronize", &sync, false);
	print_inside("cudaMemcpy", &copy, true);
	printf("}\n");
	fflush(stdout);
	cudaFree(dev);
	cudaStreamDestroy(s);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mode") && i + 1 < argc)
			mode = argv[++i];
		else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--step-ms") && i + 1 < argc)
			step_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--copies") && i + 1 < argc)
			copies = atoi(argv[++i]);
	}
	if (strcmp(mode, "sync") && strcmp(mode, "spin") && strcmp(mode, "sleep") &&
	    strcmp(mode, "copy"))
		wl_die("--mode sync|spin|sleep|copy");
	wl_init(argc, argv);
	wl_begin();
	if (pthread_create(&th, NULL, run, NULL) || pthread_join(th, NULL))
		wl_die("pthread_create failed");
	wl_end();
	return 0;
}
