/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * overlay.h — the file the kernel probes behind an overlayfs path.
 *
 * A uprobe placed through a path sits on the inode under the overlay (the
 * layer's own file), while the file a process opens and maps through an
 * overlay mount is the overlay's, named by that mount's device: containers
 * of one image reach one layer file through one overlay mount each. So a
 * library is identified by its layer file, found the way the overlay finds
 * it: in the mount's upper directory, then in each lower one, topmost first
 * (the mount's options in the process's /proc/PID/mountinfo).
 */
#ifndef GP_OVERLAY_H
#define GP_OVERLAY_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#define GP_OVERLAY_MAX_LAYERS 128

/* The fields of one /proc/PID/mountinfo line this needs (escapes undone). */
struct gp_mount {
	unsigned major, minor;
	char root[4096];  /* the mount's root within its file system */
	char point[4096]; /* where it is mounted, in the reader's namespace */
	char fstype[32];
	char super[8192]; /* the file system's own options (super options) */
};

/* Parses one mountinfo line; 0, or -EINVAL when it is not one. */
int gp_mountinfo_parse(const char *line, struct gp_mount *m);

/*
 * The layer directories of an overlay's super options, topmost first:
 * upperdir, then lowerdir's entries (':' between them, "::" before data-only
 * layers, '\:' a colon within a path). Returns how many went into layers
 * (each of len bytes), at most max.
 */
int gp_overlay_layers(const char *super, char (*layers)[4096], int max);

/*
 * For a file stat'd as *st through a path that pid's mount namespace names
 * ns_path: when it lies on an overlay, *st becomes its layer file's stat (an
 * overlay over an overlay is followed) and real (len bytes) that file's path
 * on this machine. Returns 1 then, 0 when the file is not on an overlay, or
 * -errno when its layer file cannot be found or does not match (*st
 * unchanged).
 */
int gp_overlay_real_file(pid_t pid, const char *ns_path, struct stat *st, char *real, size_t len);

/*
 * The layers of a process's root overlay, kept to find its files when it
 * is gone (a container's files are not on this machine's paths, and its
 * /proc/PID/root goes with it): NULL when its root is not an overlay.
 */
struct gp_overlay_root;
struct gp_overlay_root *gp_overlay_root_of(pid_t pid);
struct gp_overlay_root *gp_overlay_root_dup(const struct gp_overlay_root *r);
void gp_overlay_root_free(struct gp_overlay_root *r);
/* The layer file that holds path (as the process named it) into out; 0 or -ENOENT. */
int gp_overlay_root_find(const struct gp_overlay_root *r, const char *path, char *out, size_t len);

#endif
