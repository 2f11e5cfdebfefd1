/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * perf_map.h — JIT symbol maps in perf's /tmp/perf-PID.map format: one
 * "START SIZE name" line per compiled function (START and SIZE in hex), as
 * written by JITs (V8, the JVM's agents, Python 3.12+ with -X perf) for code
 * in anonymous memory that no ELF file describes.
 */
#ifndef GP_PERF_MAP_H
#define GP_PERF_MAP_H

#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

struct gp_perf_sym {
	__u64 start, size;
	const char *name;
};

struct gp_perf_map {
	struct gp_perf_sym *v; /* sorted by start; a later line for the same start wins */
	size_t n;
	char *names;
	size_t names_len;
};

/* Parses map text. 0 or -errno (-ENOMEM); malformed lines are skipped. */
int gp_perf_map_parse(const char *text, size_t len, struct gp_perf_map **out);
/*
 * Reads pid's perf map: through /proc/PID/root (its mount namespace, with
 * the pid it knows itself by) while it lives, else /tmp/perf-PID.map. Only a
 * regular file, never through a symbolic link. 0 or -errno (-ENOENT: none).
 */
int gp_perf_map_read(pid_t pid, struct gp_perf_map **out);
void gp_perf_map_free(struct gp_perf_map *m);

/* The function containing addr, or NULL. */
const struct gp_perf_sym *gp_perf_map_find(const struct gp_perf_map *m, __u64 addr);

#endif
