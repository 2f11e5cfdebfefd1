/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * perf_map.c — read and query perf's JIT maps (see perf_map.h). Written by
 * hand: the format is three fields a line and no library parses it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/perf_map.h"

#define PERF_MAP_MAX_BYTES (256u << 20) /* a bigger file is cut there (JITs rarely reach MiBs) */

static int cmp_start(const void *a, const void *b)
{
	const struct gp_perf_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* the same start twice: keep file order (the later line was compiled later) */
	return x->name < y->name ? -1 : x->name > y->name;
}

int gp_perf_map_parse(const char *text, size_t len, struct gp_perf_map **out)
{
	struct gp_perf_map *m = calloc(1, sizeof(*m));
	size_t cap = 0, at = 0, w;

	if (!m || !(m->names = malloc(len + 1))) {
		free(m);
		return -ENOMEM;
	}
	while (at < len) {
		const char *line = text + at, *nl = memchr(line, '\n', len - at);
		size_t ll = nl ? (size_t)(nl - line) : len - at;
		char buf[64], *end;
		unsigned long long start, size;
		const char *p = line, *stop = line + ll;

		at += ll + 1;
		/* START */
		w = 0;
		while (p < stop && *p != ' ' && w < sizeof(buf) - 1)
			buf[w++] = *p++;
		buf[w] = '\0';
		start = strtoull(buf, &end, 16);
		if (!w || *end || p >= stop)
			continue;
		/* SIZE */
		p++;
		w = 0;
		while (p < stop && *p != ' ' && w < sizeof(buf) - 1)
			buf[w++] = *p++;
		buf[w] = '\0';
		size = strtoull(buf, &end, 16);
		if (!w || *end || p >= stop || !size)
			continue;
		p++; /* the name is the rest of the line (it may hold spaces) */
		if (m->n == cap) {
			size_t nc = cap ? 2 * cap : 256;
			struct gp_perf_sym *v = realloc(m->v, nc * sizeof(*v));

			if (!v) {
				gp_perf_map_free(m);
				return -ENOMEM;
			}
			m->v = v;
			cap = nc;
		}
		memcpy(m->names + m->names_len, p, (size_t)(stop - p));
		m->v[m->n++] = (struct gp_perf_sym){ .start = start,
						     .size = size,
						     .name = (const char *)(m->names_len) };
		m->names_len += (size_t)(stop - p);
		m->names[m->names_len++] = '\0';
	}
	for (size_t i = 0; i < m->n; i++)
		m->v[i].name = m->names + (size_t)m->v[i].name;
	qsort(m->v, m->n, sizeof(*m->v), cmp_start);
	*out = m;
	return 0;
}

static int read_file(const char *path, struct gp_perf_map **out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int err = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			size_t nc = cap ? 2 * cap : 65536;
			char *nb;

			if (nc > PERF_MAP_MAX_BYTES)
				break;
			nb = realloc(buf, nc);
			if (!nb) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
			cap = nc;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : 0;
			break;
		}
		len += (size_t)n;
	}
	close(fd);
	if (!err)
		err = gp_perf_map_parse(buf ? buf : "", len, out);
	free(buf);
	return err;
}

/* The pid pid knows itself by: the last NSpid of /proc/PID/status (itself outside namespaces). */
static pid_t ns_pid(pid_t pid)
{
	char path[64], line[256];
	pid_t ns = pid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return pid;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "NSpid:", 6))
			continue;
		for (char *tok = strtok(line + 6, " \t\n"); tok; tok = strtok(NULL, " \t\n"))
			ns = (pid_t)atoi(tok);
		break;
	}
	fclose(f);
	return ns > 0 ? ns : pid;
}

int gp_perf_map_read(pid_t pid, struct gp_perf_map **out)
{
	char path[128];
	int err;

	snprintf(path, sizeof(path), "/proc/%d/root/tmp/perf-%d.map", (int)pid, (int)ns_pid(pid));
	err = read_file(path, out);
	if (err == -ENOENT || err == -ESRCH || err == -EACCES) {
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
		err = read_file(path, out);
	}
	return err;
}

void gp_perf_map_free(struct gp_perf_map *m)
{
	if (!m)
		return;
	free(m->v);
	free(m->names);
	free(m);
}

const struct gp_perf_sym *gp_perf_map_find(const struct gp_perf_map *m, __u64 addr)
{
	size_t lo = 0, hi = m->n;

	/* the last entry with start <= addr; among equal starts the latest line */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= m->v[lo - 1].start + m->v[lo - 1].size)
		return NULL;
	return &m->v[lo - 1];
}
