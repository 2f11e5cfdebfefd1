/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * trace_merge.h — gpuprobed merge's trace.json: the timelines of several
 * captures (each written by trace_json.c from its own capture) as one, on
 * the merged time axis, each host's processes a group of their own.
 */
#ifndef GP_TRACE_MERGE_H
#define GP_TRACE_MERGE_H

#include <stddef.h>
#include <linux/types.h>

/* Trace pids of part k are its pids plus k times this (above every pid_max). */
#define GP_TRACE_MERGE_PID_STRIDE 10000000u

struct gp_trace_part {
	const char *path; /* a trace.json written by trace_json.c */
	const char *host;
	__s64 offset_ns; /* its times plus this are on the merged axis */
};

/* Writes dir/trace.json from parts[0..n) (atomically). 0, or -errno (logged). */
int gp_trace_merge(const char *dir, const struct gp_trace_part *parts, size_t n);

#endif /* GP_TRACE_MERGE_H */
