/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * files.h — every library file (and executable) the session has looked at,
 * once per file: its probes are placed once, for every process that maps it
 * (the BPF programs count only admitted processes), whatever path, version
 * or container it is reached through. The kernel's view (the lib_files map:
 * armed, or plain = nothing to probe) is kept in step, so that a process
 * mapping a file seen before is never held.
 *
 * A file's users are the traced processes that map it; when the last one is
 * gone, its probes are removed and it is forgotten (a later user holds and
 * arms it again).
 */
#ifndef GP_FILES_H
#define GP_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

#include "probes/uprobes.h"
#include "gpuprobed/events.h"
#include "gpuprobed/api.h"
#include "model/model.h"
#include "symbolize/symbolizer.h"

struct gp_file {
	/*
	 * The file the kernel probes (the kernel's encoding of its device): behind an
	 * overlay, its layer's file (overlay.h), which every container of the image shares.
	 */
	__u64 kdev, ino;
	/*
	 * What the kernel sees a process open and map (lib_files keys): the file itself,
	 * or an overlay's inode, one per overlay mount (container) that reaches it.
	 */
	struct gp_file_key *names;
	size_t nnames;
	char *path;	       /* as the first process to map it named it */
	enum gp_family family; /* 0: nothing to probe */
	bool is_static;	       /* the runtime linked into an executable or other ELF */
	char build_id
		[41]; /* hex GNU build-id, "" when none: the report and the capture name the exact build */
	bool armed;  /* its probes are in place */
	bool failed; /* could not be read or probed: kept as plain, not retried */
	bool retiring; /* its last user left: the kernel holds new mappers; settled at the next drain */
	__u64 idle_since_ns; /* perf-event probes kept after the last user left (GP_FILES_LINGER_NS); 0: none */
	size_t first_probe, nprobes;
	__u32 *users; /* traced processes mapping it */
	size_t nusers, cap_users;
};

struct gp_files {
	struct gp_file **v;
	size_t n, cap;
	int map_fd; /* lib_files */
	struct gp_uprobes *probes;
	struct gp_symbolizer *sym;
	struct gp_model *model;
	size_t armed_total;    /* files armed during the session, for the closing line */
	size_t disarmed_total; /* of which: probes removed when their last user left */
};

/*
 * With perf-event links (no uprobe_multi) a file's probes stay this long
 * after its last traced user left: removing and placing them again takes
 * the kernel seconds (~50 ms a link), and a process often maps the file
 * again at once (a parent after its workers, the next step of a job).
 * Until then a traced process that maps it is traced by them, unheld.
 */
#define GP_FILES_LINGER_NS (5 * 1000000000ull)

void gp_files_init(struct gp_files *fs, int map_fd, struct gp_uprobes *u, struct gp_symbolizer *sym,
		   struct gp_model *model);
void gp_files_release(struct gp_files *fs);
/*
 * After the ring buffer was drained: a file whose last user left since the
 * previous drain either got a new user meanwhile (it stays armed) or has
 * its probes removed now. Two steps because a process may map the file,
 * unheld, just before the last user's exit is seen: its mapping is in the
 * ring, read by that drain.
 */
void gp_files_settle(struct gp_files *fs);

/* The kernel's encoding of a device number (what lib_files and BPF use). */
__u64 gp_kdev(__u64 dev);

/* The file the kernel names kdev/ino when a process opens or maps it (one of its names), or NULL. */
struct gp_file *gp_files_find(struct gp_files *fs, __u64 kdev, __u64 ino);

/*
 * Looks at a file once (cached by dev/inode/mtime): path must open it (a
 * /proc/PID/fd/N, /proc/PID/map_files/... or /proc/PID/root/... path);
 * display names it as pid sees it. A file reached through another overlay
 * mount of a layer file looked at before is that file (a name more, no
 * probe more). An executable (is_exe) is armed when it carries the
 * CUDA runtime itself; a library when its name says which CUDA library it is
 * and it exports traced functions. The kernel learns the verdict. Returns
 * the record, or NULL with *why set (a short reason) when the file cannot
 * be read or probed; such a file is remembered as plain (found again by
 * gp_files_find, never probed, nobody held for it again).
 */
struct gp_file *gp_files_classify(struct gp_files *fs, pid_t pid, const char *path,
				  const char *display, bool is_exe, const char **why);

/* tgid maps file: a user from now on (its library row in the model too). */
int gp_files_add_user(struct gp_files *fs, struct gp_file *f, __u32 tgid);
/* child (a fork) maps everything parent does. */
void gp_files_copy_users(struct gp_files *fs, __u32 parent, __u32 child);
/* tgid is gone or exec'd: no longer a user; files left without users are disarmed. */
void gp_files_drop_user(struct gp_files *fs, __u32 tgid);

#endif
