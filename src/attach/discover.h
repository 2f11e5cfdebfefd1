/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * discover.h — which CUDA libraries a process has mapped: shared libcudart
 * (any version, any directory) and the CUDA runtime linked statically into
 * the executable (its own .symtab defines cudaLaunchKernel & co.).
 */
#ifndef GP_DISCOVER_H
#define GP_DISCOVER_H

#include <stdbool.h>
#include <sys/types.h>

#include "gpuprobed/api.h"
#include "symbolize/symbolizer.h"

struct gp_found_lib {
	const struct gp_map *map;       /* a mapping of the file in the process snapshot */
	const struct gp_elf_syms *elf;  /* its symbol index (owned by the symbolizer) */
	enum gp_family family;
	bool is_static;                 /* the runtime linked into this ELF, not libcudart.so */
};

#define GP_MAX_FOUND_LIBS 16

/*
 * Libraries of pid worth probing, from the symbolizer's snapshot of its maps
 * (taken by the caller); the results point into that snapshot and stay valid
 * until pid is snapshot again. Each file appears once. Returns how many were found
 * (0..max), or -errno.
 */
int gp_discover_libs(struct gp_symbolizer *sym, pid_t pid, struct gp_found_lib *out, int max);

/* The family a library file name belongs to, by its basename; 0 if none. */
enum gp_family gp_family_of_path(const char *path);

#endif
