/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * model.h — the public face of the model: the per-process state that every
 * record (live from the ring buffer, or later from a capture file) is folded
 * into, and that every sink reads. Pure C, no I/O: the collector feeds it,
 * the sinks read it, unit tests drive it directly.
 *
 * All times are CLOCK_MONOTONIC nanoseconds (the clock of gp_event_hdr.ts_ns)
 * unless a name says otherwise.
 */
#ifndef GP_MODEL_H
#define GP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

#include "gpuprobed/api.h"
#include "gpuprobed/events.h"

struct gp_model;
struct gp_op_process_place;

/*
 * Names things the model cannot name by itself, because that needs the live
 * process (its /proc/PID/maps) or the ELF files. Called synchronously while
 * a record is ingested, at most once per distinct (tgid, func, ret_addr).
 */
/* Where a frame's name came from. */
enum gp_sym_source { GP_SYM_NONE, GP_SYM_ELF, GP_SYM_PERF_MAP, GP_SYM_PYTHON };

/* One address of a process, symbolized (strings valid until the resolver's next call). */
struct gp_frame_sym {
	const char *function; /* demangled, without parameters; NULL: no symbol */
	const char *symbol;   /* raw (mangled) symbol; NULL: none */
	const char *file;     /* path of the mapped file; NULL: anonymous or unmapped */
	const char *build_id; /* hex GNU build-id of that file, "" when none */
	__u64 sym_offset;     /* addr - symbol start */
	__u64 file_offset;    /* addr's offset in the file */
	enum gp_sym_source source;
};

/* A recorded Python frame, named (strings valid until the resolver's next call). */
struct gp_py_frame_sym {
	const char *qualname; /* the code's qualified name ("Model.forward"); 3.10: its name */
	const char *file;     /* the code's file name, as the interpreter has it */
	int line;	      /* the line being executed; 0: the instruction has none */
};

struct gp_resolver {
	void *ctx;
	/*
	 * Name of the kernel launched by a launch call whose first argument was
	 * func and which returns to ret_addr; stack (may be NULL) the call's user
	 * stack, stack[0] == ret_addr. Fills name (demangled, NUL-ended)
	 * and mangled (may be empty when the symbol is not mangled). Returns 0,
	 * or -ENOENT when no name can be found.
	 */
	int (*kernel_name)(void *ctx, __u32 tgid, __u64 func, __u64 ret_addr, const __u64 *stack,
			   unsigned nstack, char *name, size_t name_len, char *mangled,
			   size_t mangled_len);
	/* Optional: demangles a C++ symbol (a copy of it when not mangled). */
	void (*demangle)(const char *mangled, char *out, size_t len);
	/* Optional: the same without parameters ("ml::scale<float>"). */
	void (*demangle_short)(const char *mangled, char *out, size_t len);
	/*
	 * Optional, called once per new distinct stack while records arrive (the
	 * process may still live): make sure every address of it can be
	 * symbolized later (a maps snapshot covering it, a perf map read).
	 */
	void (*stack_seen)(void *ctx, __u32 tgid, const __u64 *ips, unsigned n);
	/* Optional: symbolize addr of tgid into *out. 0, or -ENOENT when nothing is known. */
	int (*symbolize)(void *ctx, __u32 tgid, __u64 addr, struct gp_frame_sym *out);
	/*
	 * Optional, called while records arrive (the process may still live),
	 * once per distinct recorded Python frame of a process: its code
	 * object's address and second word (unwind.h GP_PYF_*) to its names and
	 * line. 0, or -errno when it cannot be named.
	 */
	int (*py_frame)(void *ctx, __u32 tgid, __u64 code, __u64 word, struct gp_py_frame_sym *out);
};

/* What the session was: printed at the top of every report. */
struct gp_session_info {
	const char *tool_version;
	const char *command_line; /* gpuprobed's own argv, joined */
	const char *mode;	  /* "pid", "name", "launch", "all", "daemon" */
	const char *hostname;
	const char *kernel_release;
	__u64 start_mono_ns;	 /* session start, CLOCK_MONOTONIC */
	__u64 start_realtime_ns; /* the same instant, CLOCK_REALTIME */
};

/*
 * The unwind tables that let stacks be walked through code without frame
 * pointers, as they stand (docs/report-format.md "session.unwind"): the
 * processes and mappings published to the kernel, the files' tables in the
 * pool of rows, what building them cost, the files left without one by
 * cause (each attempt counted).
 */
struct gp_unwind_summary {
	__u64 procs, procs_max, procs_full;
	__u64 maps, maps_none, maps_over;
	__u64 files, files_built, files_reused, files_evicted;
	__u64 rows, rows_max, pool_rows;
	__u64 build_ns, build_ns_max;
	const char *build_max_file; /* the file of the longest build; NULL: none built */
	__u64 fail_open, fail_not_elf, fail_no_cfi, fail_too_big, fail_pool_full, fail_files_full,
		fail_no_segment, fail_other;
	__u64 python_holds; /* stops of a process until new Python code objects on its stacks were named */
};

/*
 * The holds of the session (docs/report-format.md "session.holds"): stops of
 * processes until a file was probed or Python code named, and their time.
 */
struct gp_holds_summary {
	__u64 holds;	/* stops ended */
	__u64 total_ns; /* held time, all of them together */
	__u64 max_ns;	/* the longest */
	__u64 timed_out; /* ended at --hold-max-ms before gpuprobed was done (each named: hold_timeout) */
	__u64 exec, map, python; /* holds by reason (enum gp_hold_reason) */
	__u64 files_left_out;	 /* holds in no file's row (beyond 1,024 files) */
};

struct gp_model *gp_model_new(const struct gp_resolver *resolver); /* NULL + errno on failure */
void gp_model_free(struct gp_model *m);				   /* NULL is a no-op */

void gp_model_set_session(struct gp_model *m, const struct gp_session_info *info);
void gp_model_set_session_end(struct gp_model *m, __u64 end_mono_ns);
/* The timeline's files written beside the reports (trace.json, trace.1.json ...); 0: none. */
void gp_model_set_timeline_files(struct gp_model *m, __u32 files);
/* What one probe hit costs a traced thread here, measured at the session's start (0: not measured). */
void gp_model_set_probe_cost(struct gp_model *m, __u64 probe_hit_ns);
/* What a traced call (both hits and our programs' work) costs here, measured at the start (0: not). */
void gp_model_set_probe_call_cost(struct gp_model *m, __u64 probe_call_ns);
/*
 * What the kernel offers (report: session.kernel): the features used
 * ("btf,ring_buffer,..."), kernel.perf_event_paranoid (GP_PARANOID_UNKNOWN:
 * unknown); then each feature replaced, the oldest Linux that has it, what
 * stands in and what that costs (strings copied).
 */
#define GP_PARANOID_UNKNOWN (-1000)
int gp_model_set_kernel(struct gp_model *m, const char *features, int perf_event_paranoid);
int gp_model_kernel_replaced(struct gp_model *m, const char *feature, const char *since,
			     const char *by, const char *cost, bool by_request);
/* The probes removed at the session's end (pairs), and the time their removal took. */
void gp_model_set_probe_removal(struct gp_model *m, __u64 probes, __u64 ns);
/* The process that removes them after the session (their removal then took the session ns: a hand-over). */
void gp_model_set_probe_remover(struct gp_model *m, int pid);
/* The unwind tables' state (replaces the previous one; build_max_file copied). */
void gp_model_set_unwind(struct gp_model *m, const struct gp_unwind_summary *u);
/* The holds so far (replaces the previous summary). */
void gp_model_set_holds(struct gp_model *m, const struct gp_holds_summary *h);
/*
 * The holds of one file (dev/ino, the kernel's names; 0/0: Python code) for
 * reason, so far (replaces the previous totals of that file and reason);
 * path NULL: unknown. 0 or -ENOMEM.
 */
int gp_model_hold_file(struct gp_model *m, __u64 dev, __u64 ino, __u32 reason, const char *path,
		       __u64 holds, __u64 total_ns, __u64 max_ns);
/* A hold of pid (enum gp_hold_reason) ended at --hold-max-ms after held_ns. 0 or -ENOMEM. */
int gp_model_hold_timeout(struct gp_model *m, __u32 pid, __u32 reason, __u64 held_ns);
bool gp_model_session_ended(const struct gp_model *m);
/* The latest time an ingested record reaches (a call's return), 0 before any. */
__u64 gp_model_last_event_ns(const struct gp_model *m);

/*
 * A traced process. traced_from_start: gpuprobed was attached before the
 * process could make its first traced call, so every allocation and pinned
 * range it made has been seen (otherwise "pageable" means "outside every
 * pinned range allocated while traced", and reports say so).
 */
/* When pid's newest process was admitted (CLOCK_MONOTONIC ns); 0 when the model has none. */
__u64 gp_model_process_attach_ns(const struct gp_model *m, __u32 pid);
int gp_model_process_add(struct gp_model *m, __u32 pid, const char *comm, const char *cmdline,
			 __u64 attach_mono_ns, bool traced_from_start);
int gp_model_process_exited(struct gp_model *m, __u32 pid, __u64 exit_mono_ns);
/*
 * Why pid is traced ("pid": named on the command line, "launched": the
 * command gpuprobed started, "fork": forked by a traced process, parent_pid;
 * "name": its name matched --name; "cuda": --all, it uses CUDA).
 */
int gp_model_process_origin(struct gp_model *m, __u32 pid, const char *because, __u32 parent_pid);
/* pid exec'd while traced: its new name and command line. */
int gp_model_process_exec(struct gp_model *m, __u32 pid, const char *comm, const char *cmdline);
/*
 * The daemon's bounds on memory: removes every exited process whose exit is
 * before exited_before_ns (its grace period is over), then, while more than
 * keep_at_most processes are kept, the exited ones that exited first, then
 * the live ones idle longest (latest traced call, or admission). A live one
 * removed starts again, counted from zero and without its name, at its next
 * traced call. Their stacks free room under max_stacks. Not recorded by a
 * tap (the daemon writes no capture). Returns the processes removed;
 * *evicted (may be NULL) those removed by the bound.
 */
size_t gp_model_forget_exited(struct gp_model *m, __u64 exited_before_ns, size_t keep_at_most,
			      size_t *evicted);
/*
 * What gpuprobed found of pid's Python interpreter: hexversion its
 * PY_VERSION_HEX (0: none found), walked whether its frames are recorded
 * with its calls' stacks, note one line saying what was found or why its
 * frames are not walked.
 */
int gp_model_process_python(struct gp_model *m, __u32 pid, __u32 hexversion, bool walked,
			    const char *note);
/*
 * Where pid runs (src/processes/containers.h): its pid inside its pid
 * namespace, its container (runtime, id, name) and Kubernetes pod (uid,
 * name, namespace), the cgroup path they come from; NULL or "": not known.
 */
int gp_model_process_place(struct gp_model *m, const struct gp_op_process_place *place);
/* A process the session wanted but could not trace, and why (e.g. its root cannot be read). */
int gp_model_skipped_add(struct gp_model *m, __u32 pid, const char *comm, const char *reason);
/*
 * The command gpuprobed launched (-- CMD): its exit status when it exited
 * (exit code, or 128 + signal with term_signal set).
 */
int gp_model_set_launch(struct gp_model *m, const char *command, bool exited, int exit_status,
			int term_signal);
/* build_id: hex GNU build-id of the file ("" or NULL: none) */
int gp_model_library_add(struct gp_model *m, __u32 pid, const char *path, enum gp_family family,
			 bool is_static, const char *build_id);
int gp_model_thread_name(struct gp_model *m, __u32 pid, __u32 tid, const char *name);

/*
 * Instrumentation: a probe pair (uprobe at entry, uretprobe at return) with
 * index idx (the cookie's probe index) on symbol in target (a file path),
 * firing for process pid only (0: for every process that maps target).
 * Hits are what the kernel counted, independent of any loss downstream.
 */
int gp_model_probe_add(struct gp_model *m, unsigned idx, const char *target, __u32 pid,
		       const char *symbol, __u64 file_offset, enum gp_api_id api);
int gp_model_probe_hits(struct gp_model *m, unsigned idx, __u64 entry_hits, __u64 return_hits);

/*
 * Named loss counters from outside the model (BPF's per-cause drops, the
 * collector's own). Set, not added: callers pass totals. The model adds its
 * own (malformed records, allocations whose pointer could not be read).
 */
void gp_model_drop_set(struct gp_model *m, const char *name, __u64 count);

/*
 * The drops{} name of an in-kernel loss counter (enum gp_bpf_drop in
 * events.h): "ringbuf_full", "depth_overflow", "missed_return",
 * "return_without_entry", "task_storage", "arg_read", "thread_table_full",
 * "switch_missed", "switch_in_unseen", "thread_exit_lost", "hold_lost",
 * "proc_event_lost", "stack_unread", "sched_slice_lost", "agg_table_full";
 * NULL if out of range.
 * Every report lists these (at 0 until set) and the model's own counters.
 */
const char *gp_bpf_drop_name(enum gp_bpf_drop d);

/*
 * Call stacks: whether the session captures them, and how many distinct
 * stacks (all processes together) are kept; calls beyond count in
 * drops.stacks_over_limit under one "[stack table full]" stack.
 */
void gp_model_set_stacks(struct gp_model *m, bool captured, size_t max_stacks);
bool gp_model_stacks_captured(const struct gp_model *m);
/*
 * Names every frame of every stack with the resolver's symbolize (once per
 * distinct address of a process) and decides which stacks are truncated.
 * Call before writing reports; again after more records is fine. Returns
 * the distinct addresses named, *nstacks (may be NULL) the stacks done now.
 */
size_t gp_model_symbolize_stacks(struct gp_model *m, size_t *nstacks);

/*
 * Fold one record in. data/len is exactly one record as it came from the
 * ring buffer. Returns 0, or -EINVAL for a malformed record (counted in
 * drops as "malformed_records", never fatal).
 */
int gp_model_ingest(struct gp_model *m, const void *data, size_t len);

/*
 * Calls counted in the kernel (--aggregate; docs/design.md "In-kernel
 * aggregation"): the calls of one (pid, tid, api, parent_api) made since the
 * previous aggregate of that key. Counts, sums and the histogram are deltas;
 * min_ns/max_ns are over every call of the key so far; first_ns/last_ns the
 * earliest entry and latest return of the key's calls so far. dur_hist[k]
 * counts calls of [2^(k-1), 2^k) ns (k = 0: 0 ns). All errors are attributed
 * to last_error (the latest failed call's code). Fixed layout, no padding
 * holes: a capture stores it as it is (GP_MOP_API_AGGREGATE).
 */
struct gp_api_aggregate {
	__u32 pid, tid;
	__u16 api;	  /* enum gp_api_id */
	__u16 parent_api; /* the enclosing traced call's API; 0: outermost */
	__s32 last_error;
	__u64 calls, errors;
	__u64 sum_ns, error_ns; /* host time of the calls, and of those that failed */
	__u64 min_ns, max_ns;
	__u64 offcpu_ns, vol_switches, invol_switches, minor_faults, major_faults;
	__u64 first_ns, last_ns;
	__u64 dur_hist[GP_AGG_HIST_BUCKETS];
};

/*
 * Folds an aggregate in: the same counts, sums, errors, CPU attribution,
 * thread and per-layer work totals that ingesting its calls one by one
 * would give (percentiles within a factor of two: log2 buckets). Returns 0,
 * -EINVAL (a bad api: counted as malformed_records) or -ENOMEM.
 */
int gp_model_api_aggregate(struct gp_model *m, const struct gp_api_aggregate *a);

/*
 * calls of pid's outermost api calls, already folded in (an aggregate that
 * was scaled up), were not seen but estimated from a duty cycle (the
 * overhead budget, src/collect/duty.h). 0, or -EINVAL / -ENOMEM.
 */
int gp_model_api_estimated(struct gp_model *m, __u32 pid, unsigned api, __u64 calls);

/* The overhead budget's duty cycle, as the reports show it (docs/report-format.md, "sampling"). */
struct gp_sampling {
	bool set;      /* the session can gate its hot probes (else none of this is shown) */
	bool pad[7];   /* a capture stores the struct as it is: no stray bytes */
	double budget; /* share of the traced processes' CPU time the probes may cost; 0: none */
	double duty;   /* the current period's share of time the hot probes are attached */
	__u64 periods; /* periods (of 1 s) so far */
	__u64 sampled_periods; /* of which: with the hot probes attached for only part of it */
	__u64 attached_ns;     /* time the hot probes were attached, over those periods */
	__u64 period_ns;       /* the periods' total time */
	double overhead; /* last period: estimated probe cost / traced CPU time, as attached; < 0: unknown */
	double overhead_full; /* the same with every probe attached all the time; < 0: unknown */
	__u64 over_budget;    /* periods over the budget even at the shortest duty cycle */
	double hit_ns; /* the cost of one probe hit used for the estimates (measured at the start) */
};
_Static_assert(sizeof(struct gp_sampling) == 8 + 7 * 8 + 3 * 8, "gp_sampling layout");
void gp_model_set_sampling(struct gp_model *m, const struct gp_sampling *s);
_Static_assert(sizeof(struct gp_api_aggregate) == 16 + 13 * 8 + 8 * GP_AGG_HIST_BUCKETS,
	       "gp_api_aggregate layout");

/*
 * A tap sees every operation that changes the model (model_ops.h) right
 * after it happened, serialized: the capture file records them so that a
 * later load rebuilds the same model. record() gets data NULL when the
 * operation could not be serialized (out of memory): it is lost, count it.
 */
struct gp_model_tap {
	void *ctx;
	void (*record)(void *ctx, unsigned op, const void *data, size_t len);
};
void gp_model_set_tap(struct gp_model *m, const struct gp_model_tap *tap); /* NULL: none */

/*
 * Where the records came from: report.json "source". Not an operation (a
 * capture does not record it): it is what differs between a live report
 * and the report of its capture.
 */
struct gp_report_source {
	const char *kind; /* "live" or "capture" */
	const char
		*capture_file; /* live: the capture written (NULL: none); capture: the file read */
	__u64 ops;	       /* operations written / read */
	__u64 lost_ops;	       /* live: operations the capture lost (disk full) */
	__u64 chunks;	       /* chunks written / read whole */
	__u64 corrupt_chunks;  /* capture: chunks skipped */
	bool complete;	       /* capture: its end was read; live: it was closed cleanly */
	const char *cut; /* capture: where and how it ends when not complete; NULL otherwise */
	const char *corruption; /* capture: the first corrupt chunk; NULL when none */
};
void gp_model_set_source(struct gp_model *m, const struct gp_report_source *src);

/*
 * gpuprobed merge: the captures a model was merged from, and how their
 * clocks were put on one axis (the first capture's CLOCK_MONOTONIC): a
 * capture's time plus its offset_ns is the merged axis' (docs/report-format.md
 * "merge"). Owned by the caller, who keeps it until the reports are written.
 */
struct gp_merge_capture {
	const char *path, *host;
	__u64 ops, chunks, corrupt_chunks, processes;
	bool complete;
	const char *cut, *corruption; /* as struct gp_report_source's; NULL: none */
	/* its clock */
	const char *
		method; /* "reference", "collectives", "realtime" (the recorded relation only), "none" */
	__s64 offset_ns; /* used: merged = its CLOCK_MONOTONIC + offset_ns */
	__s64 uncertainty_ns; /* collectives: half the spread of the middle 80 % of their estimates; -1: unknown */
	bool realtime_known;	  /* it recorded CLOCK_REALTIME - CLOCK_MONOTONIC at its start */
	__s64 realtime_offset_ns; /* the offset that relation gives (realtime_known) */
	__u64 collectives;	  /* collectives whose releases estimated the offset */
	size_t aligned_to;	  /* the capture they were compared with (collectives) */
	__u64 comm_id;		  /* the communicator they were collectives of */
	bool bounded; /* causal bounds found: the offset cannot lie outside [lo_ns, hi_ns] */
	__s64 lo_ns, hi_ns;
};

struct gp_merge_info {
	const struct gp_merge_capture *captures;
	size_t ncaptures;
	const char *const *notes; /* what a reader must know: unrelated jobs, old captures, ... */
	size_t nnotes;
};

/* The merged processes and loss counters of src moved into m (src keeps none), on host, at clock offset. */
int gp_model_adopt(struct gp_model *m, struct gp_model *src, const char *host,
		   __s64 clock_offset_ns);
void gp_model_set_merge(struct gp_model *m, const struct gp_merge_info *merge);

/*
 * Observer: sees every outermost traced call (made outside any other traced
 * call) right after the model folded it in, decoded; the timeline
 * (timeline/trace_json.h) is one. Calls made inside another traced call (the
 * runtime's driver call) are not shown to it: their outer call stands for
 * them. The view and what it points to are valid during the callback only.
 */

/* Work a synchronisation covered on one stream: the stream's queued work numbers [first_seq, end_seq). */
struct gp_sync_cover {
	__u64 stream; /* stream key (model_internal.h: GP_STREAM_KEY_* or the handle) */
	__u64 first_seq;
	__u64 end_seq;
};

struct gp_kernel;
struct gp_stack;
struct gp_op;

struct gp_call_view {
	__u32 pid, tid;
	enum gp_api_id api;
	__u64 ts_ns, dur_ns; /* entry, host-observed time in the call */
	__s32 ret;
	const char *error; /* ret's name in the API's enum; NULL when 0 or unknown */
	const char *op; /* what it did: "kernel", "copy", "memset", "alloc", "free", "collective",
				      "sync", "graph", "other" */
	__u64 bytes;	/* copied, set, allocated, reduced; 0 when it names none */
	const char *direction;	 /* copies: "HtoD", ...; NULL otherwise */
	const char *host_memory; /* copies: "pinned", "pageable", ...; NULL otherwise */
	const char *kernel;	 /* launches: the kernel's demangled name; NULL when unresolved */
	bool has_stream;	 /* the call names a stream (stream is its key) */
	__u64 stream;
	bool queued;		 /* it queued work on stream that a later synchronisation covers */
	__u64 queue_seq;	 /* that work's number on its stream, from 0 */
	bool memory_changed;	 /* it allocated or freed device memory */
	__u64 device_live_bytes; /* the process's live device (+ managed) memory after the call */
	const struct gp_sync_cover *covered; /* a synchronisation: what it waited for */
	size_t ncovered;
	/* the model's own rows (view.h), for sinks that key on them (the SQL export): NULL when none */
	const struct gp_kernel *kernel_row; /* launches: its kernels[] row */
	const struct gp_stack *stack;	    /* calls with a stack: its stacks row */
	const struct gp_op *op_detail;	    /* what it did, decoded (op above is its kind's name) */
};

/* ---- the GPU's side (NVML, src/gpu/; the tables: gpus.c, view.h) ----------------------------- */
/*
 * Every metric a device sample holds: enum name, report.json key, unit. A metric a call did not
 * give is left out of the sample's valid bits (it failed: said by gp_model_gpu_error).
 */
#define GP_GPU_METRIC_TABLE(X)                    \
	X(UTIL_GPU, "gpu_util_pct", "%")          \
	X(UTIL_MEM, "memory_util_pct", "%")       \
	X(MEM_USED, "memory_used_bytes", "bytes") \
	X(SM_CLOCK, "sm_clock_mhz", "MHz")        \
	X(MEM_CLOCK, "memory_clock_mhz", "MHz")   \
	X(POWER, "power_mw", "mW")                \
	X(TEMP, "temperature_c", "C")             \
	X(PCIE_TX, "pcie_tx_kbps", "KB/s")        \
	X(PCIE_RX, "pcie_rx_kbps", "KB/s")        \
	X(THROTTLE, "throttle_reasons", "bits")

enum gp_gpu_metric {
#define GP_GM_ENUM(NAME, key, unit) GP_GM_##NAME,
	GP_GPU_METRIC_TABLE(GP_GM_ENUM)
#undef GP_GM_ENUM
		GP_GM_N
};

const char *gp_gpu_metric_key(enum gp_gpu_metric g);
const char *gp_gpu_metric_unit(enum gp_gpu_metric g);

/* One device's sample (the capture's GPU_SAMPLE, raw: the layout is the format's). */
struct gp_gpu_sample {
	__u32 index;
	__u32 valid;	 /* bit per enum gp_gpu_metric */
	__u64 mono_ns;	 /* when it was taken */
	__u64 window_ns; /* since the device's previous sample (the utilizations' window) */
	__u64 v[GP_GM_N];
};

/* What became of NVML: enum gp_nvml_state, a line for the report when it is not OK. */
enum gp_nvml_state { GP_NVML_OFF = 0, GP_NVML_OK, GP_NVML_ABSENT, GP_NVML_FAILED };
#define GP_NVML_UNKNOWN_UTIL	  (-1) /* a per-process utilization NVML did not give */
#define GP_NVML_ERROR_GPU_IS_LOST 15   /* nvml.h's NVML_ERROR_GPU_IS_LOST */

/* NVML's state; again at the end with the sampling thread's CPU time */
void gp_model_gpu_nvml(struct gp_model *m, int state, const char *note, const char *driver,
		       __u64 interval_ns, __u64 sampler_cpu_ns);
int gp_model_gpu_device(struct gp_model *m, __u32 index, const char *name, const char *uuid,
			__u64 memory_total);
int gp_model_gpu_sample(struct gp_model *m, const struct gp_gpu_sample *s);
int gp_model_gpu_process(struct gp_model *m, __u32 index, __u32 pid, __u64 mono_ns,
			 __u64 used_memory, __s32 sm_util, __s32 mem_util);
/* A failed NVML call (index: the device, or GP_GPU_NO_DEVICE); GPU_IS_LOST marks the device lost. */
#define GP_GPU_NO_DEVICE 0xffffffffu
int gp_model_gpu_error(struct gp_model *m, __u32 index, const char *call, __s32 code,
		       const char *text, __u64 mono_ns);

struct gp_model_observer {
	void *ctx;
	void (*call)(void *ctx, const struct gp_call_view *v);
	/* an on-CPU slice of a traced thread (--timeline-sched records; NULL: not wanted) */
	void (*sched)(void *ctx, const struct gp_sched_slice *s);
	/* a device's NVML sample (NULL: not wanted) */
	void (*gpu)(void *ctx, const struct gp_gpu_sample *s);
};
/*
 * A model has up to GP_MODEL_OBSERVERS_MAX observers (the timeline, the SQL export, another live
 * sink), each called in the order it was added, every one with the same view. Added: 0, -EINVAL
 * (obs NULL) or -ENOSPC (full). Removed: every observer added with ctx (the others keep their
 * order); 0 or -ENOENT. Neither from inside a callback.
 */
#define GP_MODEL_OBSERVERS_MAX 8
int gp_model_add_observer(struct gp_model *m, const struct gp_model_observer *obs);
int gp_model_remove_observer(struct gp_model *m, const void *ctx);

/*
 * An NCCL stall said (src/collect/stalls.c): ranks waiting[0..nwaiting) of communicator comm_id
 * waited on collective seq (op: GP_NCCL_OP_MAX when not known; bytes 0: not known) for waited_ns at
 * mono_ns; then each rank behind it, appended to that stall. 0, -ENOMEM or -EINVAL (no such stall).
 */
#define GP_NCCL_STALL_RANKS_MAX 256 /* waiting ranks a stall names at most */
int gp_model_nccl_stall(struct gp_model *m, __u64 comm_id, __u64 seq, unsigned op, __u64 bytes,
			__u64 waited_ns, __u64 mono_ns, const __s32 *waiting, size_t nwaiting);
int gp_model_nccl_stall_behind(struct gp_model *m, __u64 comm_id, __u64 seq, __s32 rank, __u32 pid,
			       __u64 last_seq, const char *state);
/*
 * The stall detector's live view (struct gp_nccl_comm's inflight, wait_seq, wait_since_ns; not an
 * operation: not in the capture): gp_model_nccl_live_clear forgets the last look, then each
 * communicator (pid, handle) seen busy is set (a wait keeps the earliest since).
 */
void gp_model_nccl_live_clear(struct gp_model *m);
void gp_model_nccl_live(struct gp_model *m, __u32 pid, __u64 handle, bool inflight, __u64 wait_seq,
			__u64 wait_since_ns);

#endif /* GP_MODEL_H */
