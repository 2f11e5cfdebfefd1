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

#include "gpuprobed/unwind.h"

/* 5: GP_EV_API_CALL_USTACK (native stacks by unwind tables, Python frames) */
#define GP_ABI_VERSION 5

/* ---- records ----------------------------------------------------------- */

enum gp_event_type {
	GP_EV_API_CALL = 1, /* struct gp_api_call: one completed traced call */
	GP_EV_THREAD_CPU =
		2, /* struct gp_thread_cpu: one thread's CPU account over the traced window */
	GP_EV_THREAD_EXIT =
		3, /* struct gp_thread_exit: kernel -> collector only, a thread's final account */
	GP_EV_PROC =
		4, /* struct gp_proc_event: kernel -> collector only, a process to trace or hold */
	GP_EV_API_CALL_EXT =
		5, /* struct gp_api_call_ext: an API call with bytes read from user memory */
	GP_EV_API_CALL_STACK =
		6, /* struct gp_api_call_stack: an API call with its caller's user stack */
	GP_EV_SCHED_SLICE =
		7, /* struct gp_sched_slice: one on-CPU slice of a traced thread (--timeline-sched) */
	GP_EV_API_CALL_USTACK =
		8, /* struct gp_api_call_ustack: an API call with its user stack, native and Python */
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
	__u64 out;	/* value stored through the out-pointer argument, if any */
	__s32 ret;	/* return value (cudaError_t / CUresult / ncclResult_t) */
	__u16 api;	/* enum gp_api_id */
	__u16 probe;	/* index of the probe pair that saw it (instrumentation row) */
	__u64 args[GP_MAX_ARGS];
	/*
	 * What happened to the calling thread during the call, exclusive of
	 * nested traced calls: time off-CPU, context switches by the kernel's
	 * own classification, and page faults (deltas of the task's min_flt and
	 * maj_flt, the counters behind getrusage and /proc/PID/stat).
	 */
	__u64 offcpu_ns;
	__u32 vol_switches;
	__u32 invol_switches;
	__u32 minor_faults;
	__u32 major_faults;
};

/*
 * One thread's CPU account over its traced window [hdr.ts_ns, end_ns]: from
 * the later of attach and its creation to the earlier of its exit and the
 * end of the session. Built by userspace at the end from the kernel's
 * per-thread accounts (sched_switch, fork, exit) and the task's fault
 * counters; carried as a record so that captures replay it.
 */
struct gp_thread_cpu {
	struct gp_event_hdr hdr; /* tgid, tid; ts_ns = window start */
	__u64 end_ns;
	__u64 oncpu_ns;
	__u64 offcpu_ns;
	__u64 runnable_ns; /* of offcpu_ns: after an involuntary switch, runnable, waiting for a CPU */
	__u64 vol_switches;
	__u64 invol_switches;
	__u64 minor_faults;
	__u64 major_faults;
	__u32 flags; /* GP_TCF_* */
	__u32 pad;
	char comm[16];
};

/* gp_thread_cpu.flags */
#define GP_TCF_STARTED	      (1u << 0) /* created during the window (counters start at 0) */
#define GP_TCF_EXITED	      (1u << 1) /* exited during the window */
#define GP_TCF_FAULTS_UNKNOWN (1u << 2) /* its fault counters could not be read at one end */
#define GP_TCF_NEVER_RAN      (1u << 3) /* no context switch of it was seen: off-CPU throughout */

/* gp_event_hdr.flags */
#define GP_EVF_OUT_VALID      (1u << 0) /* gp_api_call.out was read successfully */
#define GP_EVF_ARGS_PARTIAL   (1u << 1) /* a user-memory argument read failed */
#define GP_EVF_EXT_TRUNC      (1u << 2) /* gp_api_call_ext.data was cut at GP_EXT_DATA_MAX */
/* the enclosing call is counted in the kernel (--aggregate): no record of it will come */
#define GP_EVF_PARENT_COUNTED (1u << 3)
/*
 * A record with a stack whose Python frames hold a code object the kernel had
 * not seen in this process: the process was stopped (SIGSTOP) as the call
 * returned, so that userspace names its frames while they exist; it continues
 * the process once the record is read (SIGCONT).
 */
#define GP_EVF_PY_HELD	      (1u << 4)
/*
 * Bits 16..31 of an API call's flags: the API id of the traced call that
 * encloses it on the same thread (0: none). A call made inside another
 * traced call is its implementation (cudaMemcpy -> cuMemcpyHtoD_v2): counted
 * once, as the outer call; the inner one is listed as nested.
 */
#define GP_EVF_PARENT_SHIFT   16
#define GP_EVF_PARENT(flags)  ((__u16)((flags) >> GP_EVF_PARENT_SHIFT))

/*
 * An API call whose record carries bytes read from user memory at return:
 * a name (cuModuleGetFunction, cuLibraryGetKernel: the kernel's name;
 * cuModuleLoad, cuLibraryLoadFromFile: the path), or arrays
 * (ncclCommInitAll: the communicators, then the device list). call.hdr has
 * type GP_EV_API_CALL_EXT and size sizeof(struct gp_api_call_ext).
 */
#define GP_EXT_DATA_MAX 1024
struct gp_api_call_ext {
	struct gp_api_call call;
	__u32 data_len; /* bytes of data[] that were read (a string: with its NUL) */
	__u32 pad;
	char data[GP_EXT_DATA_MAX];
};

/*
 * An API call with the user stack of the thread that made it, as the
 * kernel's frame-pointer unwinder saw it at the call's return: ips[0] is
 * the call site (the return address, right even without frame pointers),
 * ips[1..] the callers. Only outermost calls that queue or wait for GPU
 * work carry one (GP_CK_USTACK). The record is variable-sized:
 * call.hdr.size = offsetof(ips) + 8 * nframes.
 */
#define GP_STACK_MAX_FRAMES 127 /* kernel.perf_event_max_stack's default */
struct gp_api_call_stack {
	struct gp_api_call call;
	__u16 nframes;
	__u16 stack_flags; /* GP_STF_* */
	__s32 stack_err;   /* bpf_get_stack's error when GP_STF_UNREAD */
	__u64 ips[GP_STACK_MAX_FRAMES];
};

#define GP_STF_UNREAD		   (1u << 0) /* the stack could not be walked: ips[0] (the call site) only */
#define GP_STACK_REC_SIZE(nframes) (sizeof(struct gp_api_call) + 8 + 8 * (nframes))

/*
 * An API call with the user stack of the thread that made it, walked at the
 * call's return (the caller's registers, its frames intact): by unwind
 * tables where its code has them (unwind.h), by frame pointers where it has
 * none, and — in a CPython process — the thread's Python frames. words[]
 * holds nframes native addresses (words[0] the call site: the return
 * address; then the callers, outermost last), then npy Python frames of two
 * words each, innermost first: the code object's address, and the
 * instruction with GP_PYF_* flags (unwind.h). Why the native walk ended is
 * `stop`: GP_STOP_END when it reached the thread's first frame. Variable
 * size: call.hdr.size = GP_USTACK_REC_SIZE(nframes, npy). Replaces
 * gp_api_call_stack (still read from older captures).
 */
#define GP_USTACK_MAX_FRAMES 127
#define GP_USTACK_MAX_WORDS  (GP_USTACK_MAX_FRAMES + 1 + 2 * GP_PY_MAX_FRAMES)
struct gp_api_call_ustack {
	struct gp_api_call call;
	__u16 nframes;	  /* native frames, words[0 .. nframes) */
	__u16 npy;	  /* Python frames, words[nframes .. nframes + 2 * npy) */
	__u8 stop;	  /* enum gp_stack_stop: why the native walk ended */
	__u8 stop_detail; /* GP_STOP_TABLE: the row's GP_UW_STOP_* */
	__u8 py;	  /* enum gp_py_status */
	__u8 frames_fp; /* of the native frames, how many were found by frame pointer (no table) */
	__s32 err;	/* the failed read's error, for GP_STOP_READ / GP_PY_READ */
	__u32 pad;
	__u64 words[GP_USTACK_MAX_WORDS];
};
#define GP_USTACK_REC_SIZE(nframes, npy) \
	(sizeof(struct gp_api_call) + 16 + 8 * ((nframes) + 2 * (npy)))

#ifndef __VMLINUX_H__
/* A record of one traced call (with or without bytes or a stack). */
static inline int gp_event_is_call(__u16 type)
{
	return type == GP_EV_API_CALL || type == GP_EV_API_CALL_EXT ||
	       type == GP_EV_API_CALL_STACK || type == GP_EV_API_CALL_USTACK;
}
#endif

/* Why a native stack walk ended (gp_api_call_ustack.stop). */
enum gp_stack_stop {
	GP_STOP_END = 0,    /* at the thread's first frame: the stack is whole */
	GP_STOP_DEPTH,	    /* GP_USTACK_MAX_FRAMES frames */
	GP_STOP_NO_MAPPING, /* a pc in no executable mapping the session knows of the process */
	GP_STOP_NO_TABLE, /* a frame in a file without unwind information, and no frame pointer to follow */
	GP_STOP_TABLE, /* the file's table says the caller cannot be found from here (stop_detail) */
	GP_STOP_RBP_UNKNOWN, /* the row needs rbp, which an earlier frame could not restore */
	GP_STOP_READ,	     /* the stack's memory could not be read (err) */
	GP_STOP_FP_END,	     /* frame pointers: the chain ended (no table: whole or not, unknown) */
	GP_STOP_MAX,
};

/* What the Python walk found (gp_api_call_ustack.py). */
enum gp_py_status {
	GP_PY_NO = 0, /* not a Python process (none asked for) */
	GP_PY_OK,     /* the thread's frames, all of them */
	GP_PY_NO_THREAD, /* no Python thread state on this thread (a thread Python did not start or enter) */
	GP_PY_READ,  /* a frame could not be read (err): the frames before it */
	GP_PY_DEPTH, /* GP_PY_MAX_FRAMES frames */
};

/*
 * One on-CPU slice of a traced thread, emitted at its switch-out only when
 * the session asked for scheduling in the timeline (--timeline-sched): the
 * thread ran on cpu from hdr.ts_ns (its switch-in) to end_ns (its
 * switch-out) and took minor/major_faults page faults meanwhile (deltas of
 * the task's min_flt/maj_flt: faults are taken by the running thread, so the
 * counters at a switch-out are those of the next switch-in). The gap to its
 * next slice is off-CPU time, of the kind `left` says. oncpu_threads_*: how
 * many threads of its process were on a CPU just after its arrival and just
 * after its departure, counted in the kernel at the switches it saw (a
 * thread whose arrival was not seen is not counted in: GP_SSF_UNCOUNTED).
 */
struct gp_sched_slice {
	struct gp_event_hdr hdr; /* ts_ns = arrival on the CPU; flags: GP_SSF_* */
	__u64 end_ns;		 /* departure */
	__u32 minor_faults;
	__u32 major_faults;
	__u32 cpu;
	__u16 left; /* enum gp_sched_left */
	__u16 pad;
	__u32 oncpu_threads_start;
	__u32 oncpu_threads_end;
};

enum gp_sched_left {
	GP_SL_BLOCKED = 1,   /* a voluntary switch: it slept or waited */
	GP_SL_PREEMPTED = 2, /* an involuntary switch: still runnable, waiting for a CPU */
	GP_SL_EXITED = 3,    /* its last switch: the thread is gone */
};

#define GP_SSF_START_ESTIMATED \
	(1u << 0) /* its arrival was not reported: ts_ns = end_ns - its CPU time */
#define GP_SSF_SINCE_WINDOW (1u << 1) /* on a CPU when the trace began: ts_ns is that moment */
#define GP_SSF_FAULTS_UNKNOWN \
	(1u << 2)		   /* its fault counters at the start are unknown: faults read 0 */
#define GP_SSF_UNCOUNTED (1u << 3) /* its arrival was not counted: oncpu_threads_start reads 0 */

_Static_assert(sizeof(struct gp_sched_slice) == 56, "gp_sched_slice layout");
_Static_assert(sizeof(struct gp_event_hdr) == 24, "gp_event_hdr layout");
_Static_assert(sizeof(struct gp_api_call_stack) == 144 + 8 + 8 * GP_STACK_MAX_FRAMES,
	       "gp_api_call_stack layout");
_Static_assert(sizeof(struct gp_api_call_ustack) == GP_USTACK_REC_SIZE(GP_USTACK_MAX_WORDS, 0),
	       "gp_api_call_ustack layout");
_Static_assert(sizeof(struct gp_api_call_ext) == 144 + 8 + GP_EXT_DATA_MAX,
	       "gp_api_call_ext layout");
_Static_assert(sizeof(struct gp_api_call) == 144, "gp_api_call layout");
_Static_assert(sizeof(struct gp_thread_cpu) == 112, "gp_thread_cpu layout");

/* ---- per-thread CPU accounts kept in the kernel ------------------------- */
/*
 * Key of bpf/sched.bpf.c's "thread_acct" hash map: the tid and the task's
 * start time, so that a tid reused while the previous thread is still
 * finishing its exit never mixes two threads' accounts.
 */
struct gp_thread_key {
	__u32 tid;
	__u32 pad;
	__u64 start_time; /* task_struct.start_time (CLOCK_MONOTONIC ns) */
};

/*
 * Value of "thread_acct", for every thread of a traced process seen
 * switching, created or exiting. Times are CLOCK_MONOTONIC ns; userspace
 * closes the open interval at the end.
 */
struct gp_thread_acct {
	__u32 tgid;
	__u32 flags;	   /* GP_TAF_* */
	__u64 start_ns;	   /* creation if GP_TAF_STARTED, else the window start */
	__u64 end_ns;	   /* exit; 0 while alive */
	__u64 in_ns;	   /* last switch-in (GP_TAF_ON_CPU set) */
	__u64 sum_out;	   /* the task's sum_exec_runtime at its last switch-out (GP_TAF_SUM_OUT) */
	__u64 out_ns;	   /* last switch-out (GP_TAF_ON_CPU clear) */
	__u64 oncpu_ns;	   /* on-CPU time up to sum_out: task-clock time (sum_exec_runtime) */
	__u64 offcpu_ns;   /* closed off-CPU intervals */
	__u64 runnable_ns; /* of which: after an involuntary switch (waiting for a CPU) */
	__u64 vol_switches;
	__u64 invol_switches;
	__u64 nvcsw; /* the task's own counters at its last switch-out */
	__u64 nivcsw;
	__u64 min_flt_exit; /* the task's fault counters at exit (GP_TAF_EXITED) */
	__u64 maj_flt_exit;
	__u64 min_flt_base; /* the task's fault counters when its account opened (GP_TAF_FAULT_BASE) */
	__u64 maj_flt_base;
	__u64 min_flt_in; /* --timeline-sched: the task's fault counters when its current (or next) on-CPU */
	__u64 maj_flt_in; /*   slice began (GP_TAF_FLT_IN) */
	__u32 oncpu_threads_in; /* --timeline-sched: its process's threads on a CPU after its last switch-in */
	__u32 pad;
	char comm[16]; /* at creation, refreshed at exit */
};

/*
 * A traced thread's final account, emitted at its last context switch (its
 * fault counters and CPU time are final then) and removed from the map, so
 * thread churn never fills it. The collector turns it into a
 * gp_thread_cpu record (it knows the fault baselines).
 */
struct gp_thread_exit {
	struct gp_event_hdr hdr; /* ts_ns = its last switch */
	struct gp_thread_acct acct;
};

#define GP_TAF_ON_CPU	     (1u << 0)
#define GP_TAF_COUNTERS_SEEN (1u << 1) /* nvcsw/nivcsw hold a previous switch-out's values */
#define GP_TAF_STARTED	     (1u << 2) /* created during the window */
#define GP_TAF_EXITED	     (1u << 3)
#define GP_TAF_SUM_OUT	     (1u << 4) /* sum_out is valid (else: on-CPU since the window opened) */
#define GP_TAF_PREEMPTED     (1u << 5) /* its last switch-out was involuntary: runnable while off */
#define GP_TAF_FAULT_BASE    (1u << 6) /* min/maj_flt_base hold its fault counters at the start */
#define GP_TAF_FLT_IN	     (1u << 7) /* min/maj_flt_in are valid */
#define GP_TAF_ONCPU_COUNTED (1u << 8) /* its arrival was counted in its process's on-CPU threads */

_Static_assert(sizeof(struct gp_thread_acct) == 176, "gp_thread_acct layout");
_Static_assert(sizeof(struct gp_thread_exit) == 200, "gp_thread_exit layout");

/* ---- processes: admission into the trace, and holds --------------------- */
/*
 * Which processes are traced is decided in the kernel, at the moment it
 * matters (bpf/procs.bpf.c, and fork in bpf/sched.bpf.c): a process is
 * "admitted" by setting its bit in tgid_bits; every probe filters on it.
 * Library files are probed once per file (inode) for every process; the
 * kernel knows which files are probed (lib_files) and stops ("holds") a
 * process with SIGSTOP when it execs or maps a file that userspace has not
 * looked at yet, so that no call can run before the probes are in place.
 */

/* Key of the "lib_files" hash map: a file as the kernel names it. */
struct gp_file_key {
	__u64 dev; /* inode->i_sb->s_dev, the kernel's encoding (major << 20 | minor) */
	__u64 ino;
};

enum gp_file_state {
	GP_FILE_ARMED = 1, /* its CUDA functions are probed */
	GP_FILE_PLAIN = 2, /* looked at: nothing to probe in it */
};

/* Value of the one-entry "scope" array map: which processes the session wants. */
#define GP_SCOPE_FOLLOW_FORKS (1u << 0) /* a new process forked by an admitted one is admitted */
#define GP_SCOPE_ALL	      (1u << 1) /* every process that maps an armed file is admitted */
#define GP_SCOPE_NAMES	      (1u << 2) /* a process that execs one of names[] is admitted */
#define GP_SCOPE_CODE_MAPS \
	(1u << 3) /* an admitted process mapping any file's code is reported (GP_PF_CODE) */
/* with GP_SCOPE_ALL: such a process is held, not admitted; userspace decides (--container: by its cgroup) */
#define GP_SCOPE_ASK (1u << 4)
#define GP_MAX_NAMES 8
#define GP_NAME_LEN  64

struct gp_scope {
	__u32 flags; /* GP_SCOPE_* */
	__u32 nnames;
	__u32 self_tgid; /* gpuprobed itself: never admitted, never held */
	__u32 pad;
	char names[GP_MAX_NAMES]
		  [GP_NAME_LEN]; /* matched against comm (15 chars) and the executable's name */
};

enum gp_proc_kind {
	GP_PROC_EXEC =
		1,    /* an admitted process (or, with GP_PF_HELD, one in scope) exec'd dev/ino */
	GP_PROC_FORK, /* a new process forked by parent_tgid, admitted */
	GP_PROC_MAP, /* a process mapped the CUDA-named file dev/ino (through fd); GP_PF_CODE: any file */
};

#define GP_PF_HELD     (1u << 0) /* the process was sent SIGSTOP: userspace must SIGCONT it */
#define GP_PF_ADMITTED (1u << 1) /* the kernel admitted it with this record */
#define GP_PF_CODE \
	(1u << 2) /* GP_PROC_MAP of a file not named like CUDA's: new code (unwind tables) */
#define GP_PF_MAPPED \
	(1u << 3) /* with GP_PF_CODE: that mmap has returned (the mapping is made, or failed) */

struct gp_proc_event {
	struct gp_event_hdr hdr; /* tgid, tid; flags: GP_PF_*; ts_ns */
	__u32 kind;		 /* enum gp_proc_kind */
	__u32 parent_tgid;	 /* GP_PROC_FORK */
	__u64 dev, ino;		 /* GP_PROC_EXEC: the executable; GP_PROC_MAP: the file */
	__s32 fd;		 /* GP_PROC_MAP: the descriptor being mapped */
	__u32 pad;
	char comm[16];
};

_Static_assert(sizeof(struct gp_proc_event) == 72, "gp_proc_event layout");

/*
 * The registry of holds: the "holds" hash map, one entry per stop sent,
 * written by the kernel before it sends SIGSTOP (no entry, no stop), so
 * that a process is never stopped without a record of it that outlives
 * gpuprobed (src/processes/holds.c: its resumer continues what a killed
 * gpuprobed left). Keyed by the process and the hold's time: a second stop
 * of the same process is a second entry, and a SIGCONT sent at time T ends
 * exactly the entries of that process held before T (one SIGCONT ends
 * every stop pending), whoever sends it.
 */
#define GP_HOLDS_MAX 4096 /* stops pending at once; one more is not sent (hold_lost) */

enum gp_hold_reason {
	GP_HOLD_EXEC = 1, /* exec of a file not looked at yet */
	GP_HOLD_MAP,	  /* mapping of a CUDA library not looked at yet */
	GP_HOLD_PYTHON,	  /* a traced call's return with Python code objects new to the kernel */
};

#define GP_HOLDF_TIMED_OUT (1u << 0) /* continued by the resumer at --hold-max-ms (released_ns) */

struct gp_hold_key {
	__u32 tgid;
	__u32 pad;
	__u64 held_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) when the stop was sent */
};

struct gp_hold {
	__u64 start_boottime; /* the process's (its leader's) task->start_boottime: a recycled pid differs */
	__u32 reason;	  /* enum gp_hold_reason */
	__u32 owner_tgid; /* the gpuprobed that holds it: only its own resumer continues it */
	__u32 flags;	  /* GP_HOLDF_* (userspace) */
	__u32 pad;
	__u64 released_ns; /* GP_HOLDF_TIMED_OUT: when the resumer continued it */
	__u64 dev, ino;	   /* the file it was held for (struct gp_file_key); 0: GP_HOLD_PYTHON */
};

_Static_assert(sizeof(struct gp_hold_key) == 16, "gp_hold_key layout");
_Static_assert(sizeof(struct gp_hold) == 48, "gp_hold layout");

/* ---- attach cookie ------------------------------------------------------ */
/*
 * Every uprobe/uretprobe carries a 64-bit cookie so that one generic BPF
 * program serves every API:  bits 0..15 api id, 16..31 probe index,
 * 32..63 flags (a __u32): bits 0..15 of it, GP_CK_* of api.h's shape table,
 * tell the programs what to read beyond registers; bits 16..17 say how the
 * session counts the call; bit 18 is GP_CK_NCCL_ID (a shape flag that did
 * not fit in 0..15); bits 19..31 are free.
 */
#define GP_CK_STACK2 (1u << 0) /* args[6..7] = the two u64 at [sp+8], [sp+16] */
#define GP_CK_LAUNCH_CFG \
	(1u << 1) /* args[3..7] = 40 bytes of *(cudaLaunchConfig_t / CUlaunchConfig *)args[0] */
#define GP_CK_OUT (1u << 2) /* at return, out = *(u64 *)args[GP_CK_OUT_SLOT] when ret == 0 */
#define GP_CK_CU_LAUNCH \
	(1u             \
	 << 3) /* cuLaunchKernel: [sp+8..sp+32) = bz, smem, stream -> args[5] hi, args[6], args[7] */
#define GP_CK_DEREF2 (1u << 4) /* args[6..7] = 16 bytes at *(void **)args[2] (cuMemCreate's prop) */
#define GP_CK_OUT32  (1u << 5) /* with GP_CK_OUT: the out value is 32 bits wide (an int *) */
#define GP_CK_STR \
	(1u << 6) /* at return, the string at args[GP_CK_STR_SLOT] into a gp_api_call_ext */
#define GP_CK_NCCL_ALL	     (1u << 7) /* at return, ncclCommInitAll's arrays into a gp_api_call_ext */
#define GP_CK_OUT_SLOT_SHIFT 8	       /* bits 8..10: argument slot of the out pointer */
#define GP_CK_STR_SLOT_SHIFT 11	       /* bits 11..13: argument slot of the string */
#define GP_CK_USTACK \
	(1u << 14) /* outermost calls: the record carries the user stack (gp_api_call_stack) */
#define GP_CK_VOID		(1u << 15) /* the function returns void: ret is recorded as 0 */
/*
 * The call's return folds it into the in-kernel aggregate map "api_agg"
 * instead of writing a record (--aggregate; see "In-kernel aggregation" in
 * docs/design.md). Userspace sets it only for APIs whose record feeds
 * nothing but counts, times, errors and CPU attribution.
 */
#define GP_CK_AGG		(1u << 16)
/*
 * The probe is one of the hot ones an overhead budget attaches only for
 * part of each period (src/collect/duty.h). A call whose return was cut
 * off by that detach is counted as duty_cut, not as a missed return.
 */
#define GP_CK_GATED		(1u << 17)
/*
 * ncclCommInitRank[Config]: the 128-byte ncclUniqueId passed by value (in
 * memory, at [sp+8] at entry) is hashed at entry into args[6]
 * (gp_nccl_id_hash: the same on every rank and node that got the id).
 */
#define GP_CK_NCCL_ID		(1u << 18)
#define GP_NCCL_UNIQUE_ID_BYTES 128
/* One step of the id's hash, word by word (little-endian u64), from GP_NCCL_ID_SEED; BPF and userspace alike. */
#define GP_NCCL_ID_SEED		0xcbf29ce484222325ULL
static inline __u64 gp_nccl_id_mix(__u64 h, __u64 word)
{
	h = (h ^ word) * 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 29);
}
#define GP_CK_OUT_AT(slot)   (GP_CK_OUT | ((slot) << GP_CK_OUT_SLOT_SHIFT))
#define GP_CK_STR_AT(slot)   (GP_CK_STR | ((slot) << GP_CK_STR_SLOT_SHIFT))
#define GP_CK_OUT_SLOT(f)    (((f) >> GP_CK_OUT_SLOT_SHIFT) & 7)
#define GP_CK_STR_SLOT(f)    (((f) >> GP_CK_STR_SLOT_SHIFT) & 7)
/* ncclCommInitAll: at most this many communicators are read */
#define GP_NCCL_INIT_ALL_MAX 64

#define GP_COOKIE(api, probe, flags) \
	((__u64)(__u16)(api) | ((__u64)(__u16)(probe) << 16) | ((__u64)(__u32)(flags) << 32))
#define GP_COOKIE_API(c)   ((__u16)((c)&0xffff))
#define GP_COOKIE_PROBE(c) ((__u16)(((c) >> 16) & 0xffff))
#define GP_COOKIE_FLAGS(c) ((__u32)((c) >> 32))

/*
 * Kernels without attach cookies (before 5.15): where a probe sits, the key
 * of gpu_api.bpf.c's probe_sites (value: its cookie). dev as gp_file_key's.
 */
struct gp_probe_site {
	__u64 dev;
	__u64 ino;
	__u64 offset; /* in the file */
};

/* Kernels without task storage: the threads with a traced call's state at once (a hash by thread id). */
#define GP_TASK_STATE_HASH_MAX 65536

/* Probe indexes index the in-kernel hit counters. */
#define GP_MAX_PROBES 4096

/* ---- loss counters kept in the kernel ----------------------------------- */
/* Per-CPU array map "drops", indexed by these. Userspace sums over CPUs. */
enum gp_bpf_drop {
	GP_DROP_RINGBUF_FULL = 0, /* completed call not recorded: ring buffer full */
	GP_DROP_DEPTH_OVERFLOW,	 /* call not recorded: too many nested traced calls on one thread */
	GP_DROP_MISSED_RETURN,	 /* entry seen, its return never seen (longjmp, detach mid-call) */
	GP_DROP_RETURN_NO_ENTRY, /* return seen without its entry (call began before attach) */
	GP_DROP_TASK_STORAGE,	 /* per-thread state could not be allocated */
	GP_DROP_ARG_READ,	 /* a user-memory argument could not be read (record flagged) */
	GP_DROP_THREAD_TABLE_FULL, /* a traced thread's CPU account could not be created */
	GP_DROP_SWITCH_MISSED, /* context switches inferred from the task's counters, not seen */
	GP_DROP_SWITCH_IN_UNSEEN, /* a thread seen leaving the CPU, its arrival not reported: off-CPU estimated */
	GP_DROP_THREAD_EXIT_LOST, /* a thread's final CPU account not recorded: ring buffer full */
	GP_DROP_HOLD_LOST, /* a process that needed a hold could not be held/told: its first calls may be missing */
	GP_DROP_PROC_LOST, /* a fork/exec/map of a traced process not told to userspace: ring buffer full */
	GP_DROP_STACK_UNREAD, /* a call's user stack could not be walked: recorded with its call site only */
	GP_DROP_SCHED_SLICE_LOST, /* --timeline-sched: an on-CPU slice not recorded: ring buffer full */
	GP_DROP_AGG_TABLE_FULL, /* --aggregate: the aggregate map was full: the call went as a record (not lost) */
	GP_DROP_DUTY_CUT, /* overhead budget: a call's return probe was detached before it returned (estimated) */
	GP_DROP_HOLD_TIMEOUT, /* a hold continued at --hold-max-ms by the resumer, before userspace was done (counted by it) */
	GP_DROP_PROBE_UNKNOWN, /* kernels without attach cookies: a probe hit whose site was not found (call not seen) */
	GP_BPF_DROP_MAX,
};

/* ---- in-kernel aggregation of hot calls (--aggregate) ------------------ */
/*
 * Key and per-CPU value of the "api_agg" hash map: the calls of one API made
 * by one thread, outermost (parent_api 0) or inside the traced call of API
 * parent_api (as a record's GP_EVF_PARENT would say). Userspace sums the
 * CPUs' values, and folds the difference since its previous read into the
 * model (gp_model_api_aggregate). Durations: dur_hist[k] counts calls of
 * [2^(k-1), 2^k) ns (k = 64 - clz(dur); k = 0: dur 0).
 */
#define GP_AGG_HIST_BUCKETS 64
struct gp_api_agg_key {
	__u32 tgid;
	__u32 tid;
	__u16 api;
	__u16 parent_api;
	__u32 pad;
};

struct gp_api_agg {
	__u64 calls;
	__u64 errors;
	__u64 sum_ns;
	__u64 min_ns; /* meaningful when calls > 0 */
	__u64 max_ns;
	__u64 error_ns; /* of sum_ns: calls that failed */
	__u64 offcpu_ns;
	__u64 vol_switches;
	__u64 invol_switches;
	__u64 minor_faults;
	__u64 major_faults;
	__u64 first_ns;	  /* entry of the first call (this CPU's) */
	__u64 last_ns;	  /* return of the last call (this CPU's) */
	__s32 last_error; /* return code of the latest failed call */
	__u32 pad;
	__u32 dur_hist[GP_AGG_HIST_BUCKETS];
};

_Static_assert(sizeof(struct gp_api_agg_key) == 16, "gp_api_agg_key layout");
_Static_assert(sizeof(struct gp_api_agg) == 112 + 4 * GP_AGG_HIST_BUCKETS, "gp_api_agg layout");

/* Maximum traced calls nested on one thread (runtime -> driver -> ...). */
#define GP_MAX_DEPTH 4

/*
 * One traced call in progress (entered, not returned) on a thread of a
 * traced process: what the task iterator gp_inflight_iter (bpf/sched.bpf.c)
 * writes for every frame in task storage, outermost first. The stall
 * detector (src/collect/stalls.c) reads them; the probes are not involved.
 */
struct gp_inflight {
	__u32 tgid, tid;
	__u16 api;   /* enum gp_api_id */
	__u16 depth; /* 0: outermost */
	__u32 pad;
	__u64 ts_ns; /* entry */
	__u64 args[GP_MAX_ARGS];
};

_Static_assert(sizeof(struct gp_inflight) == 88, "gp_inflight layout");

#endif /* GPUPROBED_EVENTS_H */
