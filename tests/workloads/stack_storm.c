/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * stack_storm — many distinct launch stacks, for the tests of stack capture
 * under load: 2^L call paths, each launching the same kernel R times from the
 * same call site, so exactly 2^L distinct stacks of R launches each.
 *
 * Path p (0 <= p < 2^L) is storm_run -> step(bit 0) -> step(bit 1) -> ... ->
 * step(bit L-1), where step(bit i) is step_b when bit i of p is 1, step_a when it
 * is 0; the last step launches storm_kernel R times. So a stack, leaf first, is
 * L frames step_a/step_b (bit L-1 first), then storm_run, then main; read
 * outermost first, the step frames spell p from bit 0 up (step_b = 1).
 *
 * usage: stack_storm [--levels L] [--reps R] (L 1..20, default 15; R >= 1,
 * default 7) plus wl.h's --ref/--wait/--hold. Only launches are made while traced
 * (no synchronisation: it would be one more stack). The reference adds
 * "storm": {levels, reps, paths, launches, run_ns (the launches' own wall time), kernel,
 * step bits, the frames above the steps}. Frames are kept by SP_FRAME/SP_KEEP (stacks/frames.h).
 */
#include <time.h>

#include "wl.h"
#include "stacks/frames.h"

static int levels = 15, reps = 7;
static unsigned long launches, launch_errors;
static unsigned long long run_ns; /* the launches' wall time, CLOCK_MONOTONIC around storm_run */
static float *dev;

SP_FRAME void storm_kernel(float *x)
{
	x[0] += 1.0f;
}

SP_FRAME void step_a(unsigned long path, int bit);
SP_FRAME void step_b(unsigned long path, int bit);

/* The leaf step: R launches from this one call site (inside each step function, not a helper). */
#define STORM_LAUNCHES()                                                                          \
	for (int r = 0; r < reps; r++) {                                                          \
		void *args[] = { &dev };                                                          \
		cudaError_t err = cudaLaunchKernel((const void *)storm_kernel, (dim3){ 1, 1, 1 }, \
						   (dim3){ 32, 1, 1 }, args, 0, NULL);            \
		wl_count("cudaLaunchKernel", err);                                                \
		launches++;                                                                       \
		if (err == cudaSuccess) {                                                         \
			wl_launched("storm_kernel");                                              \
			wl_stream_work(NULL, false, WL_KERNEL, 0);                                \
		} else {                                                                          \
			launch_errors++;                                                          \
		}                                                                                 \
	}

/* The frame of bit `bit`: the next bit's step, or the launches when it is the last bit. */
#define STORM_NEXT(path, bit)                             \
	do {                                              \
		if ((bit) + 1 == levels) {                \
			STORM_LAUNCHES();                 \
		} else if (((path) >> ((bit) + 1)) & 1) { \
			step_b(path, (bit) + 1);          \
		} else {                                  \
			step_a(path, (bit) + 1);          \
		}                                         \
		SP_KEEP();                                \
	} while (0)

SP_FRAME void step_a(unsigned long path, int bit)
{
	STORM_NEXT(path, bit);
}

SP_FRAME void step_b(unsigned long path, int bit)
{
	STORM_NEXT(path, bit);
}

SP_FRAME void storm_run(void)
{
	for (unsigned long p = 0; p < 1ul << levels; p++) {
		if (p & 1)
			step_b(p, 0);
		else
			step_a(p, 0);
		SP_KEEP();
	}
}

static void write_storm(FILE *f)
{
	fprintf(f,
		",\n  \"storm\": {\"levels\": %d, \"reps\": %d, \"paths\": %lu, \"launches\": %lu, \"errors\": %lu, \"run_ns\": %llu, "
		"\"kernel\": \"storm_kernel\", \"op\": \"[kernel] storm_kernel\", \"api\": \"cudaLaunchKernel\",\n"
		"    \"step_bits\": {\"step_a\": 0, \"step_b\": 1}, \"bit_order\": \"outermost step frame is bit 0\",\n"
		"    \"above_steps\": [\"storm_run\", \"main\"]}",
		levels, reps, 1ul << levels, launches, launch_errors, run_ns);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--levels") && i + 1 < argc)
			levels = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
	}
	if (levels < 1 || levels > 20)
		wl_die("--levels: 1 to 20");
	if (reps < 1)
		wl_die("--reps: at least 1");
	wl_init(argc, argv);
	wl.ref_extra = write_storm;
	if (cudaMalloc((void **)&dev, 4096) != cudaSuccess) /* before the handshake: untraced */
		wl_die("cudaMalloc failed");
	wl_begin();
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	storm_run();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	run_ns = (unsigned long long)(t1.tv_sec - t0.tv_sec) * 1000000000ull + t1.tv_nsec -
		 t0.tv_nsec;
	SP_KEEP();
	wl_end();
	return 0;
}
