/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* proc_maps.c — read and query /proc/PID/maps snapshots (see proc_maps.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "proc_maps.h"

char *gp_read_whole_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (!f)
		return NULL;
	for (;;) {
		size_t got;

		if (cap - n < 4096) {
			char *nb = realloc(buf, cap = cap ? cap * 2 : 65536);

			if (!nb) {
				free(buf);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		int e = errno;

		free(buf);
		fclose(f);
		errno = e ? e : EIO;
		return NULL;
	}
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

int gp_maps_parse(pid_t pid, const char *text, size_t len, struct gp_maps **out)
{
	struct gp_maps *m = calloc(1, sizeof(*m));
	size_t lines = 0, plen = 0, i;
	const char *p, *end = text + len;

	if (!m)
		return -ENOMEM;
	m->pid = pid;
	for (p = text; p < end; p++)
		lines += *p == '\n';
	m->v = calloc(lines + 1, sizeof(*m->v));
	m->paths = malloc(len + 1);
	if (!m->v || !m->paths) {
		gp_maps_free(m);
		return -ENOMEM;
	}
	for (p = text; p < end;) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		char line[8192], perms[8] = "";
		unsigned long long start, stop, off, ino;
		unsigned maj, min;
		int path_at = 0;
		size_t ll;

		if (!eol)
			eol = end;
		ll = (size_t)(eol - p);
		if (ll >= sizeof(line))
			ll = sizeof(line) - 1;
		memcpy(line, p, ll);
		line[ll] = '\0';
		p = eol + 1;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &stop, perms, &off,
			   &maj, &min, &ino, &path_at) < 7)
			continue;
		struct gp_map *mp = &m->v[m->n++];

		mp->start = start;
		mp->end = stop;
		mp->offset = off;
		mp->dev = makedev(maj, min);
		mp->inode = ino;
		mp->exec = strchr(perms, 'x') != NULL;
		mp->path = (const char *)(uintptr_t)plen;
		{
			const char *path = path_at ? line + path_at : "";
			size_t n = strlen(path);

			memcpy(m->paths + plen, path, n + 1);
			plen += n + 1;
		}
	}
	for (i = 0; i < m->n; i++)
		m->v[i].path = m->paths + (uintptr_t)m->v[i].path;
	*out = m;
	return 0;
}

int gp_maps_read(pid_t pid, struct gp_maps **out)
{
	char path[64];
	size_t len;
	char *text;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	text = gp_read_whole_file(path, &len);
	if (!text)
		return errno == ENOENT ? -ESRCH : -errno;
	err = gp_maps_parse(pid, text, len, out);
	free(text);
	return err;
}

int gp_maps_dup(const struct gp_maps *from, pid_t pid, struct gp_maps **out)
{
	struct gp_maps *m = calloc(1, sizeof(*m));
	size_t pool = 0;

	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < from->n; i++) {
		size_t end = (size_t)(from->v[i].path - from->paths) + strlen(from->v[i].path) + 1;

		if (end > pool)
			pool = end;
	}
	m->pid = pid;
	m->n = from->n;
	m->v = calloc(from->n + 1, sizeof(*m->v));
	m->paths = malloc(pool + 1);
	if (!m->v || !m->paths) {
		gp_maps_free(m);
		return -ENOMEM;
	}
	memcpy(m->paths, from->paths, pool);
	for (size_t i = 0; i < from->n; i++) {
		m->v[i] = from->v[i];
		m->v[i].path = m->paths + (from->v[i].path - from->paths);
	}
	*out = m;
	return 0;
}

void gp_maps_free(struct gp_maps *m)
{
	if (!m)
		return;
	free(m->v);
	free(m->paths);
	free(m);
}

const struct gp_map *gp_maps_find(const struct gp_maps *m, __u64 addr)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < m->v[mid].start)
			hi = mid;
		else if (addr >= m->v[mid].end)
			lo = mid + 1;
		else
			return &m->v[mid];
	}
	return NULL;
}

void gp_mapped_file_path(pid_t pid, const struct gp_map *m, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/%d/map_files/%llx-%llx", (int)pid, (unsigned long long)m->start,
		 (unsigned long long)m->end);
	if (access(buf, F_OK))
		snprintf(buf, len, "/proc/%d/root%s", (int)pid, m->path);
}
