/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * uprobes.h — placing and removing the probe pairs (entry uprobe + return
 * uretprobe) of every API of a family on one library file, by file offset
 * from the file's symbol index (never by name: libbpf would re-parse the ELF
 * for each symbol). Aliases at one address are probed once. Every probe is
 * recorded so that reports list exactly what was touched, and detach leaves
 * nothing behind.
 *
 * Two mechanisms: uprobe_multi links (one pair of links per file, kernel
 * >= 6.6; the programs must be loaded with that attach type) or, on older
 * kernels, one perf-event link per function and direction. A file's probes
 * are consecutive records and can be removed on their own (when the last
 * process using the file is gone).
 *
 * Gating (an overhead budget, src/collect/duty.h): the hot probes of a file
 * (those whose calls the kernel aggregates) are placed as their own links,
 * after the others, and can be removed and placed again while the rest stay;
 * the file is reopened through a descriptor kept for that, so a gate opens
 * even when the process whose path named the file is gone.
 *
 * Behind it: uprobes.c (placing, the gate, the cost of a hit),
 * probe_removal.c (detaching: from threads at once, in the background, by
 * processes of their own at the session's end); uprobes_internal.h between
 * them.
 */
#ifndef GP_UPROBES_H
#define GP_UPROBES_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

#include "gpuprobed/api.h"
#include "symbolize/elf_syms.h"

struct bpf_program;
struct bpf_link;

struct gp_probe {
	unsigned idx; /* cookie probe index; hit counters [2*idx], [2*idx+1] */
	enum gp_api_id api;
	pid_t pid;	 /* 0: every process that maps the file */
	char *target;	 /* the library's path as the process maps it */
	__u64 offset;	 /* file offset of the function */
	__u64 kdev, ino; /* the file the kernel probes (files.h: behind an overlay, its layer's) */
	struct bpf_link *enter, *exit; /* perf-event mechanism only */
	int multi_fd
		[2]; /* uprobe_multi links (entry, return) of the file's group, on its first probe; else -1 */
	bool attached; /* in place (a gated probe: its file is armed, the links maybe not: gate) */
	bool gated;    /* a hot probe: in place only while the gate is open */
	int file_fd;   /* the first gated probe of a file: the file, to place them again; else -1 */
	unsigned
		ngated; /* on that first gated probe: the file's gated probes (it and the next ones) */
};

struct gp_reaper;

struct gp_uprobes {
	bool multi;	/* uprobe_multi links */
	bool stacks;	/* GPU-work calls carry their caller's user stack (GP_CK_USTACK) */
	bool aggregate; /* aggregatable calls are counted in the kernel (GP_CK_AGG) */
	bool gating;	/* the aggregated probes are gated (set before the first attach) */
	bool gate_open; /* the gated probes are in place now */
	struct bpf_program *enter_prog, *exit_prog;
	struct gp_probe *v;
	size_t n, cap;
	size_t nattached; /* probe pairs in place now */
	struct gp_reaper *
		reaper; /* removes files' perf-event links in the background (probe_removal.c); NULL: none yet */
	int sites_fd; /* kernels without attach cookies: gpu_api.bpf.c's probe_sites; else -1 */
};

/*
 * sites_fd: where the kernel has no attach cookies, the map through which
 * the programs find a probe's cookie by its site (-1 where it has them).
 */
void gp_uprobes_init(struct gp_uprobes *u, struct bpf_program *enter_prog,
		     struct bpf_program *exit_prog, bool multi, int sites_fd);

/*
 * Probe every API of family found in elf. attach_path is how the kernel can
 * open the file (/proc/PID/map_files/<range> or /proc/PID/root/<path>); display_path names it in
 * reports and messages; kdev/ino is the file the kernel probes through it (files.h). pid 0 probes every process. Returns the number of
 * probe pairs placed (0 when the file exports none of them), or -errno
 * after a message when they could not be placed. *first is the index of the
 * file's first probe record.
 */
int gp_uprobes_attach_file(struct gp_uprobes *u, pid_t pid, const char *attach_path,
			   const char *display_path, __u64 kdev, __u64 ino,
			   const struct gp_elf_syms *elf, enum gp_family family, size_t *first);

/*
 * Whether api's calls can be counted in the kernel (--aggregate): its record
 * feeds only counts, times, errors, CPU attribution and the per-layer work
 * counts, or detail the aggregated mode gives up (kernel names, per-stream
 * work and synchronisation). Nothing that changes state userspace tracks:
 * its shape's "agg" (api.h).
 */
bool gp_uprobes_aggregatable(enum gp_api_id api);

/*
 * Opens the gate (places the gated probes of every armed file; a file armed
 * while it is open gets them at once) or closes it (removes them). A call
 * running when its return probe goes, or entered just before it came, is
 * counted by the kernel as duty_cut. Returns 0, or -errno after a message
 * for the first file that failed (the others are still done; a file that
 * failed stays without its gated probes until the next opening).
 */
int gp_uprobes_gate(struct gp_uprobes *u, bool open);

/*
 * What a probe hit costs on this machine, in ns: the session's own programs
 * placed on a function of gpuprobed itself (not a traced process, so they
 * stop at their first check: the kernel's uprobe machinery is what is
 * timed), the same calls timed with and without them. -errno when it could
 * not be measured (-ERANGE: the probed calls were not slower). Takes ~0.1 s.
 */
double gp_uprobes_measure_hit_ns(struct gp_uprobes *u);

/*
 * What a call of a function probed as api (with this session's cookie:
 * stacks, aggregation) costs the calling thread more than unprobed, in ns,
 * on the same function of gpuprobed itself; idx is the probe index its
 * hits are counted under. Whether the programs do their work (the caller
 * admitted gpuprobed's own process) or stop at their first check is the
 * caller's. -errno as gp_uprobes_measure_hit_ns.
 */
double gp_uprobes_measure_call_ns(struct gp_uprobes *u, enum gp_api_id api, unsigned idx);

/* Remove the probes [first, first + n) (one file's); the records stay. */
void gp_uprobes_detach(struct gp_uprobes *u, size_t first, size_t n);

/*
 * The same for a file whose last traced process is gone (dev/ino: the
 * kernel's names for it): perf-event links are removed in the background
 * (seconds for a library), uprobe_multi links here.
 */
void gp_uprobes_detach_file(struct gp_uprobes *u, size_t first, size_t n, __u64 dev, __u64 ino);
/* Returns once no link of that file is left to remove in the background (before probing it again). */
void gp_uprobes_wait_file(struct gp_uprobes *u, __u64 dev, __u64 ino);

/* Remove every probe (the kernel drops the breakpoints); the records stay. */
void gp_uprobes_detach_all(struct gp_uprobes *u);

/*
 * The same at the session's end, without waiting for the kernel where it
 * removes links one at a time (perf-event links: probe_removal.c says why):
 * processes of their own (GP_REMOVER_COMM, up to 16, each a share) remove
 * them after the session. Returns the first one's pid; 0 when they are gone
 * already (uprobe_multi links, a few probes, or no process could start:
 * said).
 */
#define GP_REMOVER_COMM "gpuprobed-rm"
pid_t gp_uprobes_detach_all_in_background(struct gp_uprobes *u);

/* Detach what is still attached and free the bookkeeping. */
void gp_uprobes_release(struct gp_uprobes *u);

#endif
