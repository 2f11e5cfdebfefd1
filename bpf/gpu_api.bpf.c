// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * gpu_api.bpf.c — the two generic programs behind every row of api.h's table
 * (CUDA runtime today; the driver and NCCL use the same pair): one uprobe at
 * entry, one uretprobe at return, told apart per API by the attach cookie.
 *
 * Entry saves the arguments and the entry time in per-thread task storage
 * (a stack of frames, so nested traced calls on one thread neither collide
 * nor double count); return matches its frame by stack pointer (at return,
 * sp == entry sp + 8 on x86-64), and emits one fixed-size record into the
 * ring buffer without waking the consumer, which drains it on a timer (a
 * wakeup per record costs ~1.4 us; even asking the ring how full it is
 * costs ~10 ns a call here, so we do not). Every loss is counted in
 * "drops"; every probe hit in "probe_hits".
 *
 * Each record also says what happened to the thread during the call: the
 * scheduler probes (sched.bpf.c) add off-CPU time and switches to the
 * innermost frame, which hands them to its caller's frame at return; page
 * faults are the deltas of the task's own counters. So every record is
 * inclusive of the traced calls nested in it, and a nested record names the
 * API of the call that encloses it (hdr.flags bits 16..31): that call is its
 * caller's implementation (cudaMemcpy -> cuMemcpyHtoD_v2) and userspace
 * counts it once, as the outer call.
 *
 * Some APIs need bytes from user memory at return (a kernel's name, a
 * path, ncclCommInitAll's arrays): their record is a gp_api_call_ext,
 * reserved at its full size (these calls are rare).
 *
 * With --aggregate, the calls whose record would only feed counts, times,
 * errors and CPU attribution (cookie flag GP_CK_AGG) write no record:
 * their return adds them to "api_agg", one entry per (process, thread, API,
 * enclosing API), which userspace reads once a second. When the map is full
 * the call goes as a record after all (counted in agg_table_full).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "common.bpf.h"
#include "unwind.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* [2 * probe] entry hits, [2 * probe + 1] return hits. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2 * GP_MAX_PROBES);
	__type(key, __u32);
	__type(value, __u64);
} probe_hits SEC(".maps");

/*
 * --aggregate: the calls of each (tgid, tid, api, parent_api). A plain hash,
 * not a per-CPU one: only the thread named in a key ever writes it, and a
 * thread runs one handler at a time, so no atomics are needed either way,
 * and userspace reads (and the kernel stores) one value per key, not one per
 * possible CPU. Entries are allocated as threads first call an API, not
 * preallocated; max_entries is set by userspace.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, struct gp_api_agg_key);
	__type(value, struct gp_api_agg);
} api_agg SEC(".maps");

/* One zeroed value, never written: what a new api_agg entry starts from (too big for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gp_api_agg);
} agg_zero SEC(".maps");

/*
 * no_attach_cookie (kernels before 5.15): each probe's cookie by where it
 * sits, written by userspace as it places the probe (src/probes/uprobes.c).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries,
	       GP_MAX_PROBES + 64); /* + the measurements' probes on gpuprobed itself */
	__type(key, struct gp_probe_site);
	__type(value, __u64);
} probe_sites SEC(".maps");

/*
 * The kernel's cache of the thread's last memory areas (task_struct.vmacache,
 * Linux 3.15 to 6.0): the uprobe's handler has just looked up the area of
 * the breakpoint (find_vma), which leaves it there. Kernels with cookies
 * never read it (the relocations of a kernel without it are never run).
 */
struct vmacache___gp {
	struct vm_area_struct *vmas[4];
};

struct task_struct___gp {
	struct vmacache___gp vmacache;
} __attribute__((preserve_access_index));

/*
 * no_attach_cookie: the cookie of the probe at ip; false: none found. ip is
 * the breakpoint's own address on 5.10 (measured); the address after it is
 * tried too (the int3's ip), which is never another probe's site (a probe
 * is at a function's start, the byte before is another function's last).
 */
static __always_inline bool cookie_by_site(__u64 ip, __u64 *cookie)
{
	struct task_struct___gp *t = (void *)bpf_get_current_task();
	struct gp_probe_site k = {};
	__u64 *ck;

#pragma unroll
	for (int i = 0; i < 4; i++) {
		struct vm_area_struct *vma = BPF_CORE_READ(t, vmacache.vmas[i]);
		__u64 start, base;
		struct inode *inode;

		if (!vma)
			continue;
		start = BPF_CORE_READ(vma, vm_start);
		if (start > ip || BPF_CORE_READ(vma, vm_end) <= ip)
			continue;
		inode = BPF_CORE_READ(vma, vm_file, f_inode);
		if (!inode)
			return false;
		k.dev = BPF_CORE_READ(inode, i_sb, s_dev);
		k.ino = BPF_CORE_READ(inode, i_ino);
		base = (BPF_CORE_READ(vma, vm_pgoff) << 12) - start;
		k.offset = base + ip;
		ck = bpf_map_lookup_elem(&probe_sites, &k);
		if (!ck) {
			k.offset = base + ip - 1;
			ck = bpf_map_lookup_elem(&probe_sites, &k);
		}
		if (!ck)
			return false;
		*cookie = *ck;
		return true;
	}
	return false;
}

/* The task's fault counters: direct reads of a BTF pointer, or through bpf_probe_read_kernel. */
static __always_inline __u64 task_min_flt(struct task_struct *t)
{
	return no_task_btf ? BPF_CORE_READ(t, min_flt) : t->min_flt;
}

static __always_inline __u64 task_maj_flt(struct task_struct *t)
{
	return no_task_btf ? BPF_CORE_READ(t, maj_flt) : t->maj_flt;
}

/* Probes sit on library files, for every process that maps them: only admitted ones count. */
static __always_inline bool tgid_traced(void)
{
	return traced(bpf_get_current_pid_tgid() >> 32);
}

/*
 * The overhead budget's gate (set by userspace): while it is closed, the
 * hot probes' calls are not counted, even before their links are gone (a
 * link's removal can finish after close() returns), so the counted part of
 * each period is exactly the one userspace weighs.
 */
__u32 gate_closed;

/*
 * Set by userspace when tracing stops, before the probes are removed: from
 * then on no call is counted, so removing the probes one file after another
 * cannot leave half a call in the report (an inner driver call counted as
 * outermost because its runtime call's probe went first). A call that
 * returns after it is left out whole (its inner calls too: nesting.c).
 */
__u32 closing;

/* A frame whose return never came: lost, or cut by the overhead budget's detach (an estimate). */
static __always_inline void count_missed_return(const struct gp_frame *f)
{
	count(&drops, (GP_COOKIE_FLAGS(f->cookie) & GP_CK_GATED) ? GP_DROP_DUTY_CUT
								 : GP_DROP_MISSED_RETURN);
}

SEC("uprobe")
int gp_api_enter(struct pt_regs *ctx)
{
	__u64 cookie;
	__u64 sp = ctx->sp;
	struct task_struct *task;
	struct gp_task_state *st;
	struct gp_frame *f;
	__u32 depth;
	__u32 ck;

	if (closing || !tgid_traced())
		return 0;
	if (!no_attach_cookie) {
		cookie = bpf_get_attach_cookie(ctx);
	} else if (!cookie_by_site(ctx->ip, &cookie)) {
		count(&drops, GP_DROP_PROBE_UNKNOWN);
		return 0;
	}
	count(&probe_hits, 2 * (__u32)GP_COOKIE_PROBE(cookie));

	task = current_task();
	st = task_state_of(task, true);
	if (!st) {
		count(&drops, GP_DROP_TASK_STORAGE);
		return 0;
	}

	/*
	 * Frames whose sp is not above ours belong to calls that already left
	 * without their return being seen (longjmp, exception, detach race):
	 * the stack grows down, so a live caller's frame has a higher sp.
	 */
	depth = st->depth;
	for (int i = 0; i < GP_MAX_DEPTH; i++) {
		if (depth == 0 || frame_at(st, depth - 1)->sp > sp)
			break;
		depth--;
		count_missed_return(frame_at(st, depth));
	}
	if (depth >= GP_MAX_DEPTH) {
		st->depth = depth;
		st->overflowed++;
		count(&drops, GP_DROP_DEPTH_OVERFLOW);
		return 0;
	}

	f = frame_at(st, depth);
	f->sp = sp;
	f->cookie = cookie;
	f->flags = 0;
	f->vol_switches = 0;
	f->invol_switches = 0;
	f->offcpu_ns = 0;
	f->min_flt0 = task_min_flt(task);
	f->maj_flt0 = task_maj_flt(task);
	/* x86-64 SysV integer arguments (libbpf 1.1 has no PT_REGS_PARM6) */
	f->args[0] = ctx->di;
	f->args[1] = ctx->si;
	f->args[2] = ctx->dx;
	f->args[3] = ctx->cx;
	f->args[4] = ctx->r8;
	f->args[5] = ctx->r9;
	f->args[6] = 0;
	f->args[7] = 0;

	ck = GP_COOKIE_FLAGS(cookie);
	if (ck & GP_CK_AGG) {
		/*
		 * Counted in the kernel: no record carries its arguments (a launch's
		 * stream and shared memory are what --aggregate gives up), so the user
		 * memory they are in is not read (~165 ns a launch here). Should the
		 * map be full and the call go as a record after all, it says so.
		 */
		if (ck & (GP_CK_STACK2 | GP_CK_LAUNCH_CFG | GP_CK_CU_LAUNCH | GP_CK_NCCL_ID |
			  GP_CK_DEREF2))
			f->flags |= GP_EVF_ARGS_PARTIAL;
	} else if (ck & GP_CK_STACK2) {
		if (bpf_probe_read_user(&f->args[6], 2 * sizeof(__u64), (void *)(sp + 8))) {
			f->flags |= GP_EVF_ARGS_PARTIAL;
			count(&drops, GP_DROP_ARG_READ);
		}
	} else if (ck & GP_CK_LAUNCH_CFG) {
		/* gridDim, blockDim, dynamicSmemBytes, stream: the first 40 bytes of cudaLaunchConfig_t (CUlaunchConfig) */
		if (bpf_probe_read_user(&f->args[3], 5 * sizeof(__u64), (void *)f->args[0])) {
			f->flags |= GP_EVF_ARGS_PARTIAL;
			count(&drops, GP_DROP_ARG_READ);
		}
	} else if (ck & GP_CK_CU_LAUNCH) {
		/* cuLaunchKernel's 7th..9th arguments: blockDimZ, sharedMemBytes, hStream */
		__u64 st3[3];

		if (bpf_probe_read_user(st3, sizeof(st3), (void *)(sp + 8))) {
			f->flags |= GP_EVF_ARGS_PARTIAL;
			count(&drops, GP_DROP_ARG_READ);
		} else {
			/* 32-bit arguments: the upper halves of their slots are not ours to read */
			f->args[5] = (__u32)f->args[5] | ((__u64)(__u32)st3[0] << 32);
			f->args[6] = (__u32)st3[1];
			f->args[7] = st3[2];
		}
	} else if (ck & GP_CK_NCCL_ID) {
		/* the ncclUniqueId by value: hashed here, while it is on the caller's stack */
		__u64 id[GP_NCCL_UNIQUE_ID_BYTES / 8];
		__u64 h = GP_NCCL_ID_SEED;

		if (bpf_probe_read_user(id, sizeof(id), (void *)(sp + 8))) {
			f->flags |= GP_EVF_ARGS_PARTIAL;
			count(&drops, GP_DROP_ARG_READ);
		} else {
			for (int i = 0; i < GP_NCCL_UNIQUE_ID_BYTES / 8; i++)
				h = gp_nccl_id_mix(h, id[i]);
			f->args[6] = h;
		}
	} else if (ck & GP_CK_DEREF2) {
		if (bpf_probe_read_user(&f->args[6], 2 * sizeof(__u64), (void *)f->args[2])) {
			f->flags |= GP_EVF_ARGS_PARTIAL;
			count(&drops, GP_DROP_ARG_READ);
		}
	}
	st->depth = depth + 1;
	/* Last, so that this handler's own cost is outside the measured call. */
	f->ts = bpf_ktime_get_ns();
	return 0;
}

/* The user-memory bytes an extended record carries (see events.h). */
static __always_inline void read_ext(struct gp_api_call_ext *ext, const struct gp_frame *f,
				     __u32 ck)
{
	long n;

	ext->data_len = 0;
	ext->pad = 0;
	ext->data[0] = 0;
	if (ext->call.ret != 0)
		return;
	if (ck & GP_CK_STR) {
		n = bpf_probe_read_user_str(ext->data, sizeof(ext->data),
					    (void *)f->args[GP_CK_STR_SLOT(ck)]);
		if (n <= 0) {
			ext->call.hdr.flags |= GP_EVF_ARGS_PARTIAL;
			count(&drops, GP_DROP_ARG_READ);
			return;
		}
		ext->data_len = n;
		if (n == sizeof(ext->data))
			ext->call.hdr.flags |= GP_EVF_EXT_TRUNC;
		return;
	}
	/* ncclCommInitAll(comms, ndev, devlist): comms[0..ndev) then devlist[0..ndev) */
	__u32 ndev = (__u32)f->args[1];

	if (ndev > GP_NCCL_INIT_ALL_MAX) {
		ndev = GP_NCCL_INIT_ALL_MAX;
		ext->call.hdr.flags |= GP_EVF_EXT_TRUNC;
	}
	if (ndev == 0)
		return;

	__u64 comms = ndev, devs = ndev;

	/* opaque to the compiler, so the masks below stay on the registers the verifier checks */
	asm volatile("" : "+r"(comms), "+r"(devs));
	comms = (comms & 127) << 3; /* ndev <= 64: at most 512 bytes, data[0..512) */
	devs = (devs & 127) << 2;   /* at most 256 bytes, data[512..768) */
	if (bpf_probe_read_user(ext->data, comms, (void *)f->args[0])) {
		ext->call.hdr.flags |= GP_EVF_ARGS_PARTIAL;
		count(&drops, GP_DROP_ARG_READ);
		return;
	}
	ext->data_len = comms;
	if (f->args[2] && bpf_probe_read_user(ext->data + GP_NCCL_INIT_ALL_MAX * 8, devs,
					      (void *)f->args[2]) == 0)
		ext->data_len = GP_NCCL_INIT_ALL_MAX * 8 + devs;
}

/* Copies the record with its stack into the ring at its real size (not 2 KiB per record). */
static __always_inline void emit_with_stack(struct pt_regs *ctx, struct gp_task_state *st,
					    struct gp_api_call_ustack *stk, bool with_loop)
{
	__u64 size = walk_stacks(ctx, st, stk, with_loop);

	asm volatile("" : "+r"(size)); /* keep the bound on the register the verifier checks */
	if (size > sizeof(*stk))
		size = sizeof(*stk);
	if (size < GP_USTACK_REC_SIZE(1, 0))
		size = GP_USTACK_REC_SIZE(1, 0);
	stk->call.hdr.type = GP_EV_API_CALL_USTACK;
	stk->call.hdr.size = size;
	if (bpf_ringbuf_output(&events, stk, size,
			       (stk->call.hdr.flags & GP_EVF_PY_HELD) ? BPF_RB_FORCE_WAKEUP
								      : BPF_RB_NO_WAKEUP)) {
		count(&drops, GP_DROP_RINGBUF_FULL);
		/* no record will say it was held: a SIGCONT now discards the pending SIGSTOP */
		if (stk->call.hdr.flags & GP_EVF_PY_HELD)
			hold_cancel(stk->call.hdr.tgid, st->py_hold_ns);
	}
}

/* floor(log2(v)) + 1 for v > 0 (at most 63), 0 for 0: the duration histogram's bucket (no clz in BPF). */
static __always_inline __u32 log2_bucket(__u64 v)
{
	__u32 k = 0;

	if (!v)
		return 0;
	if (v >> 32) {
		v >>= 32;
		k += 32;
	}
	if (v >> 16) {
		v >>= 16;
		k += 16;
	}
	if (v >> 8) {
		v >>= 8;
		k += 8;
	}
	if (v >> 4) {
		v >>= 4;
		k += 4;
	}
	if (v >> 2) {
		v >>= 2;
		k += 2;
	}
	if (v >> 1) {
		k += 1;
	}
	return k < 62 ? k + 1 : 63; /* the last bucket holds everything from 2^62 ns on */
}

/*
 * Adds the call to its api_agg entry, creating it; false when the map is
 * full (the caller then writes the record). Only this thread writes its
 * keys (see api_agg): plain adds.
 */
static __always_inline bool aggregate(const struct gp_frame *f, __u64 pid_tgid, __u16 api,
				      __u16 parent_api, __u64 now, __s32 ret, __u64 min_flt,
				      __u64 maj_flt)
{
	struct gp_api_agg_key k = {
		.tgid = pid_tgid >> 32, .tid = (__u32)pid_tgid, .api = api, .parent_api = parent_api
	};
	struct gp_api_agg *v = bpf_map_lookup_elem(&api_agg, &k);
	__u64 dur = now - f->ts;
	__u32 b;

	if (!v) {
		__u32 zero = 0;
		struct gp_api_agg *z = bpf_map_lookup_elem(&agg_zero, &zero);

		if (!z)
			return false;
		/* -EEXIST cannot happen (our own key); -E2BIG / -ENOMEM: full, the lookup says so */
		bpf_map_update_elem(&api_agg, &k, z, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&api_agg, &k);
		if (!v)
			return false;
		v->min_ns = dur;
		v->first_ns = f->ts;
	}
	if (dur < v->min_ns)
		v->min_ns = dur;
	if (dur > v->max_ns)
		v->max_ns = dur;
	v->calls++;
	v->sum_ns += dur;
	if (ret) {
		v->errors++;
		v->error_ns += dur;
		v->last_error = ret;
	}
	v->offcpu_ns += f->offcpu_ns;
	v->vol_switches += f->vol_switches;
	v->invol_switches += f->invol_switches;
	v->minor_faults += (__u32)(min_flt - f->min_flt0);
	v->major_faults += (__u32)(maj_flt - f->maj_flt0);
	v->last_ns = now;
	b = log2_bucket(dur);
	asm volatile("" : "+r"(b)); /* keep the mask on the register the verifier checks */
	v->dur_hist[b & (GP_AGG_HIST_BUCKETS - 1)]++;
	return true;
}

static __always_inline int api_exit(struct pt_regs *ctx, bool with_loop)
{
	__u64 now = bpf_ktime_get_ns();
	/* no_attach_cookie: the return is its entry's, the frame of the same sp */
	__u64 cookie = no_attach_cookie ? 0 : bpf_get_attach_cookie(ctx);
	__u64 entry_sp = ctx->sp - 8;
	struct task_struct *task = current_task();
	__u64 min_flt = task_min_flt(task), maj_flt = task_maj_flt(task);
	__u64 pid_tgid =
		bpf_get_current_pid_tgid(); /* once: the gate, the record, the aggregate's key */
	struct gp_task_state *st;
	struct gp_api_call *rec = NULL;
	struct gp_api_call_ext *ext = NULL;
	struct gp_api_call_ustack *stk = NULL;
	struct gp_frame *f = NULL;
	__u16 parent_api = 0;
	__u32 parent_flags = 0;
	__u32 depth;
	__u32 ck;

	if (closing || !traced(pid_tgid >> 32))
		return 0;
	if (!no_attach_cookie)
		count(&probe_hits, 2 * (__u32)GP_COOKIE_PROBE(cookie) + 1);

	st = task_state_of(task, false);
	if (!st) {
		count(&drops, GP_DROP_RETURN_NO_ENTRY);
		return 0;
	}

	/* Find our frame from the top; frames above it never returned. */
	depth = st->depth;
	for (int k = 0; k < GP_MAX_DEPTH; k++) {
		if (depth == 0)
			break;
		struct gp_frame *top = frame_at(st, depth - 1);

		if (top->sp == entry_sp && (no_attach_cookie || top->cookie == cookie)) {
			f = top;
			cookie = top->cookie;
			if (no_attach_cookie)
				count(&probe_hits, 2 * (__u32)GP_COOKIE_PROBE(cookie) + 1);
			break;
		}
		if (top->sp > entry_sp)
			break; /* a caller's frame: ours is not on the stack */
		depth--;
		count_missed_return(top);
	}
	if (!f) {
		st->depth = depth;
		if (st->overflowed)
			st->overflowed--; /* already counted as depth_overflow */
		else if (GP_COOKIE_FLAGS(cookie) & GP_CK_GATED)
			count(&drops,
			      GP_DROP_DUTY_CUT); /* the gate opened inside the call: an estimate, not a loss */
		else
			count(&drops, GP_DROP_RETURN_NO_ENTRY);
		return 0;
	}
	st->depth = depth - 1;
	ck = GP_COOKIE_FLAGS(cookie);
	/* the enclosing traced call, if any, includes this one: hand it our off-CPU time */
	if (depth >= 2) {
		struct gp_frame *parent = frame_at(st, depth - 2);

		parent->offcpu_ns += f->offcpu_ns;
		parent->vol_switches += f->vol_switches;
		parent->invol_switches += f->invol_switches;
		parent_api = GP_COOKIE_API(parent->cookie);
		if (GP_COOKIE_FLAGS(parent->cookie) & GP_CK_AGG)
			parent_flags = GP_EVF_PARENT_COUNTED;
	}
	if ((ck & GP_CK_GATED) && gate_closed) {
		count(&drops, GP_DROP_DUTY_CUT);
		return 0;
	}
	if (ck & GP_CK_AGG) {
		if (aggregate(f, pid_tgid, GP_COOKIE_API(cookie), parent_api, now,
			      (ck & GP_CK_VOID) ? 0 : (__s32)ctx->ax, min_flt, maj_flt))
			return 0;
		count(&drops, GP_DROP_AGG_TABLE_FULL); /* not lost: it goes as a record */
	}

	if (ck & (GP_CK_STR | GP_CK_NCCL_ALL))
		ext = bpf_ringbuf_reserve(&events, sizeof(*ext), 0);
	else if ((ck & GP_CK_USTACK) && depth == 1) /* outermost: a nested call is its caller's */
		stk = &st->stack_rec;
	else
		rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (ext)
		rec = &ext->call;
	else if (stk)
		rec = &stk->call;
	if (!rec) {
		count(&drops, GP_DROP_RINGBUF_FULL);
		return 0;
	}
	rec->hdr.type = ext ? GP_EV_API_CALL_EXT : GP_EV_API_CALL;
	rec->hdr.size = ext ? sizeof(*ext) : sizeof(*rec);
	rec->hdr.tgid = pid_tgid >> 32;
	rec->hdr.tid = (__u32)pid_tgid;
	rec->hdr.flags = f->flags | parent_flags | ((__u32)parent_api << GP_EVF_PARENT_SHIFT);
	rec->hdr.ts_ns = f->ts;
	rec->dur_ns = now - f->ts;
	rec->ret_addr = ctx->ip; /* the uretprobe restored ip to the call site */
	rec->ret = (ck & GP_CK_VOID) ? 0 : (__s32)ctx->ax;
	rec->api = GP_COOKIE_API(cookie);
	rec->probe = GP_COOKIE_PROBE(cookie);
	rec->out = 0;
	__builtin_memcpy(rec->args, f->args, sizeof(rec->args));
	rec->offcpu_ns = f->offcpu_ns;
	rec->vol_switches = f->vol_switches;
	rec->invol_switches = f->invol_switches;
	rec->minor_faults = (__u32)(min_flt - f->min_flt0);
	rec->major_faults = (__u32)(maj_flt - f->maj_flt0);
	if ((ck & GP_CK_OUT) && rec->ret == 0) {
		void *out_ptr = (void *)f->args[GP_CK_OUT_SLOT(ck)];
		long err = (ck & GP_CK_OUT32)
				   ? bpf_probe_read_user(&rec->out, sizeof(__u32), out_ptr)
				   : bpf_probe_read_user(&rec->out, sizeof(rec->out), out_ptr);

		if (err == 0) {
			rec->hdr.flags |= GP_EVF_OUT_VALID;
		} else {
			rec->hdr.flags |= GP_EVF_ARGS_PARTIAL;
			count(&drops, GP_DROP_ARG_READ);
		}
	}
	if (stk) {
		emit_with_stack(ctx, st, stk, with_loop);
		return 0;
	}
	/*
	 * The NULL test on ext's own register: without the barrier clang tests a spilled copy of the
	 * cookie's flags instead, and a verifier before 6.12 (6.1's) does not carry what that test
	 * proves to the pointer read back from the stack ("R2 invalid mem access 'scalar'").
	 */
	asm volatile("" : "+r"(ext));
	if (ext)
		read_ext(ext, f, ck);
	bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("uretprobe")
int gp_api_exit(struct pt_regs *ctx)
{
	return api_exit(ctx, true);
}

/*
 * The same for kernels without bpf_loop (before 5.17): the stack walks' steps
 * are global functions (unwind.bpf.h). Userspace loads one of the two.
 */
SEC("uretprobe")
int gp_api_exit_no_loop(struct pt_regs *ctx)
{
	return api_exit(ctx, false);
}
