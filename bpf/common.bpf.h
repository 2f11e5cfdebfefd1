/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * common.bpf.h — what the BPF objects share: the per-thread stack of traced
 * calls in task storage (written by the API-call probes, annotated by the
 * scheduler probes), the loss counters, and small helpers. Every object that
 * includes it declares these maps; userspace makes them one map across
 * objects (bpf_map__reuse_fd) before loading.
 */
#ifndef GP_COMMON_BPF_H
#define GP_COMMON_BPF_H

#include <bpf/bpf_core_read.h>

#include "gpuprobed/events.h"

/*
 * What this kernel lacks, set by userspace before the load from what it
 * probed (src/probes/kernel_features.c): each is a read-only constant, so
 * the verifier follows only the branch this kernel can run and never sees
 * the other's helpers or map types (one source for every kernel, no copy
 * per kernel). What a kernel refuses even in code that never runs — a
 * bpf_loop callback before 5.13, a BPF_ATOMIC instruction before 5.12 — is
 * in a program of its own instead, of which userspace loads one
 * (gpu_api.bpf.c gp_api_exit_no_loop, sched.bpf.c gp_sched_switch_no_fetch).
 * The stand-ins:
 *  - no_task_btf (bpf_get_current_task_btf, 5.11): the current task as a
 *    plain address, its fields read with bpf_probe_read_kernel;
 *  - no_task_storage (5.11): task_state becomes a hash by thread id, its
 *    entry checked against the thread's start time and deleted at the
 *    thread's exit (sched.bpf.c thread_done);
 *  - no_attach_cookie (5.15): the probe found by its address (gpu_api.bpf.c).
 */
#define GP_EEXIST 17 /* errno.h: a macro, not in BTF */

const volatile bool no_task_btf = false;
const volatile bool no_task_storage = false;
const volatile bool no_attach_cookie = false;

/* One traced call in progress on a thread. */
struct gp_frame {
	__u64 ts; /* entry time */
	__u64 sp; /* stack pointer at entry: matches the return */
	__u64 cookie;
	__u32 flags;	    /* GP_EVF_* known at entry */
	__u32 vol_switches; /* context switches of the thread during the call (sched.bpf.c) */
	__u32 invol_switches;
	__u32 pad;
	__u64 offcpu_ns; /* time the thread spent off-CPU during the call (sched.bpf.c) */
	__u64 min_flt0;	 /* the task's fault counters at entry */
	__u64 maj_flt0;
	__u64 args[GP_MAX_ARGS];
};

/* Where a native stack walk is (bpf/unwind.bpf.h): kept in task storage, not on the program's stack. */
struct gp_uw_walk_state {
	__u64 pc, sp, bp;
	__u64 page_base, page_len; /* the part of the stack copied into stack_page */
	__u64 map_start, map_end,
		map_bias; /* the last mapping found: callers are often in the same file */
	__u32 map_file;
	__u32 gen; /* the process's gp_uw_proc.gen */
	__u32 n;   /* frames written */
	__s32 err;
	__u8 stop, detail;
	__u8 bp_ok; /* bp holds the frame's rbp (an earlier row could not restore it otherwise) */
	__u8 fp_frames;
};

/*
 * A thread's cache of the rows its walks used, by return address: a loop's
 * calls come from the same call sites, whose rows are then found in one look
 * instead of two binary searches. gen: the process's gp_uw_proc.gen then.
 */
struct gp_uw_cached_row {
	__u64 pc;
	__u32 gen;
	__u32 pad;
	struct gp_uw_row row;
};
#define GP_UW_CACHE 64 /* per thread, direct-mapped */

/* Where a Python walk is (unwind.bpf.h py_step): kept in task storage, as the native walk's. */
struct gp_py_walk_state {
	__u64 frame; /* the next frame to read */
	__u64 hash;  /* of the code objects written */
	__u32 base;  /* words[] index of the first Python frame */
	__u32 n;     /* Python frames written */
	__s32 err;
	__u8 status; /* enum gp_py_status */
	__u8 pad[3];
};

struct gp_task_state {
	__u32 depth;	  /* live frames */
	__u32 overflowed; /* entries not recorded for lack of a frame; their returns are expected */
	struct gp_frame frames[GP_MAX_DEPTH];
	/*
	 * A record with a stack is assembled here, then copied into the ring at
	 * its real size. Per thread, not per CPU: uprobe programs can be
	 * preempted, and another thread's on this CPU would overwrite it.
	 */
	struct gp_api_call_ustack stack_rec;
	/* the stack walk copies the user stack a page at a time (+ room for a frame read at its end) */
	__u8 stack_page[4096 + 16];
	/* a hash of the code objects of the thread's last Python stack: the same again needs no look in py_codes */
	__u64 py_hash;
	struct gp_uw_walk_state walk;
	struct gp_uw_cached_row uw_cache[GP_UW_CACHE];
	/* the registry's time of the hold on stack_rec (GP_EVF_PY_HELD): taken back if unrecorded */
	__u64 py_hold_ns;
	struct gp_py_walk_state pywalk;
	/* no_task_storage: the thread's start time (task_struct.start_time): a reused thread id starts afresh */
	__u64 task_start;
};

_Static_assert((GP_MAX_DEPTH & (GP_MAX_DEPTH - 1)) == 0, "GP_MAX_DEPTH must be a power of two");

/* A hash by thread id where the kernel has no task storage (no_task_storage: set by userspace). */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct gp_task_state);
} task_state SEC(".maps");

/* no_task_storage: what a new thread's state starts from (too big for the stack); never written. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gp_task_state);
} task_state_zero SEC(".maps");

/*
 * Per process with unwind tables: where its published mappings are (uw_maps, unwind.bpf.h). Shared:
 * procs.bpf.c zeroes gen at a code mapping of the process, so that no walk uses the mappings
 * published before it (the new code may sit where an unmapped file's was) until userspace
 * publishes them again with a new gen.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GP_UW_MAX_PROCS);
	__type(key, __u32); /* tgid */
	__type(value, struct gp_uw_proc);
} uw_procs SEC(".maps");

/* Every record for userspace, in one global order. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20); /* resized by userspace */
} events SEC(".maps");

/* Per-CPU, indexed by enum gp_bpf_drop; userspace sums over CPUs. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, GP_BPF_DROP_MAX);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/*
 * Bit (tgid % 64) of word (tgid / 64): the admitted (traced) processes.
 * Sized from pid_max by userspace. Every probe tests it first.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} tgid_bits SEC(".maps");

/* When each process admitted after the session started was admitted (its CPU window opens). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u64);
} admit_ns SEC(".maps");

/* What the session wants (struct gp_scope), written by userspace before attaching. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gp_scope);
} scope SEC(".maps");

/* Library files userspace has looked at (enum gp_file_state); absent: never seen. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct gp_file_key);
	__type(value, __u32);
} lib_files SEC(".maps");

/* Live threads of traced processes (CPU accounts, sched.bpf.c; opened at exec by procs.bpf.c). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct gp_thread_key);
	__type(value, struct gp_thread_acct);
} thread_acct SEC(".maps");

/*
 * The registry of holds (struct gp_hold in events.h): an entry written before
 * each SIGSTOP, deleted by userspace once it has sent the SIGCONT that ends it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GP_HOLDS_MAX);
	__type(key, struct gp_hold_key);
	__type(value, struct gp_hold);
} holds SEC(".maps");

static __always_inline struct gp_thread_key key_of(struct task_struct *t)
{
	struct gp_thread_key k = { .tid = t->pid, .start_time = t->start_time };

	return k;
}

/* The current task: a BTF pointer, or (no_task_btf) an address to read through BPF_CORE_READ only. */
static __always_inline struct task_struct *current_task(void)
{
	if (no_task_btf)
		return (struct task_struct *)bpf_get_current_task();
	return bpf_get_current_task_btf();
}

/*
 * t's traced-call state (current_task() or a tracepoint's task), created
 * when asked; NULL when it has none (or none could be made).
 */
static __always_inline struct gp_task_state *task_state_of(struct task_struct *t, bool create)
{
	struct gp_task_state *st;
	__u64 start;
	__u32 tid, zero = 0;
	void *z;

	if (!no_task_storage)
		return bpf_task_storage_get(&task_state, t, 0,
					    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	tid = BPF_CORE_READ(t, pid);
	start = BPF_CORE_READ(t, start_time);
	st = bpf_map_lookup_elem(&task_state, &tid);
	if (st && st->task_start == start)
		return st;
	if (!create)
		return NULL;
	/* none yet, or a thread gone that had this id (its exit unseen): start afresh */
	z = bpf_map_lookup_elem(&task_state_zero, &zero);
	if (!z || bpf_map_update_elem(&task_state, &tid, z, BPF_ANY))
		return NULL;
	st = bpf_map_lookup_elem(&task_state, &tid);
	if (st)
		st->task_start = start;
	return st;
}

static __always_inline void count_n(void *map, __u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(map, &idx);

	if (v)
		*v += n; /* per-CPU: no atomics needed */
}

static __always_inline void count(void *map, __u32 idx)
{
	count_n(map, idx, 1);
}

static __always_inline bool traced(__u32 tgid)
{
	__u32 word = tgid >> 6;
	__u64 *bits = bpf_map_lookup_elem(&tgid_bits, &word);

	return bits && ((*bits >> (tgid & 63)) & 1);
}

/*
 * Admits tgid from now on; false when pid_max was raised past the bitmap, or
 * when another admission of it is under way. The bit is set by an atomic add
 * (an atomic or is BPF_ATOMIC, 5.12, and a kernel before it refuses a
 * program that holds one, even where it never runs): only the admission
 * that creates tgid's admit_ns entry adds it, so it is never added twice.
 */
static __always_inline bool admit(__u32 tgid, __u64 now)
{
	__u32 word = tgid >> 6;
	__u64 *bits = bpf_map_lookup_elem(&tgid_bits, &word);

	if (!bits)
		return false;
	/* another admission's (or userspace's); a full map (the time unknown) does not stop this one */
	if (bpf_map_update_elem(&admit_ns, &tgid, &now, BPF_NOEXIST) == -GP_EEXIST)
		return (*bits >> (tgid & 63)) & 1;
	if (!((*bits >> (tgid & 63)) & 1))
		__sync_fetch_and_add(bits, 1ull << (tgid & 63));
	return true;
}

/* A process gone whose pid comes back (sched_process_fork: one at a time for a pid). */
static __always_inline void unadmit(__u32 tgid)
{
	__u32 word = tgid >> 6;
	__u64 *bits = bpf_map_lookup_elem(&tgid_bits, &word);

	bpf_map_delete_elem(&admit_ns, &tgid);
	if (bits && ((*bits >> (tgid & 63)) & 1))
		__sync_fetch_and_add(bits, -(1ull << (tgid & 63)));
}

static __always_inline struct gp_scope *session_scope(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&scope, &zero);
}

/* gpuprobed's own tgid (the owner of its holds); 0 before the scope is written */
static __always_inline __u32 session_self(void)
{
	struct gp_scope *sc = session_scope();

	return sc ? sc->self_tgid : 0;
}

#define GP_SIGSTOP 19
#define GP_SIGCONT 18

/*
 * Stops the current process (t; delivered when it next returns to user
 * mode), recorded first in the registry: false (nothing sent, nothing
 * recorded) when either step fails. self_tgid: the gpuprobed that holds it.
 */
static __always_inline bool hold_current(struct task_struct *t, __u32 reason, __u64 now,
					 __u32 self_tgid, __u64 dev, __u64 ino)
{
	struct gp_hold_key k = { .tgid = BPF_CORE_READ(t, tgid), .held_ns = now };
	struct gp_hold h = { .reason = reason, .owner_tgid = self_tgid, .dev = dev, .ino = ino };

	/* the leader's (a thread's own differs): what /proc/PID/stat shows as the start time */
	h.start_boottime = BPF_CORE_READ(t, group_leader, start_boottime);
	if (bpf_map_update_elem(&holds, &k, &h, BPF_ANY))
		return false;
	if (bpf_send_signal(GP_SIGSTOP)) {
		bpf_map_delete_elem(&holds, &k);
		return false;
	}
	return true;
}

/* A hold taken back before anyone was told of it: the SIGCONT discards the pending SIGSTOP. */
static __always_inline void hold_cancel(__u32 tgid, __u64 held_ns)
{
	struct gp_hold_key k = { .tgid = tgid, .held_ns = held_ns };

	bpf_send_signal(GP_SIGCONT);
	bpf_map_delete_elem(&holds, &k);
}

/*
 * Tells userspace about a process; false when the ring is full. With
 * GP_PF_HELD the current process is stopped first (delivered when it next
 * returns to user mode) and userspace woken at once; the record is reserved
 * before the signal is sent, so a process is never stopped without
 * userspace being told to continue it.
 */
static __always_inline bool proc_event(struct task_struct *t, __u32 kind, __u32 flags, __u32 parent,
				       __u64 dev, __u64 ino, __s32 fd, __u64 now)
{
	struct gp_proc_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		count(&drops, (flags & GP_PF_HELD) ? GP_DROP_HOLD_LOST : GP_DROP_PROC_LOST);
		return false;
	}
	if ((flags & GP_PF_HELD) &&
	    !hold_current(t, kind == GP_PROC_EXEC ? GP_HOLD_EXEC : GP_HOLD_MAP, now, session_self(),
			  dev, ino)) {
		flags &= ~GP_PF_HELD;
		count(&drops, GP_DROP_HOLD_LOST);
	}
	e->hdr.type = GP_EV_PROC;
	e->hdr.size = sizeof(*e);
	e->hdr.tgid = BPF_CORE_READ(t, tgid); /* t may be a plain address (current_task) */
	e->hdr.tid = BPF_CORE_READ(t, pid);
	e->hdr.flags = flags;
	e->hdr.ts_ns = now;
	e->kind = kind;
	e->parent_tgid = parent;
	e->dev = dev;
	e->ino = ino;
	e->fd = fd;
	e->pad = 0;
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), t->comm);
	/* a held process waits for userspace: wake it now */
	bpf_ringbuf_submit(e, (flags & GP_PF_HELD) ? BPF_RB_FORCE_WAKEUP : 0);
	return true;
}

/*
 * The frame index, masked where the verifier can see it: without the
 * barrier clang drops the mask once it has proven depth < GP_MAX_DEPTH on
 * another register, and the verifier rejects the access.
 */
static __always_inline struct gp_frame *frame_at(struct gp_task_state *st, __u32 i)
{
	asm volatile("" : "+r"(i));
	return &st->frames[i & (GP_MAX_DEPTH - 1)];
}

/* The innermost traced call task is in, or NULL. */
static __always_inline struct gp_frame *current_call(struct task_struct *task)
{
	struct gp_task_state *st = task_state_of(task, false);

	if (!st || !st->depth || st->depth > GP_MAX_DEPTH)
		return NULL;
	return frame_at(st, st->depth - 1);
}

#endif
