/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * overlay.c — the layer file behind an overlayfs path (see overlay.h).
 * Hand-written: libmount parses mountinfo but knows nothing of overlay's
 * layer options, and no library resolves a path through an overlay's layers.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "symbolize/overlay.h"

/* Undoes mountinfo's octal escapes (\040 a space, \134 a backslash) of src[0..n) into dst (len bytes). */
static int unescape(const char *src, size_t n, char *dst, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char c = src[i];

		if (c == '\\' && i + 3 < n && src[i + 1] >= '0' && src[i + 1] <= '3' &&
		    src[i + 2] >= '0' && src[i + 2] <= '7' && src[i + 3] >= '0' &&
		    src[i + 3] <= '7') {
			c = (char)((src[i + 1] - '0') * 64 + (src[i + 2] - '0') * 8 +
				   (src[i + 3] - '0'));
			i += 3;
		}
		if (o + 1 >= len)
			return -ENAMETOOLONG;
		dst[o++] = c;
	}
	dst[o] = '\0';
	return 0;
}

/* The next space-separated field of *s: its start, its length in *n; NULL at the end. */
static const char *field(const char **s, size_t *n)
{
	const char *p = *s, *start;

	while (*p == ' ')
		p++;
	if (!*p || *p == '\n')
		return NULL;
	start = p;
	while (*p && *p != ' ' && *p != '\n')
		p++;
	*n = (size_t)(p - start);
	*s = p;
	return start;
}

int gp_mountinfo_parse(const char *line, struct gp_mount *m)
{
	const char *s = line, *f[6], *fs, *super;
	size_t n[6], nfs, nsuper, nsep;

	for (int i = 0; i < 6; i++)
		if (!(f[i] = field(&s, &n[i])))
			return -EINVAL;
	/* optional fields, then "-" */
	do {
		const char *sep = field(&s, &nsep);

		if (!sep)
			return -EINVAL;
		if (nsep == 1 && *sep == '-')
			break;
	} while (1);
	if (!(fs = field(&s, &nfs)) || !field(&s, &nsuper) || !(super = field(&s, &nsuper)))
		return -EINVAL;
	if (sscanf(f[2], "%u:%u", &m->major, &m->minor) != 2 || nfs >= sizeof(m->fstype) ||
	    nsuper >= sizeof(m->super))
		return -EINVAL;
	if (unescape(f[3], n[3], m->root, sizeof(m->root)) ||
	    unescape(f[4], n[4], m->point, sizeof(m->point)))
		return -EINVAL;
	memcpy(m->fstype, fs, nfs);
	m->fstype[nfs] = '\0';
	/* kept escaped: a comma within a path is \054, so the options split on plain commas */
	memcpy(m->super, super, nsuper);
	m->super[nsuper] = '\0';
	return 0;
}

/* Adds the directories of one layer option's value (escaped) to layers; the new count. */
static int add_layers(const char *value, size_t n, char (*layers)[4096], int count, int max)
{
	char buf[8192], *out = NULL;
	size_t o = 0;

	if (unescape(value, n, buf, sizeof(buf)))
		return count;
	for (size_t i = 0;; i++) {
		char c = buf[i];

		if (c == '\\' && buf[i + 1]) { /* "\:" a colon (or any char) within a path */
			c = buf[++i];
		} else if (c == ':' || c == '\0') {
			if (out && o && count < max) {
				out[o] = '\0';
				count++;
			}
			out = NULL;
			o = 0;
			if (!c)
				break;
			continue; /* "::" (data-only layers follow) is an empty entry */
		}
		if (!out) {
			if (count >= max)
				return count;
			out = layers[count];
		}
		if (o + 1 < 4096)
			out[o++] = c;
	}
	return count;
}

int gp_overlay_layers(const char *super, char (*layers)[4096], int max)
{
	static const char *const keys[] = { "upperdir=", "lowerdir=", "lowerdir+=", "datadir+=" };
	int count = 0;

	/* upperdir first whatever the option order, then the lower layers in their order */
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		const char *s = super;

		while (*s) {
			const char *end = strchr(s, ',');
			size_t n = end ? (size_t)(end - s) : strlen(s), kl = strlen(keys[k]);

			if (n > kl && !strncmp(s, keys[k], kl))
				count = add_layers(s + kl, n - kl, layers, count, max);
			s += n + (end ? 1 : 0);
		}
	}
	return count;
}

static bool has_option(const char *super, const char *key)
{
	size_t n = strlen(key);

	return !strncmp(super, key, n) || (strstr(super, key) && strstr(super, key)[-1] == ',');
}

/* path lies at or under mount point (component-wise); its part below the mount, or NULL. */
static const char *below(const char *path, const char *point)
{
	size_t n = strlen(point);

	if (!strcmp(point, "/"))
		return path;
	if (strncmp(path, point, n) || (path[n] != '/' && path[n] != '\0'))
		return NULL;
	return path + n;
}

/* The overlay mount of dev in pid's namespace (0: this process's) holding path; false if none. */
static bool find_mount(pid_t pid, dev_t dev, const char *path, struct gp_mount *best)
{
	char name[64], *line = NULL;
	size_t cap = 0, best_len = 0;
	struct gp_mount *m = malloc(sizeof(*m));
	bool found = false;
	FILE *f;

	if (pid)
		snprintf(name, sizeof(name), "/proc/%d/mountinfo", (int)pid);
	else
		snprintf(name, sizeof(name), "/proc/self/mountinfo");
	if (!m || !(f = fopen(name, "re"))) {
		free(m);
		return false;
	}
	while (getline(&line, &cap, f) > 0) {
		if (gp_mountinfo_parse(line, m) || strcmp(m->fstype, "overlay") ||
		    makedev(m->major, m->minor) != dev || !below(path, m->point))
			continue;
		if (!found || strlen(m->point) > best_len) {
			*best = *m;
			best_len = strlen(m->point);
			found = true;
		}
	}
	free(line);
	fclose(f);
	free(m);
	return found;
}

/*
 * The topmost of n layers (+ within) that holds a file; its index, -1 when none
 * or a whiteout hides it. *ls its stat, cand its path.
 */
static int topmost(char (*layers)[4096], int n, const char *within, struct stat *ls, char *cand,
		   size_t len)
{
	for (int i = 0; i < n; i++) {
		if (layers[i][0] != '/' ||
		    snprintf(cand, len, "%s%s", layers[i], within) >= (int)len || lstat(cand, ls))
			continue; /* a relative layer (resolved against the mounter's directory) is not followed */
		if (S_ISCHR(ls->st_mode) && ls->st_rdev == makedev(0, 0))
			return -1; /* a whiteout: nothing below it is seen */
		if (!S_ISDIR(ls->st_mode) && !stat(cand, ls))
			return i;
	}
	return -1;
}

/*
 * One level: the layer file of path (in pid's namespace) stat'd as *st.
 * 1: found (*st, real); 0: not on an overlay; -errno.
 */
static int one_level(pid_t pid, const char *path, struct stat *st, char *real, size_t len)
{
	char(*layers)[4096] = NULL;
	struct gp_mount *m = NULL;
	char within[4096], cand[PATH_MAX];
	int n, i, err = -ENOENT;
	struct stat ls;
	bool has_upper;

	if (major(st->st_dev) != 0)
		return 0; /* overlays are on anonymous devices: a disk's file is its own */
	if (!(m = malloc(sizeof(*m))) ||
	    !(layers = malloc(GP_OVERLAY_MAX_LAYERS * sizeof(*layers)))) {
		err = -ENOMEM;
		goto out;
	}
	if (!find_mount(pid, st->st_dev, path, m)) {
		err = 0;
		goto out;
	}
	snprintf(within, sizeof(within), "%s%s", strcmp(m->root, "/") ? m->root : "",
		 below(path, m->point));
	n = gp_overlay_layers(m->super, layers, GP_OVERLAY_MAX_LAYERS);
	has_upper = has_option(m->super, "upperdir=");
	i = topmost(layers, n, within, &ls, cand, sizeof(cand));
	if (i < 0)
		goto out;
	/* the overlay shows a file of its size; a lower file's number as its own (low bits with xino) */
	if (ls.st_size != st->st_size ||
	    ((!has_upper || i > 0) && ((ls.st_ino ^ st->st_ino) & 0xffffffffu))) {
		err = -ESTALE;
		goto out;
	}
	*st = ls;
	snprintf(real, len, "%s", cand);
	err = 1;
out:
	free(layers);
	free(m);
	return err;
}

int gp_overlay_real_file(pid_t pid, const char *ns_path, struct stat *st, char *real, size_t len)
{
	char path[PATH_MAX], found[PATH_MAX];
	struct stat cur = *st;
	int depth, err = 0;

	snprintf(path, sizeof(path), "%s", ns_path);
	/* an overlay over an overlay (a container in a container): its layer is a path of this machine's */
	for (depth = 0; depth < 4; depth++) {
		err = one_level(depth ? 0 : pid, path, &cur, found, sizeof(found));
		if (err <= 0)
			break;
		snprintf(path, sizeof(path), "%s", found);
	}
	if (err < 0)
		return err;
	if (!depth)
		return 0;
	*st = cur;
	snprintf(real, len, "%s", path);
	return 1;
}

struct gp_overlay_root {
	char within[4096]; /* the mount's root within the overlay ("" for "/") */
	int n;
	char layers[][4096]; /* topmost first */
};

struct gp_overlay_root *gp_overlay_root_of(pid_t pid)
{
	char(*layers)[4096] = NULL, root[64];
	struct gp_overlay_root *r = NULL;
	struct gp_mount *m = NULL;
	struct stat st;
	int n;

	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	if (stat(root, &st) || major(st.st_dev) != 0)
		return NULL;
	if (!(m = malloc(sizeof(*m))) ||
	    !(layers = malloc(GP_OVERLAY_MAX_LAYERS * sizeof(*layers))) ||
	    !find_mount(pid, st.st_dev, "/", m) || strcmp(m->point, "/"))
		goto out;
	n = gp_overlay_layers(m->super, layers, GP_OVERLAY_MAX_LAYERS);
	if (n <= 0 || !(r = malloc(sizeof(*r) + (size_t)n * sizeof(r->layers[0]))))
		goto out;
	snprintf(r->within, sizeof(r->within), "%s", strcmp(m->root, "/") ? m->root : "");
	r->n = n;
	memcpy(r->layers, layers, (size_t)n * sizeof(r->layers[0]));
out:
	free(layers);
	free(m);
	return r;
}

struct gp_overlay_root *gp_overlay_root_dup(const struct gp_overlay_root *r)
{
	size_t size = r ? sizeof(*r) + (size_t)r->n * sizeof(r->layers[0]) : 0;
	struct gp_overlay_root *c = r ? malloc(size) : NULL;

	if (c)
		memcpy(c, r, size);
	return c;
}

void gp_overlay_root_free(struct gp_overlay_root *r)
{
	free(r);
}

int gp_overlay_root_find(const struct gp_overlay_root *r, const char *path, char *out, size_t len)
{
	char within[8192];
	struct stat ls;

	if (!r || path[0] != '/')
		return -ENOENT;
	snprintf(within, sizeof(within), "%s%s", r->within, path);
	return topmost((char(*)[4096])r->layers, r->n, within, &ls, out, len) < 0 ? -ENOENT : 0;
}
