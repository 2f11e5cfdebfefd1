/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * proc_maps.h — a snapshot of /proc/PID/maps, kept after the process is gone
 * so that its addresses can still be symbolized and its libraries named.
 */
#ifndef GP_PROC_MAPS_H
#define GP_PROC_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

struct gp_map {
	__u64 start, end; /* [start, end) in the process */
	__u64 offset;	  /* file offset of start */
	__u64 dev;	  /* makedev(major, minor) of the backing file */
	__u64 inode;	  /* 0 for anonymous mappings */
	bool exec;	  /* 'x' in perms */
	const char *path; /* "" for anonymous; "[heap]", "/usr/lib/...", "... (deleted)" */
};

struct gp_maps {
	pid_t pid;
	struct gp_map *v; /* sorted by start, as the kernel prints them */
	size_t n;
	char *paths; /* pool behind every path */
};

/* Reads /proc/PID/maps. 0 or -errno (-ESRCH when the process is gone). */
int gp_maps_read(pid_t pid, struct gp_maps **out);
/* Parses maps text (unit tests, captures). 0 or -errno. */
int gp_maps_parse(pid_t pid, const char *text, size_t len, struct gp_maps **out);
/* A copy of from for process pid (a fork starts with its parent's mappings). 0 or -errno. */
int gp_maps_dup(const struct gp_maps *from, pid_t pid, struct gp_maps **out);
void gp_maps_free(struct gp_maps *m);

/* The mapping that contains addr, or NULL. */
const struct gp_map *gp_maps_find(const struct gp_maps *m, __u64 addr);

/*
 * The whole of a file (a /proc file: its size is unknown until read), NUL
 * terminated, malloc'ed; *len (may be NULL) its length, which may hold NULs.
 * NULL + errno on failure.
 */
char *gp_read_whole_file(const char *path, size_t *len);

/*
 * A path that opens the very file m maps in pid: /proc/PID/map_files/...
 * (deleted or replaced files too), else /proc/PID/root/<path> (containers).
 */
void gp_mapped_file_path(pid_t pid, const struct gp_map *m, char *buf, size_t len);

#endif
