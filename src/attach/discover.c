/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* discover.c — find the CUDA libraries a process uses (see discover.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "attach/discover.h"
#include "log.h"

enum gp_family gp_family_of_path(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	/* libcudart.so, libcudart.so.13, libcudart.so.12.4.127 — never libcudart_static.a */
	if (!strncmp(base, "libcudart.so", 12) && (base[12] == '\0' || base[12] == '.'))
		return GP_FAM_CUDART;
	return 0;
}

static bool already(const struct gp_found_lib *out, int n, const struct gp_map *m)
{
	for (int i = 0; i < n; i++)
		if (out[i].map->dev == m->dev && out[i].map->inode == m->inode)
			return true;
	return false;
}

int gp_discover_libs(struct gp_symbolizer *sym, pid_t pid, struct gp_found_lib *out, int max)
{
	const struct gp_maps *maps = gp_symbolizer_maps(sym, pid);
	char exe[PATH_MAX], link[64];
	ssize_t n;
	int found = 0;

	if (!maps)
		return -ESRCH;
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';

	for (size_t i = 0; i < maps->n && found < max; i++) {
		const struct gp_map *m = &maps->v[i];
		enum gp_family fam = gp_family_of_path(m->path);
		bool is_exe = exe[0] && !strcmp(m->path, exe);
		const struct gp_elf_syms *elf;

		if (!m->inode || (!fam && !is_exe) || already(out, found, m))
			continue;
		elf = gp_symbolizer_elf(sym, pid, m);
		if (!elf) {
			gp_warn("pid %d: cannot read %s: %s", (int)pid, m->path, strerror(errno));
			continue;
		}
		if (!fam) {
			/* The executable: does it carry the runtime itself? */
			const struct gp_elf_sym *s = gp_elf_syms_find(elf, "cudaLaunchKernel");

			if (!s || !gp_elf_syms_find(elf, "cudaMalloc"))
				continue;
			fam = GP_FAM_CUDART;
			out[found].is_static = true;
		} else {
			out[found].is_static = false;
		}
		out[found].map = m;
		out[found].elf = elf;
		out[found].family = fam;
		found++;
	}
	return found;
}
