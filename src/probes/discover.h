/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * discover.h — which files of a running process may hold CUDA functions:
 * libraries named like the CUDA runtime (any version, any directory) and
 * the executable itself (the runtime may be linked into it statically).
 * Whether they do is decided once per file by files.c.
 */
#ifndef GP_DISCOVER_H
#define GP_DISCOVER_H

#include <stdbool.h>
#include <sys/types.h>

#include "gpuprobed/api.h"
#include "symbolize/symbolizer.h"

struct gp_candidate {
	const struct gp_map *map; /* a mapping of the file in the process snapshot */
	bool is_exe;
};

#define GP_MAX_CANDIDATES 32

/*
 * Candidate files of pid, from the symbolizer's snapshot of its maps (taken
 * by the caller); the results point into that snapshot and stay valid until
 * pid is snapshot again. Each file appears once. Returns how many (0..max),
 * or -errno.
 */
int gp_discover_candidates(struct gp_symbolizer *sym, pid_t pid, struct gp_candidate *out, int max);

/* The family a library file name belongs to, by its basename; 0 if none. */
enum gp_family gp_family_of_path(const char *path);

#endif
