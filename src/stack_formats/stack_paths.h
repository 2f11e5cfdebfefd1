/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * stack_paths.h — what the stack sinks share: every distinct call path of
 * GPU work as frame names from the root to the leaf, with its weights.
 * Built once from the model (stack_paths.c); written as Brendan Gregg's
 * folded format (stack_paths.c), an interactive SVG flame graph
 * (flamegraph_svg.c) and a speedscope file (speedscope_json.c). The pprof
 * profile (pprof_profile.c) is built from the model itself, as it keeps each
 * frame's address, mapping and line, but with the same frames and order.
 *
 * Frame-name conventions (the writers may colour by them):
 *   - the root frame names the process: "demo_train (pid 1234)";
 *   - "[truncated]" right under the root: the unwinder stopped before the
 *     thread's start (no frame pointers) or at its depth limit;
 *   - an API frame is the traced function's own name ("cudaLaunchKernel",
 *     "cuMemcpyHtoD_v2", "ncclAllReduce");
 *   - the leaf is the GPU operation, in brackets first: "[kernel] gemm<float>",
 *     "[HtoD 4 MiB pageable]", "[memset 1 MiB]", "[alloc device 256 MiB]",
 *     "[AllReduce float 4 MiB]", "[sync]";
 *   - "[unknown]" or "file+0x1234" for frames without a symbol.
 * Names never contain ';' or '\n' (replaced by ':' and ' ').
 */
#ifndef GP_STACK_PATHS_H
#define GP_STACK_PATHS_H

#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

struct gp_model;
struct gp_process;
struct gp_stack;

enum gp_weight {
	GP_W_CALLS,   /* calls (launches, copies, ...) */
	GP_W_BYTES,   /* bytes the calls moved, set or allocated */
	GP_W_HOST_NS, /* host time inside the calls, ns */
	GP_W_MAX,
};

struct gp_path {
	const char **frames; /* [0] the root ... [nframes - 1] the leaf */
	size_t nframes;
	__u64 w[GP_W_MAX];
};

struct gp_paths {
	struct gp_path
		*v; /* one per distinct frame sequence: process by process, heaviest stack first */
	size_t n;
	/* storage behind frames[] and the names (owned) */
	const char ***frame_arrays;
	size_t nframe_arrays;
	char **names;
	size_t nnames;
};

/* Every path of every process of m. 0 or -errno; out is empty when nothing had a stack. */
int gp_paths_from_model(const struct gp_model *m, struct gp_paths *out);
void gp_paths_release(struct gp_paths *p);

/*
 * The stacks of p, heaviest first (calls, then first seen), the order every
 * stack sink and report.json's stacks list them in; *n of them, malloc'ed
 * (NULL: none).
 */
const struct gp_stack **gp_sorted_stacks(const struct gp_process *p, size_t *n);

/* The root frame of p's paths: "train (pid 1234)". */
void gp_stack_root_label(const struct gp_process *p, char *buf, size_t len);

/* A weight's unit, for titles and tables: "calls", "bytes", "ns". */
const char *gp_weight_name(enum gp_weight w);

/*
 * "frame;frame;leaf N\n" per path with w > 0, in the order of p. Paths are
 * distinct frame sequences (stacks that symbolize alike are merged when the
 * paths are built), so no line repeats. 0 or -errno.
 */
int gp_folded_write(const struct gp_paths *p, enum gp_weight w, FILE *out);

/*
 * A self-contained interactive SVG flame graph of weight w (no external
 * scripts, fonts or styles): click to zoom, search (regex, highlights and
 * reports the matched share), tooltips with the frame, its weight and share.
 * title: shown at the top. 0 or -errno.
 */
int gp_flamegraph_svg_write(const struct gp_paths *p, enum gp_weight w, const char *title,
			    FILE *out);

/*
 * speedscope's file format (https://www.speedscope.app/file-format-schema.json):
 * one shared frame table and one "sampled" profile per weight (calls, bytes,
 * host time in nanoseconds), each sample a path with its weight. name: the
 * file's name field. 0 or -errno.
 */
int gp_speedscope_write(const struct gp_paths *p, const char *name, FILE *out);

/*
 * pprof's profile.proto, gzip'ed (profile.pb.gz): one sample per (stack,
 * operation) of every process of m, valued in calls, bytes and host ns, its
 * frames those of the folded files' line, leaf first. 0 or -errno.
 */
int gp_pprof_write(const struct gp_model *m, FILE *out);

#endif
