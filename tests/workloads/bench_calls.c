/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bench_calls — the overhead benchmark's workload: N cudaLaunchKernel and N
 * cudaMemcpyAsync calls in tight loops, each loop timed by the workload
 * itself (CLOCK_MONOTONIC), printed as ns per call on one JSON line.
 * Against the real libcudart without a GPU every call fails fast (the
 * cheapest possible library entry, so probe costs stand out); against the
 * simulator the calls do real work.
 *
 * --depth D: the loops run D frames of this program deep (main, D - 2
 * nesting frames, the loop function; default 16), so a tracer that walks the
 * user stack at each call walks a realistic one. A training step's launch sits
 * well below main (the framework's dispatcher, its operators, the library's
 * own layers: typically 15-40 frames in C++ code), and a walk costs per frame,
 * so a stack of two (main -> loop) would flatter it. The depth changes nothing
 * for an untraced run: the loops are the same code at any depth.
 *
 * --distinct-stacks L: no timed loops. 2^L cudaLaunchKernel calls, each from
 * a different call stack: call i descends L levels, at each level into one of
 * two distinct functions chosen by one bit of i, and launches at the bottom.
 * Prints {"distinct_stacks": 2^L, ...} and exits: the workload of the
 * symbolization measurement (a tracer must keep and name 2^L stacks).
 *
 * Frames stay real: the workloads are built with -fno-omit-frame-pointer, the
 * nesting functions are noipa (no inlining, cloning or identical-code folding)
 * and every call in them is followed by a compiler barrier, so none is a tail
 * call.
 *
 * usage: bench_calls [--iters N] [--depth D] [--wait]
 *        bench_calls --distinct-stacks L
 */
#include <time.h>

#include "wl.h"

#define BENCH_NOIPA	 __attribute__((noipa))
#define BENCH_BARRIER()	 asm volatile("" ::: "memory")
#define BENCH_MAX_DEPTH	 100 /* the kernel walks at most 127 frames */
#define BENCH_MAX_LEVELS 24

__attribute__((noinline)) void bench_kernel(float *a)
{
	a[0] = 0;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

struct loops {
	long iters;
	void *dev, *host;
	cudaStream_t stream;
	unsigned long launch_err, copy_err;
	double t0, t1, t2;
};

/* The timed loops, at the bottom of the nest. */
BENCH_NOIPA void bench_loops(struct loops *l)
{
	float *p = l->dev;
	void *args[] = { &p };

	l->t0 = now_ns();
	for (long i = 0; i < l->iters; i++)
		l->launch_err +=
			cudaLaunchKernel((const void *)bench_kernel, (dim3){ 1, 1, 1 },
					 (dim3){ 32, 1, 1 }, args, 0, l->stream) != cudaSuccess;
	l->t1 = now_ns();
	for (long i = 0; i < l->iters; i++)
		l->copy_err += cudaMemcpyAsync(l->dev, l->host, 64, cudaMemcpyHostToDevice,
					       l->stream) != cudaSuccess;
	l->t2 = now_ns();
	BENCH_BARRIER();
}

/* n frames of this, then the loops. */
BENCH_NOIPA void bench_nest(int n, struct loops *l)
{
	if (n > 1)
		bench_nest(n - 1, l);
	else
		bench_loops(l);
	BENCH_BARRIER();
}

struct distinct {
	long index;
	unsigned long launches, errors;
	unsigned long zeros, ones; /* also keeps the two functions' bodies different */
};

BENCH_NOIPA void bench_level_zero(struct distinct *d, int level);
BENCH_NOIPA void bench_level_one(struct distinct *d, int level);

static inline void bench_descend(struct distinct *d, int level)
{
	if (level == 0) {
		d->errors += cudaLaunchKernel((const void *)bench_kernel, (dim3){ 1, 1, 1 },
					      (dim3){ 32, 1, 1 }, NULL, 0, NULL) != cudaSuccess;
		d->launches++;
	} else if ((d->index >> (level - 1)) & 1) {
		bench_level_one(d, level - 1);
	} else {
		bench_level_zero(d, level - 1);
	}
	BENCH_BARRIER();
}

BENCH_NOIPA void bench_level_zero(struct distinct *d, int level)
{
	d->zeros++;
	bench_descend(d, level);
}

BENCH_NOIPA void bench_level_one(struct distinct *d, int level)
{
	d->ones += 2;
	bench_descend(d, level);
}

/* 2^levels launches, launch i from the stack that spells i in binary. */
static void distinct_stacks(int levels)
{
	struct distinct d = { 0 };
	long n = 1L << levels;
	double t0 = now_ns(), t1;

	for (d.index = 0; d.index < n; d.index++)
		bench_level_zero(&d, levels);
	t1 = now_ns();
	printf("{\"distinct_stacks\": %ld, \"levels\": %d, \"launches\": %lu, \"launch_errors\": %lu, "
	       "\"ns_per_launch\": %.1f}\n",
	       n, levels, d.launches, d.errors, (t1 - t0) / (double)n);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct loops l = { .iters = 200000 };
	int depth = 16, levels = -1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			l.iters = atol(argv[++i]);
		else if (!strcmp(argv[i], "--depth") && i + 1 < argc)
			depth = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--distinct-stacks") && i + 1 < argc)
			levels = atoi(argv[++i]);
	}
	if (l.iters < 1)
		wl_die("--iters must be positive");
	if (depth < 2 || depth > BENCH_MAX_DEPTH)
		wl_die("--depth must be between 2 (main -> loops) and %d", BENCH_MAX_DEPTH);
	if (levels != -1 && (levels < 0 || levels > BENCH_MAX_LEVELS))
		wl_die("--distinct-stacks must be between 0 and %d", BENCH_MAX_LEVELS);
	wl_init(argc, argv);
	if (levels >= 0) {
		/* No set-up calls: every stack in a trace is one of the 2^levels launches. */
		wl_begin();
		distinct_stacks(levels);
		wl_end();
		return 0;
	}
	/* Set-up outside the measured loops (and before any tracer attaches). */
	cudaMalloc(&l.dev, 4096);
	cudaMallocHost(&l.host, 4096);
	cudaStreamCreate(&l.stream);
	wl_begin();

	/* main is one frame, bench_loops another: depth - 2 nesting frames between them */
	if (depth > 2)
		bench_nest(depth - 2, &l);
	else
		bench_loops(&l);
	cudaStreamSynchronize(l.stream);
	printf("{\"iters\": %ld, \"depth\": %d, \"launch_ns\": %.1f, \"memcpy_async_ns\": %.1f, "
	       "\"launch_errors\": %lu, \"memcpy_async_errors\": %lu}\n",
	       l.iters, depth, (l.t1 - l.t0) / (double)l.iters, (l.t2 - l.t1) / (double)l.iters,
	       l.launch_err, l.copy_err);
	fflush(stdout);
	wl_end();
	return 0;
}
