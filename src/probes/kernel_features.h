/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kernel_features.h — what this kernel offers the BPF programs, probed at
 * start (never guessed from its version): each feature gpuprobed uses, the
 * oldest Linux that has it, and what stands in where one is missing and
 * can be replaced (uprobe_multi links by one perf-event link per probe;
 * the BPF programs' stand-ins, bpf/common.bpf.h, down to Linux 5.10).
 * A missing feature that nothing replaces is one line naming it and the
 * kernel that has it; nothing is attached (exit 2).
 */
#ifndef GP_KERNEL_FEATURES_H
#define GP_KERNEL_FEATURES_H

#include <stdbool.h>
#include <stddef.h>

enum gp_kfeature {
	GP_KF_BTF,	     /* /sys/kernel/btf/vmlinux: CO-RE relocations, tp_btf */
	GP_KF_RING_BUFFER,   /* BPF_MAP_TYPE_RINGBUF */
	GP_KF_TASK_BTF,	     /* bpf_get_current_task_btf: the current task's fields read directly */
	GP_KF_TASK_STORAGE,  /* BPF_MAP_TYPE_TASK_STORAGE: a traced thread's state */
	GP_KF_ATOMICS,	     /* BPF_ATOMIC fetch-add: --timeline-sched's on-CPU counts */
	GP_KF_ATTACH_COOKIE, /* bpf_get_attach_cookie: which probe fired */
	GP_KF_BPF_LOOP,	     /* bpf_loop: the stack walks */
	GP_KF_UPROBE_MULTI,  /* uprobe_multi links: a file's probes in one link */
	GP_KF_N
};

#define GP_KF_PARANOID_UNKNOWN (-1000)

struct gp_kernel_features {
	bool has[GP_KF_N];
	bool replaced[GP_KF_N];	  /* missing (or not wanted: --no-uprobe-multi) and stood in for */
	bool by_request[GP_KF_N]; /* replaced because an option asked */
	int perf_event_paranoid;  /* kernel.perf_event_paranoid; GP_KF_PARANOID_UNKNOWN: unknown */
	bool switch_prev_state; /* sched_switch passes prev_state (Linux 5.18): the tracepoint's BTF */
};

/* Its name in report.json ("ring_buffer"), the oldest Linux that has it ("5.8"). */
const char *gp_kfeature_name(enum gp_kfeature f);
const char *gp_kfeature_since(enum gp_kfeature f);
/* What stands in for a replaceable feature, and what that costs; NULL: nothing can. */
const char *gp_kfeature_replacement(enum gp_kfeature f);
const char *gp_kfeature_cost(enum gp_kfeature f);

/*
 * Probes the running kernel (loads a few tiny programs and maps, so after
 * the privileges check). no_uprobe_multi: the option of that name.
 * 0; or -EOPNOTSUPP after one line naming the first missing feature that
 * nothing replaces, and the oldest kernel that has it.
 */
int gp_kernel_features_probe(struct gp_kernel_features *kf, bool no_uprobe_multi);

/* "btf,ring_buffer,...": the features this session uses, into buf. */
void gp_kernel_features_used(const struct gp_kernel_features *kf, char *buf, size_t len);

/*
 * With kernel.perf_event_paranoid above 2 (Debian's and Ubuntu's default:
 * 3, their own patch), perf_event_open needs CAP_SYS_ADMIN, which the
 * perf-event uprobes and the mmap tracepoint use: 0 where that is no
 * obstacle (sys_admin: CAP_SYS_ADMIN is effective), else -EPERM after one
 * line saying what to grant or set.
 */
int gp_kernel_perf_events_allowed(const struct gp_kernel_features *kf, bool sys_admin);

#endif
