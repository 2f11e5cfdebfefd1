/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * uprobe_multi.h — BPF uprobe_multi links (kernel >= 6.6) through the raw
 * bpf() syscall: libbpf 1.1 predates them, Debian's uapi headers too.
 *
 * Why: one perf-event uprobe link per function costs two file descriptors
 * and ~0.1 s to remove (each removal waits for its own RCU grace periods);
 * 50 functions took 10 s to detach here. A uprobe_multi link probes every
 * function of a file at once and is removed with one batched sync.
 */
#ifndef GP_UPROBE_MULTI_H
#define GP_UPROBE_MULTI_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

/* The attach type programs must be loaded with to use these links. */
#define GP_BPF_TRACE_UPROBE_MULTI 48

/*
 * Link prog_fd to cnt functions of the file at path (file offsets), each
 * with its cookie; return probes when retprobe. pid > 0 limits it to that
 * process (all its threads); 0 means every process. Returns the link fd
 * (close it to detach), or -errno.
 */
int gp_uprobe_multi_attach(int prog_fd, const char *path, const __u64 *offsets,
			   const __u64 *cookies, __u32 cnt, pid_t pid, bool retprobe);

/* Does this kernel have uprobe_multi links? Probed once, then cached. */
bool gp_uprobe_multi_supported(void);

#endif
