/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * fds.h — what a process gpuprobed forks keeps of its descriptors.
 *
 * The helpers gpuprobed forks (the resumer of held processes, the remover
 * of perf-event probes) must hold only what they work on: an inherited BPF
 * program keeps it loaded, an inherited pipe's write end keeps whoever
 * reads gpuprobed's output from seeing its end. Called in a forked child
 * of a process with threads: system calls only, no allocation.
 */
#ifndef GPUPROBED_ATTACH_FDS_H
#define GPUPROBED_ATTACH_FDS_H

#include <stddef.h>

/*
 * Closes every descriptor from `from` up but keep[0..n) (sorted in place;
 * negative ones ignored); one by one where close_range is refused (a
 * seccomp filter).
 */
void gp_fds_close_all_but(int *keep, size_t n, int from);

#endif
