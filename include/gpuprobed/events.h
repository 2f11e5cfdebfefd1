/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * events.h — the BPF <-> userspace ABI: every record that crosses the ring
 * buffer (and, later, the capture file), every loss counter, and the layout
 * of the attach cookie. Fixed-width fields only; sizes are pinned with
 * _Static_assert so that a change here is a deliberate ABI change.
 *
 * Included by BPF programs (after vmlinux.h) and by userspace (after
 * <linux/types.h>).
 */
#ifndef GPUPROBED_EVENTS_H
#define GPUPROBED_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define GP_ABI_VERSION 1

/* ---- records ----------------------------------------------------------- */

enum gp_event_type {
	GP_EV_API_CALL = 1, /* struct gp_api_call: one completed traced call */
	GP_EV_TYPE_MAX,
};

/* Common header of every record. ts_ns is CLOCK_MONOTONIC (bpf_ktime_get_ns). */
struct gp_event_hdr {
	__u16 type;  /* enum gp_event_type */
	__u16 size;  /* whole record, header included */
	__u32 tgid;  /* process id */
	__u32 tid;   /* thread id */
	__u32 flags; /* GP_EVF_* */
	__u64 ts_ns;
};

/* Number of argument slots carried with an API call (see api.h for meaning). */
#define GP_MAX_ARGS 8

/*
 * One completed call of a traced API, emitted by the return probe.
 * hdr.ts_ns is the entry time; dur_ns is host-observed time in the call.
 * args[0..5] are rdi, rsi, rdx, rcx, r8, r9 at entry; args[6..7] and the
 * other shape-specific slots are described by the API's shape in api.h.
 */
struct gp_api_call {
	struct gp_event_hdr hdr;
	__u64 dur_ns;
	__u64 ret_addr; /* where the call returns to: the calling site */
	__u64 out;      /* value stored through the out-pointer argument, if any */
	__s32 ret;      /* return value (cudaError_t / CUresult / ncclResult_t) */
	__u16 api;      /* enum gp_api_id */
	__u16 probe;    /* index of the probe pair that saw it (instrumentation row) */
	__u64 args[GP_MAX_ARGS];
};

/* gp_event_hdr.flags */
#define GP_EVF_OUT_VALID    (1u << 0) /* gp_api_call.out was read successfully */
#define GP_EVF_ARGS_PARTIAL (1u << 1) /* a user-memory argument read failed */

_Static_assert(sizeof(struct gp_event_hdr) == 24, "gp_event_hdr layout");
_Static_assert(sizeof(struct gp_api_call) == 120, "gp_api_call layout");

/* ---- attach cookie ------------------------------------------------------ */
/*
 * Every uprobe/uretprobe carries a 64-bit cookie so that one generic BPF
 * program serves every API:  bits 0..15 api id, 16..31 probe index,
 * 32..47 GP_CK_* flags that tell the program what to read beyond registers.
 */
#define GP_CK_STACK2     (1u << 0) /* args[6..7] = the two u64 at [sp+8], [sp+16] */
#define GP_CK_LAUNCH_CFG (1u << 1) /* args[3..7] = 40 bytes of *(cudaLaunchConfig_t *)args[0] */
#define GP_CK_OUT_ARG0   (1u << 2) /* at return, out = *(u64 *)args[0] when ret == 0 */

#define GP_COOKIE(api, probe, flags) \
	((__u64)(__u16)(api) | ((__u64)(__u16)(probe) << 16) | ((__u64)(__u16)(flags) << 32))
#define GP_COOKIE_API(c)   ((__u16)((c) & 0xffff))
#define GP_COOKIE_PROBE(c) ((__u16)(((c) >> 16) & 0xffff))
#define GP_COOKIE_FLAGS(c) ((__u16)(((c) >> 32) & 0xffff))

/* Probe indexes index the in-kernel hit counters. */
#define GP_MAX_PROBES 4096

/* ---- loss counters kept in the kernel ----------------------------------- */
/* Per-CPU array map "drops", indexed by these. Userspace sums over CPUs. */
enum gp_bpf_drop {
	GP_DROP_RINGBUF_FULL = 0,  /* completed call not recorded: ring buffer full */
	GP_DROP_DEPTH_OVERFLOW,    /* call not recorded: too many nested traced calls on one thread */
	GP_DROP_MISSED_RETURN,     /* entry seen, its return never seen (longjmp, detach mid-call) */
	GP_DROP_RETURN_NO_ENTRY,   /* return seen without its entry (call began before attach) */
	GP_DROP_TASK_STORAGE,      /* per-thread state could not be allocated */
	GP_DROP_ARG_READ,          /* a user-memory argument could not be read (record flagged) */
	GP_BPF_DROP_MAX,
};

/* Maximum traced calls nested on one thread (runtime -> driver -> ...). */
#define GP_MAX_DEPTH 4

#endif /* GPUPROBED_EVENTS_H */
