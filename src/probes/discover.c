/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* discover.c — the files of a process that may hold CUDA functions (see discover.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "probes/discover.h"

enum gp_family gp_family_of_path(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	/* libcudart.so, libcudart.so.13, libcudart.so.12.4.127 — never libcudart_static.a */
	static const struct {
		const char *prefix;
		enum gp_family family;
	} libs[] = {
		{ "libcudart.so", GP_FAM_CUDART },
		{ "libcuda.so", GP_FAM_CUDA },
		{ "libnccl.so", GP_FAM_NCCL },
	};

	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		size_t n = strlen(libs[i].prefix);

		if (!strncmp(base, libs[i].prefix, n) && (base[n] == '\0' || base[n] == '.'))
			return libs[i].family;
	}
	return 0;
}

static bool already(const struct gp_candidate *out, int n, const struct gp_map *m)
{
	for (int i = 0; i < n; i++)
		if (out[i].map->dev == m->dev && out[i].map->inode == m->inode)
			return true;
	return false;
}

int gp_discover_candidates(struct gp_symbolizer *sym, pid_t pid, struct gp_candidate *out, int max)
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
		bool is_exe = exe[0] && !strcmp(m->path, exe);

		if (!m->inode || (!gp_family_of_path(m->path) && !is_exe) || already(out, found, m))
			continue;
		out[found].map = m;
		out[found].is_exe = is_exe;
		found++;
	}
	return found;
}
