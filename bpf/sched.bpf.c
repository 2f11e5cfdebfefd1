// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sched.bpf.c — the CPU accounts of the threads of traced processes, kept in
 * the kernel: on-CPU and off-CPU time and context switches from
 * sched_switch, new threads from sched_process_fork, and at each thread's
 * last switch its final account (with its fault counters) as one record.
 *
 * The scheduler tracepoint fires for every task on the machine: the first
 * thing done is one array lookup and a bit test per side (tgid_bits), so an
 * untraced switch costs next to nothing beyond the tracepoint itself.
 *
 * On-CPU time is the task's own clock (se.sum_exec_runtime, which the
 * scheduler brings up to date just before this tracepoint): what schedstat,
 * getrusage and CLOCK_THREAD_CPUTIME_ID count, without the time a hypervisor
 * steals from the vCPU. It is taken between consecutive switch-outs, so it
 * stays exact even when a switch-in is not reported: on some virtualized
 * kernels the tracepoint does not fire for every arrival (the kernel's own
 * ftrace event misses it too). Off-CPU time is wall time from switch-out to
 * switch-in; after an arrival that was not reported it is estimated as the
 * wall time since the last switch-out minus the CPU time since then, and
 * counted (switch_in_unseen); a call gets the part of it after its entry.
 *
 * A switch is voluntary or involuntary exactly as the kernel counts it: the
 * kernel increments prev->nvcsw or prev->nivcsw just before this
 * tracepoint, so the counter that moved since the thread's previous switch
 * says which (prev_state alone is ambiguous: a sleep aborted by a pending
 * signal reads "running" but counts as voluntary). When a thread is inside a
 * traced GPU call, its switches and off-CPU time also go to that call's frame.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define GP_TASK_DEAD 0x80 /* include/linux/sched.h (a macro: not in BTF) */

/* The start of the traced window, written by userspace just before attaching. */
__u64 window_start_ns = 0;

/* --timeline-sched: a record per on-CPU slice (set before load: off, none of it is in the program). */
const volatile bool sched_slices = false;

/* --timeline-sched: threads of each traced process on a CPU now, by tgid (an LRU: exited processes age out). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u32);
} oncpu_threads SEC(".maps");

/*
 * Counts an arrival (+1) or a departure (-1) of a thread of tgid; the count
 * after it. fetch: by a fetching add (Linux 5.12); else (gp_sched_switch_no_fetch)
 * an add, then a read, which another CPU's change of the same count can reach.
 */
static __always_inline __u32 oncpu_add(__u32 tgid, int delta, bool fetch)
{
	__u32 zero = 0, *n = bpf_map_lookup_elem(&oncpu_threads, &tgid);

	if (!n) {
		bpf_map_update_elem(&oncpu_threads, &tgid, &zero, BPF_NOEXIST);
		n = bpf_map_lookup_elem(&oncpu_threads, &tgid);
		if (!n)
			return 0;
	}
	if (!fetch) {
		__sync_fetch_and_add(n, delta);
		return *n;
	}
	return (__u32)__sync_add_and_fetch(n, delta);
}

/*
 * The account of t; created at first sight for a thread that existed when
 * the window opened: it has been on-CPU since then if we see it leave,
 * off-CPU if we see it arrive.
 */
static __always_inline struct gp_thread_acct *acct_of(struct task_struct *t, bool leaving)
{
	struct gp_thread_key key = key_of(t);
	struct gp_thread_acct *a = bpf_map_lookup_elem(&thread_acct, &key);
	struct gp_thread_acct init = {};

	__u32 tgid = t->tgid;
	__u64 *admitted, start;

	if (a)
		return a;
	admitted = bpf_map_lookup_elem(&admit_ns, &tgid);
	start = admitted ? *admitted : window_start_ns; /* its window opened at admission */
	init.tgid = tgid;
	init.start_ns = start;
	if (leaving) {
		init.flags = GP_TAF_ON_CPU;
		init.in_ns = start;
	} else {
		/* it last left before the window: its counters and clock are those of that switch */
		init.flags = GP_TAF_COUNTERS_SEEN | GP_TAF_SUM_OUT;
		init.out_ns = start;
		init.sum_out = t->se.sum_exec_runtime;
		init.nvcsw = t->nvcsw;
		init.nivcsw = t->nivcsw;
		if (sched_slices) { /* off the CPU: its counters are those its next slice starts from */
			init.flags |= GP_TAF_FLT_IN;
			init.min_flt_in = t->min_flt;
			init.maj_flt_in = t->maj_flt;
		}
	}
	bpf_probe_read_kernel_str(init.comm, sizeof(init.comm), t->comm);
	if (bpf_map_update_elem(&thread_acct, &key, &init, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&thread_acct, &key)) {
		count(&drops, GP_DROP_THREAD_TABLE_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(&thread_acct, &key);
}

/*
 * --timeline-sched: the slice p ran until now, read from its account before
 * switch_out() moves it on. start: its arrival, or its estimate; left: why it goes.
 */
static __always_inline void emit_slice(struct task_struct *p, struct gp_thread_acct *a, __u64 start,
				       __u32 flags, __u16 left, __u64 now, bool fetch)
{
	struct gp_sched_slice *rec;
	__u64 mn = p->min_flt, mj = p->maj_flt;
	__u32 start_count = 0, end_count = 0;

	if (a->flags & GP_TAF_ONCPU_COUNTED) {
		start_count = a->oncpu_threads_in;
		end_count = oncpu_add(a->tgid, -1, fetch);
		a->flags &= ~GP_TAF_ONCPU_COUNTED;
	} else {
		flags |= GP_SSF_UNCOUNTED;
	}
	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (!rec) {
		count(&drops, GP_DROP_SCHED_SLICE_LOST);
	} else {
		rec->hdr.type = GP_EV_SCHED_SLICE;
		rec->hdr.size = sizeof(*rec);
		rec->hdr.tgid = a->tgid;
		rec->hdr.tid = p->pid;
		rec->hdr.ts_ns = start;
		rec->end_ns = now;
		rec->cpu = bpf_get_smp_processor_id();
		rec->left = left;
		rec->pad = 0;
		if (a->flags & GP_TAF_FLT_IN) {
			rec->minor_faults = (__u32)(mn - a->min_flt_in);
			rec->major_faults = (__u32)(mj - a->maj_flt_in);
		} else {
			rec->minor_faults = 0;
			rec->major_faults = 0;
			flags |= GP_SSF_FAULTS_UNKNOWN;
		}
		rec->hdr.flags = flags;
		rec->oncpu_threads_start = start_count;
		rec->oncpu_threads_end = end_count;
		bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
	}
	/* faults are taken by the running thread: its next slice starts from these */
	a->min_flt_in = mn;
	a->maj_flt_in = mj;
	a->flags |= GP_TAF_FLT_IN;
}

/* The thread's last switch: its account is final; hand it over and forget it. */
static __always_inline void thread_done(struct task_struct *p, struct gp_thread_acct *a, __u64 now)
{
	struct gp_thread_key key = key_of(p);
	struct gp_thread_exit *rec;

	a->flags |= GP_TAF_EXITED;
	a->end_ns = now;
	a->min_flt_exit = p->min_flt;
	a->maj_flt_exit = p->maj_flt;
	bpf_probe_read_kernel_str(a->comm, sizeof(a->comm), p->comm);
	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (rec) {
		rec->hdr.type = GP_EV_THREAD_EXIT;
		rec->hdr.size = sizeof(*rec);
		rec->hdr.tgid = a->tgid;
		rec->hdr.tid = key.tid;
		rec->hdr.flags = 0;
		rec->hdr.ts_ns = now;
		__builtin_memcpy(&rec->acct, a, sizeof(rec->acct));
		bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
	} else {
		count(&drops, GP_DROP_THREAD_EXIT_LOST);
	}
	bpf_map_delete_elem(&thread_acct, &key);
	if (no_task_storage) /* task storage goes with its task; the hash's entry goes here */
		bpf_map_delete_elem(&task_state, &key.tid);
}

static __always_inline void switch_out(struct task_struct *p, bool preempt, unsigned int state,
				       __u64 now, bool fetch)
{
	struct gp_thread_acct *a = acct_of(p, true);
	__u64 sum = p->se.sum_exec_runtime, nv, niv, dv, di, slice_start = 0;
	__u32 slice_flags = 0;
	struct gp_frame *f;

	if (!a)
		return;
	if (a->flags & GP_TAF_ON_CPU) {
		slice_start = a->in_ns;
		/* no switch-out or arrival before: on the CPU since its account opened at the window */
		if (!(a->flags & (GP_TAF_SUM_OUT | GP_TAF_STARTED)))
			slice_flags = GP_SSF_SINCE_WINDOW;
	} else {
		__u64 ran = sum - a->sum_out;

		slice_start = now > ran ? now - ran : 0; /* its arrival was not reported */
		slice_flags = GP_SSF_START_ESTIMATED;
	}
	if (a->flags & GP_TAF_SUM_OUT) {
		__u64 ran = sum - a->sum_out;

		a->oncpu_ns += ran;
		if (!(a->flags & GP_TAF_ON_CPU)) {
			/* back on the CPU without the tracepoint saying so: estimate when */
			__u64 wall = now - a->out_ns, off = wall > ran ? wall - ran : 0;

			a->offcpu_ns += off;
			if (a->flags & GP_TAF_PREEMPTED)
				a->runnable_ns += off;
			/*
			 * The estimate is of the time right after the last switch-out; the
			 * call the thread is in now may have begun since (it ran meanwhile):
			 * only the part after its entry is the call's.
			 */
			f = current_call(p);
			if (f) {
				__u64 off_end = a->out_ns + off,
				      from = f->ts > a->out_ns ? f->ts : a->out_ns;

				if (off_end > from)
					f->offcpu_ns += off_end - from;
			}
			count(&drops, GP_DROP_SWITCH_IN_UNSEEN);
		}
	} else if (a->flags & GP_TAF_ON_CPU) {
		a->oncpu_ns += now - a->in_ns; /* running since the window opened: wall time */
	}
	a->sum_out = sum;
	a->flags = (a->flags & ~GP_TAF_ON_CPU) | GP_TAF_SUM_OUT;
	a->out_ns = now;
	if (state & GP_TASK_DEAD) {
		if (sched_slices)
			emit_slice(p, a, slice_start, slice_flags, GP_SL_EXITED, now, fetch);
		/* not counted as a switch: the kernel folded its counters into the process before */
		thread_done(p, a, now);
		return;
	}
	nv = p->nvcsw;
	niv = p->nivcsw;
	if (a->flags & GP_TAF_COUNTERS_SEEN) {
		dv = nv - a->nvcsw;
		di = niv - a->nivcsw;
		if (dv + di > 1) /* switches the tracepoint did not show us (recursion guard) */
			count_n(&drops, GP_DROP_SWITCH_MISSED, dv + di - 1);
	} else {
		/* first sight, on-CPU since the window opened: the kernel's rule */
		dv = !preempt && state;
		di = !dv;
	}
	a->nvcsw = nv;
	a->nivcsw = niv;
	/* preempted: it stays runnable, waiting for a CPU, until it runs again */
	a->flags =
		(a->flags & ~GP_TAF_PREEMPTED) | GP_TAF_COUNTERS_SEEN | (di ? GP_TAF_PREEMPTED : 0);
	a->vol_switches += dv;
	a->invol_switches += di;
	if (sched_slices)
		emit_slice(p, a, slice_start, slice_flags, di ? GP_SL_PREEMPTED : GP_SL_BLOCKED,
			   now, fetch);
	f = current_call(p);
	if (f) {
		f->vol_switches += dv;
		f->invol_switches += di;
	}
}

static __always_inline void switch_in(struct task_struct *n, __u64 now, bool fetch)
{
	struct gp_thread_acct *a = acct_of(n, false);
	struct gp_frame *f;

	if (!a)
		return;
	if (!(a->flags & GP_TAF_ON_CPU)) {
		__u64 off = now - a->out_ns;

		a->offcpu_ns += off;
		if (a->flags & GP_TAF_PREEMPTED)
			a->runnable_ns += off;
		f = current_call(n);
		if (f)
			f->offcpu_ns += off;
	}
	a->flags |= GP_TAF_ON_CPU;
	a->in_ns = now;
	if (sched_slices && !(a->flags & GP_TAF_ONCPU_COUNTED)) {
		a->oncpu_threads_in = oncpu_add(a->tgid, 1, fetch);
		a->flags |= GP_TAF_ONCPU_COUNTED;
	}
}

static __always_inline int sched_switch(bool preempt, struct task_struct *prev,
					struct task_struct *next, unsigned int prev_state,
					bool fetch)
{
	bool out = traced(prev->tgid), in = traced(next->tgid);
	__u64 now;

	if (!out && !in)
		return 0;
	now = bpf_ktime_get_ns();
	if (out)
		switch_out(prev, preempt, prev_state, now, fetch);
	if (in)
		switch_in(next, now, fetch);
	return 0;
}

/*
 * sched_switch's prev_state argument came with Linux 5.18 (set by userspace:
 * the tracepoint's BTF); before it the state is the task's own, as the
 * tracepoint then read it: task_struct.state, __state from 5.14.
 */
const volatile bool switch_has_prev_state = true;

struct task_struct___state_long {
	long state;
} __attribute__((preserve_access_index));

static __always_inline unsigned int switch_prev_state(unsigned long long *ctx,
						      struct task_struct *prev)
{
	struct task_struct___state_long *old = (void *)prev;

	if (switch_has_prev_state)
		return (unsigned int)ctx[3];
	if (bpf_core_field_exists(old->state))
		return (unsigned int)BPF_CORE_READ(old, state);
	return BPF_CORE_READ(prev, __state);
}

/* BPF_PROG's arguments would read ctx[3] whatever the kernel: the first three, by hand. */
SEC("tp_btf/sched_switch")
int gp_sched_switch(unsigned long long *ctx)
{
	struct task_struct *prev = (void *)ctx[1];

	return sched_switch((bool)ctx[0], prev, (void *)ctx[2], switch_prev_state(ctx, prev), true);
}

/*
 * The same without a fetching add (kernels before 5.12 refuse a program that
 * holds one, even where it never runs). Userspace loads one of the two.
 */
SEC("tp_btf/sched_switch")
int gp_sched_switch_no_fetch(unsigned long long *ctx)
{
	struct task_struct *prev = (void *)ctx[1];

	return sched_switch((bool)ctx[0], prev, (void *)ctx[2], switch_prev_state(ctx, prev),
			    false);
}

/*
 * A new thread of a traced process: its counters start at 0, it waits
 * off-CPU until it runs. A new process forked by a traced one is admitted
 * here, first, when the session follows forks: it shares its parent's
 * probed libraries, so nothing else is needed before it runs.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(gp_sched_fork, struct task_struct *parent, struct task_struct *child)
{
	struct gp_thread_key key = key_of(child);
	struct gp_thread_acct init = {};
	__u64 now = bpf_ktime_get_ns();
	__u32 tgid = child->tgid;

	/* a process that used this pid before is gone: its bit must not admit the newcomer */
	if (child->pid == tgid && traced(tgid))
		unadmit(tgid);
	if (!traced(tgid)) {
		struct gp_scope *sc = session_scope();

		/* a new process (not a thread) of an admitted one */
		if (!sc || !(sc->flags & GP_SCOPE_FOLLOW_FORKS) || child->pid != tgid ||
		    !traced(parent->tgid) || !admit(tgid, now))
			return 0;
		proc_event(child, GP_PROC_FORK, GP_PF_ADMITTED, parent->tgid, 0, 0, -1, now);
	}
	init.tgid = tgid;
	init.flags = GP_TAF_STARTED | GP_TAF_COUNTERS_SEEN | GP_TAF_SUM_OUT |
		     GP_TAF_FLT_IN; /* all start at 0 */
	init.start_ns = now;
	init.out_ns = init.start_ns;
	bpf_probe_read_kernel_str(init.comm, sizeof(init.comm), child->comm);
	if (bpf_map_update_elem(&thread_acct, &key, &init, BPF_ANY))
		count(&drops, GP_DROP_THREAD_TABLE_FULL);
	return 0;
}

/*
 * The traced calls in progress on every thread of the traced processes, read
 * by userspace through an iterator (src/probes/bpf_objects.c,
 * gp_bpf_inflight): one gp_inflight per frame, outermost first. Nothing is
 * added to the probes: the frames are the entry probe's own, in task
 * storage. A frame is read while its thread may be changing it; the stall
 * detector only trusts a call seen twice with the same entry time.
 */
SEC("iter/task")
int gp_inflight_iter(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *task = ctx->task;
	struct gp_task_state *st;
	struct gp_inflight r = {};
	__u32 depth;

	if (!task || !traced(task->tgid))
		return 0;
	st = task_state_of(task, false);
	if (!st)
		return 0;
	depth = st->depth;
	r.tgid = task->tgid;
	r.tid = task->pid;
	for (__u32 i = 0; i < GP_MAX_DEPTH && i < depth; i++) {
		struct gp_frame *f = frame_at(st, i);

		r.api = GP_COOKIE_API(f->cookie);
		r.depth = i;
		r.ts_ns = f->ts;
		__builtin_memcpy(r.args, f->args, sizeof(r.args));
		bpf_seq_write(seq, &r, sizeof(r));
	}
	return 0;
}
