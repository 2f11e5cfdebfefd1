/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* files.c — the library files of the session, probed once each (see files.h). */
#include <bpf/bpf.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "probes/discover.h"
#include "probes/files.h"
#include "symbolize/overlay.h"
#include "log.h"

void gp_files_init(struct gp_files *fs, int map_fd, struct gp_uprobes *u, struct gp_symbolizer *sym,
		   struct gp_model *model)
{
	memset(fs, 0, sizeof(*fs));
	fs->map_fd = map_fd;
	fs->probes = u;
	fs->sym = sym;
	fs->model = model;
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static void file_free(struct gp_file *f)
{
	if (!f)
		return;
	free(f->path);
	free(f->names);
	free(f->users);
	free(f);
}

void gp_files_release(struct gp_files *fs)
{
	for (size_t i = 0; i < fs->n; i++)
		file_free(fs->v[i]);
	free(fs->v);
	memset(fs, 0, sizeof(*fs));
}

__u64 gp_kdev(__u64 dev)
{
	return ((__u64)major((dev_t)dev) << 20) | minor((dev_t)dev);
}

struct gp_file *gp_files_find(struct gp_files *fs, __u64 kdev, __u64 ino)
{
	for (size_t i = 0; i < fs->n; i++)
		for (size_t k = 0; k < fs->v[i]->nnames; k++)
			if (fs->v[i]->names[k].dev == kdev && fs->v[i]->names[k].ino == ino)
				return fs->v[i];
	return NULL;
}

/* The file whose layer file (what the kernel probes) is kdev/ino, or NULL. */
static struct gp_file *find_probed(struct gp_files *fs, __u64 kdev, __u64 ino)
{
	for (size_t i = 0; i < fs->n; i++)
		if (fs->v[i]->kdev == kdev && fs->v[i]->ino == ino && !fs->v[i]->failed)
			return fs->v[i];
	return NULL;
}

static void tell_kernel_name(struct gp_files *fs, const struct gp_file *f,
			     const struct gp_file_key *key)
{
	__u32 state = f->armed ? GP_FILE_ARMED : GP_FILE_PLAIN;

	if (bpf_map_update_elem(fs->map_fd, key, &state, BPF_ANY))
		gp_warn("%s: cannot record it for the kernel (%s): processes mapping it will be held "
			"each time",
			f->path, strerror(errno));
}

static void tell_kernel(struct gp_files *fs, const struct gp_file *f)
{
	for (size_t k = 0; k < f->nnames; k++)
		tell_kernel_name(fs, f, &f->names[k]);
}

static int add_name(struct gp_file *f, __u64 kdev, __u64 ino)
{
	struct gp_file_key *nv = realloc(f->names, (f->nnames + 1) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	f->names = nv;
	f->names[f->nnames++] = (struct gp_file_key){ .dev = kdev, .ino = ino };
	return 0;
}

/*
 * The layer file behind display (as pid names it), when it lies on an overlay:
 * *st becomes its stat. When it cannot be found, a message, and the file is
 * probed as its own (exact while one container at a time maps it).
 */
static void probed_file(pid_t pid, const char *display, struct stat *st)
{
	char real[PATH_MAX];
	int err = gp_overlay_real_file(pid, display, st, real, sizeof(real));

	if (err > 0)
		gp_debug("%s (pid %d): the layer file %s", display, (int)pid, real);
	else if (err < 0)
		gp_warn("%s (pid %d): on an overlay whose layer file could not be found (%s): probed as a "
			"file of its own; a second container mapping the same layer file would meet two probe "
			"sets",
			display, (int)pid, strerror(-err));
}

/* Probes f's functions of family; false after a message. */
static bool arm(struct gp_files *fs, struct gp_file *f, const char *path,
		const struct gp_elf_syms *elf)
{
	size_t first;
	int n;

	gp_uprobes_wait_file(fs->probes, f->kdev,
			     f->ino); /* its old links first: both would count */
	n = gp_uprobes_attach_file(fs->probes, 0, path, f->path, f->kdev, f->ino, elf, f->family,
				   &first);

	if (n < 0)
		return false;
	f->first_probe = first;
	f->nprobes = (size_t)n;
	f->armed = n > 0;
	for (size_t k = first; k < first + (size_t)n; k++) {
		const struct gp_probe *p = &fs->probes->v[k];

		gp_model_probe_add(fs->model, p->idx, p->target, 0, gp_apis[p->api].symbol,
				   p->offset, p->api);
	}
	if (f->armed) {
		fs->armed_total++;
		gp_notice("%d probes on %s%s", n, f->path,
			  f->is_static ? " (runtime linked statically)" : "");
	}
	return true;
}

struct gp_file *gp_files_classify(struct gp_files *fs, pid_t pid, const char *path,
				  const char *display, bool is_exe, const char **why)
{
	const struct gp_elf_syms *elf;
	struct gp_file *f, **nv;
	struct stat st, layer;

	*why = NULL;
	if (stat(path, &st)) {
		*why = strerror(errno);
		return NULL;
	}
	f = gp_files_find(fs, gp_kdev(st.st_dev), st.st_ino);
	if (f && f->failed)
		*why = "it could not be read or probed (said before)";
	if (f)
		return f->failed ? NULL : f;
	layer = st;
	probed_file(pid, display, &layer);
	f = find_probed(fs, gp_kdev(layer.st_dev), layer.st_ino);
	if (f) { /* another container's overlay over the same layer file: probed already */
		if (add_name(f, gp_kdev(st.st_dev), st.st_ino)) {
			*why = strerror(ENOMEM);
			return NULL;
		}
		tell_kernel_name(fs, f, &f->names[f->nnames - 1]);
		gp_info("%s (pid %d): the file probed as %s", display, (int)pid, f->path);
		return f;
	}
	f = calloc(1, sizeof(*f));
	if (!f || !(f->path = strdup(display)) || add_name(f, gp_kdev(st.st_dev), st.st_ino)) {
		file_free(f);
		*why = strerror(ENOMEM);
		return NULL;
	}
	f->kdev = gp_kdev(layer.st_dev);
	f->ino = layer.st_ino;
	f->family = gp_family_of_path(display);
	if (f->family || is_exe) {
		elf = gp_symbolizer_elf_file(fs->sym, path);
		if (!elf && f->family)
			*why = "not a readable ELF file";
		if (elf && !f->family && gp_elf_syms_find(elf, "cudaLaunchKernel") &&
		    gp_elf_syms_find(elf, "cudaMalloc")) {
			/* the CUDA runtime linked into the executable itself */
			f->family = GP_FAM_CUDART;
			f->is_static = true;
		}
		if (elf)
			gp_elf_build_id_hex(elf, f->build_id, sizeof(f->build_id));
		if (f->family && !*why && !arm(fs, f, path, elf))
			*why = "its probes could not be placed";
	}
	if (*why) {
		/*
		 * Remembered as looked at (nothing probed), so that the processes
		 * mapping it are not held again and again for a file we cannot use:
		 * the one message said so.
		 */
		f->family = 0;
		f->is_static = false;
		f->failed = true;
	}
	if (fs->n == fs->cap) {
		size_t nc = fs->cap ? 2 * fs->cap : 16;

		nv = realloc(fs->v, nc * sizeof(*nv));
		if (!nv) {
			file_free(f);
			*why = strerror(ENOMEM);
			return NULL;
		}
		fs->v = nv;
		fs->cap = nc;
	}
	fs->v[fs->n++] = f;
	tell_kernel(fs, f);
	return f->failed ? NULL : f;
}

static bool is_user(const struct gp_file *f, __u32 tgid)
{
	for (size_t i = 0; i < f->nusers; i++)
		if (f->users[i] == tgid)
			return true;
	return false;
}

int gp_files_add_user(struct gp_files *fs, struct gp_file *f, __u32 tgid)
{
	if (!f->armed || is_user(f, tgid))
		return 0;
	if (f->nusers == f->cap_users) {
		size_t nc = f->cap_users ? 2 * f->cap_users : 4;
		__u32 *nv = realloc(f->users, nc * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		f->users = nv;
		f->cap_users = nc;
	}
	f->users[f->nusers++] = tgid;
	gp_model_library_add(fs->model, tgid, f->path, f->family, f->is_static, f->build_id);
	return 0;
}

void gp_files_copy_users(struct gp_files *fs, __u32 parent, __u32 child)
{
	for (size_t i = 0; i < fs->n; i++)
		if (is_user(fs->v[i], parent))
			gp_files_add_user(fs, fs->v[i], child);
}

/* No traced process maps f any more: remove its probes and forget it. */
static void disarm(struct gp_files *fs, size_t i)
{
	struct gp_file *f = fs->v[i];

	gp_uprobes_detach_file(fs->probes, f->first_probe, f->nprobes, f->kdev, f->ino);
	gp_info("%s: last traced process gone, %zu probes removed", f->path, f->nprobes);
	fs->disarmed_total++;
	file_free(f);
	fs->v[i] = fs->v[--fs->n];
}

/*
 * Its last user left: from now on the kernel holds a traced process that
 * maps it (its entry is gone from lib_files), and the ones that mapped it
 * before are in the ring; gp_files_settle() decides after the next drain.
 */
static void retire(struct gp_files *fs, struct gp_file *f)
{
	for (size_t k = 0; k < f->nnames; k++)
		if (bpf_map_delete_elem(fs->map_fd, &f->names[k]) && errno != ENOENT)
			gp_warn("%s: cannot tell the kernel it has no traced user left (%s): a process "
				"mapping it next may run before its probes are checked",
				f->path, strerror(errno));
	f->retiring = true;
}

void gp_files_settle(struct gp_files *fs)
{
	for (size_t i = fs->n; i-- > 0;) {
		struct gp_file *f = fs->v[i];

		if (f->idle_since_ns &&
		    (f->nusers || now_ns() - f->idle_since_ns >= GP_FILES_LINGER_NS)) {
			f->idle_since_ns = 0;
			if (!f->nusers)
				retire(fs, f); /* settled at the next drain, as any other */
			continue;
		}
		if (!f->retiring)
			continue;
		f->retiring = false;
		if (f->nusers)
			tell_kernel(fs, f); /* a process mapped it meanwhile: it stays armed */
		else
			disarm(fs, i);
	}
}

void gp_files_drop_user(struct gp_files *fs, __u32 tgid)
{
	for (size_t i = fs->n; i-- > 0;) {
		struct gp_file *f = fs->v[i];

		for (size_t k = 0; k < f->nusers; k++) {
			if (f->users[k] != tgid)
				continue;
			f->users[k] = f->users[--f->nusers];
			if (f->nusers)
				break;
			if (fs->probes->multi || !f->armed)
				retire(fs, f);
			else
				f->idle_since_ns = now_ns(); /* GP_FILES_LINGER_NS */
			break;
		}
	}
}
