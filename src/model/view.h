/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * view.h — the model as its readers see it: every table of a model and of
 * its processes, to be read through const pointers, and the functions that
 * read them. The report builders and sinks (src/output), the daemon's
 * metrics and the replay planner include this header and nothing else of
 * src/model but model.h; only the src/model files change these tables
 * (model_internal.h: their writers). Nothing here is ordered for printing:
 * readers sort (docs/report-format.md states each order).
 */
#ifndef GP_MODEL_VIEW_H
#define GP_MODEL_VIEW_H

#include "model/model.h"
#include "model/hist.h"
#include "model/ranges.h"
#include "model/u64map.h"

#define GP_KERNEL_CONFIGS_MAX 16   /* distinct (grid, block, smem) kept per kernel */
#define GP_DEVICE_MAX         1024 /* device ids tracked: -1 (not observed) .. GP_DEVICE_MAX - 1 */

/* Stream keys: explicit handles are user addresses, so the top bit is free. */
#define GP_STREAM_KEY_LEGACY      0ULL
#define GP_STREAM_KEY_PER_THREAD  (1ULL << 63) /* | tid */
#define GP_CUDA_STREAM_LEGACY     1ULL         /* cudaStreamLegacy */
#define GP_CUDA_STREAM_PER_THREAD 2ULL         /* cudaStreamPerThread */

/* ---- transfers ---------------------------------------------------------- */
enum gp_dir { GP_DIR_HTOD, GP_DIR_DTOH, GP_DIR_DTOD, GP_DIR_HTOH, GP_DIR_PTOP, GP_DIR_DEFAULT, GP_DIR_MAX };
enum gp_hostmem { GP_HM_PAGEABLE, GP_HM_PINNED, GP_HM_MANAGED, GP_HM_DEVICE, GP_HM_UNKNOWN, GP_HM_MAX };

const char *gp_dir_name(enum gp_dir d);
const char *gp_hostmem_name(enum gp_hostmem h);

struct gp_xfer_row {
	__u64 calls;
	__u64 bytes;
	__u64 min_bytes;
	__u64 max_bytes;
	__u64 total_ns; /* host time in the copy calls */
	__u64 size_hist[GP_SIZE_BUCKETS];
	/* copies of at most GP_SMALL_COPY_BYTES (the small-copies recommendation) */
	__u64 small_calls, small_bytes, small_ns;
};

#define GP_SMALL_COPY_BYTES (64ull * 1024)

struct gp_memset_row {
	__u64 calls;
	__u64 bytes;
	__u64 total_ns;
};

/* ---- memory ------------------------------------------------------------- */
enum gp_alloc_kind {
	GP_AK_DEVICE, GP_AK_MANAGED, GP_AK_PINNED, GP_AK_REGISTERED,
	GP_AK_MAPPED, /* a virtual range mapped with cuMemMap: device memory for copies, counted via its handle */
};

const char *gp_alloc_kind_name(enum gp_alloc_kind k);

struct gp_alloc {
	struct gp_range r; /* first: the range sets hold struct gp_range * */
	__u64 ptr;
	__u64 bytes;
	__u64 ts_ns;
	__s32 device; /* -1: the allocating thread's device was not observed */
	__u32 tid;
	__u16 api;
	__u8 kind; /* enum gp_alloc_kind */
};

struct gp_mem_counts {
	__u64 alloc_calls;
	__u64 free_calls;
	__u64 alloc_bytes;
	__u64 freed_bytes;
	__u64 live_bytes;
	__u64 peak_bytes;
};

struct gp_memory {
	struct gp_range_set device_ranges; /* device + managed allocations */
	struct gp_range_set host_ranges;   /* pinned allocations + host registrations */
	struct gp_mem_counts total;        /* device + managed, all devices together */
	struct gp_mem_counts *devices;     /* [device + 1], ndevices entries */
	size_t ndevices;
	__u64 managed_alloc_calls;
	__u64 managed_alloc_bytes;
	__u64 untracked_frees;     /* cudaFree* of a pointer not allocated while traced */
	__u64 stale_evictions;     /* tracked range overlapped by a new allocation: its free was missed */
	__u64 stale_bytes;         /* bytes of those; they leave live_bytes without a free call */
	struct gp_mem_counts pinned; /* cudaMallocHost / cudaHostAlloc / cudaFreeHost */
	__u64 pinned_untracked_frees;
	__u64 register_calls;
	__u64 unregister_calls;
	__u64 registered_bytes;
	__u64 unregistered_bytes;
	__u64 registered_live_bytes;
	__u64 untracked_unregisters;
	/* CUDA virtual memory management (cuMemCreate / cuMemRelease, cuMemMap / cuMemUnmap) */
	struct gp_u64map vmm_handles; /* handle -> struct gp_vmm_handle; its bytes count as device memory */
	struct gp_mem_counts vmm;     /* physical allocations: create / release */
	__u64 vmm_untracked_releases; /* cuMemRelease of a handle not created while traced */
	__u64 vmm_map_calls, vmm_unmap_calls, vmm_mapped_bytes, vmm_unmapped_bytes, vmm_mapped_live_bytes;
	/* device, managed and pinned allocations made by calls that are not stream-ordered (not a pool's):
	 * live now and most live at once (the alloc-churn recommendation) */
	__u64 blocking_live_allocs, blocking_peak_allocs;
};

struct gp_vmm_handle {
	__u64 bytes;
	__s32 device;
};

/* ---- kernels ------------------------------------------------------------ */
struct gp_kconfig {
	__u32 grid[3];
	__u32 block[3];
	__u64 smem;
	__u64 launches;
};

struct gp_kernel {
	char *name;    /* demangled; NULL when unresolved */
	bool handle_before_attach; /* driver launches of CUfunction/CUkernel handles never seen created */
	char *mangled; /* "" when the symbol is not mangled; NULL when unresolved */
	__u64 func;    /* first argument of the first launch site seen */
	__u64 ret_addr;
	__u32 sites;   /* distinct (func, ret_addr) that resolved to this kernel */
	__u64 calls;    /* launch calls naming this kernel */
	__u64 launches; /* of which succeeded: the kernel was enqueued */
	__u64 errors;   /* of which failed */
	__u64 driver_launches; /* of launches: made through the driver API directly (cuLaunchKernel & co.) */
	__u64 host_ns;
	struct gp_kconfig configs[GP_KERNEL_CONFIGS_MAX];
	unsigned nconfigs;
	__u64 config_other_launches;  /* launches whose config did not fit in configs[] */
	__u64 config_unread_launches; /* launch configuration could not be read (arg_read) */
};

struct gp_graph {
	__u64 exec;
	__u64 calls;    /* cudaGraphLaunch calls */
	__u64 launches; /* of which succeeded */
	__u64 errors;
	__u64 host_ns;
};

/* ---- CPU, scheduling, faults -------------------------------------------- */
/* What happened to a thread while it was somewhere (inside calls, or its whole window). */
struct gp_cpu_attr {
	__u64 offcpu_ns;
	__u64 vol_switches;
	__u64 invol_switches;
	__u64 minor_faults;
	__u64 major_faults;
};

/* A thread's CPU account over its traced window (GP_EV_THREAD_CPU). */
struct gp_thread_cpu_acct {
	bool known;
	__u64 start_ns, end_ns;
	__u64 oncpu_ns;
	__u64 runnable_ns;      /* of all.offcpu_ns: runnable, waiting for a CPU */
	struct gp_cpu_attr all; /* the whole window */
	__u32 flags;            /* GP_TCF_* */
};

enum gp_verdict {
	GP_VERDICT_UNKNOWN,    /* no CPU account */
	GP_VERDICT_CPU_BOUND,
	GP_VERDICT_WAITING_GPU,
	GP_VERDICT_WAITING_OTHER, /* I/O, locks, sleeps: off-CPU outside GPU calls */
};

/* Thresholds of the verdict (docs/report-format.md, "cpu"). */
#define GP_VERDICT_CPU_BOUND_PCT 70  /* share of the wall time on-CPU or waiting for one: CPU-bound */
#define GP_VERDICT_GPU_WAIT_PCT  50  /* share of off-CPU time inside GPU calls that makes GPU-bound */

struct gp_cpu_summary {
	bool known;               /* at least one thread account */
	__u64 wall_ns;            /* the process's traced window */
	unsigned threads;         /* with an account */
	unsigned threads_faults_unknown;
	__u64 thread_wall_ns;     /* sum of the threads' windows */
	__u64 cpu_ns;             /* sum of their on-CPU time */
	__u64 runnable_ns;        /* of all.offcpu_ns: runnable, waiting for a CPU */
	struct gp_cpu_attr all;   /* sums over the threads' windows */
	struct gp_cpu_attr in_calls;      /* inside any traced call */
	struct gp_cpu_attr in_sync_calls; /* inside synchronisation calls (GP_A_SYNC_CALL) */
	/* the verdict looks at the threads that made traced calls (all threads if none did) */
	unsigned focus_threads;
	__u64 focus_wall_ns, focus_cpu_ns, focus_runnable_ns, focus_offcpu_ns, focus_offcpu_in_calls_ns;
	enum gp_verdict verdict;
	enum gp_api_id top_api;   /* the API with the most off-CPU time inside it */
	__u64 top_api_offcpu_ns;
};

/* ---- what a synchronisation waited for ----------------------------------- */
/*
 * The rule (docs/report-format.md, "nccl"): a synchronisation call that
 * returns waited for the last work queued on the stream(s) it covers since
 * their previous synchronisation; its blocked time is charged to that work.
 */
enum gp_work_kind { GP_WORK_NONE, GP_WORK_KERNEL, GP_WORK_COPY, GP_WORK_MEMSET, GP_WORK_COLL };
/* The blocked time of a process's synchronisation calls, by what they waited for (streams.c). */
struct gp_pending {
	__u64 blocked_ns[GP_WORK_COLL + 1];
	__u64 blocked_calls[GP_WORK_COLL + 1];
};

/* ---- NCCL ------------------------------------------------------------------ */
struct gp_nccl_row {          /* one (communicator, op, dtype) */
	enum gp_nccl_op op;
	int dtype;
	__u64 calls, errors;
	__u64 elements, bytes;    /* bytes as nccl-tests count them (gp_nccl_layout) */
	__u64 host_ns;            /* host time inside the calls */
	__u64 blocked_calls, blocked_ns; /* synchronisations that waited for it, and their time */
	__u64 measured, measured_bytes, measured_ns; /* enqueue -> sync return, alone on its stream */
	__u64 size_hist[GP_SIZE_BUCKETS];
	__u64 bytes_unknown_nranks; /* calls whose byte count needs nranks, not known for the communicator */
	__u32 peers_or_roots[8];  /* Send/Recv peers, Broadcast/Reduce roots seen (first 8) */
	unsigned npeers;
};

/* One collective of a communicator as this rank saw it (its sequence number is its index + 1). */
struct gp_nccl_arrival {
	__u64 entry_ns;   /* the call's entry (CLOCK_MONOTONIC of this rank's host) */
	__u64 release_ns; /* the return of the first synchronisation that awaited it; 0: none seen */
};

/* At most this many collectives of one communicator are remembered per rank (16 MiB); later ones are counted. */
#define GP_NCCL_ARRIVALS_MAX (1u << 20)

struct gp_nccl_comm {
	__u64 handle;
	__s32 rank, nranks, device; /* -1: not known */
	__u64 init_api;             /* how it was created (enum gp_api_id), 0: before attach */
	__u64 parent;               /* ncclCommSplit: the communicator it was split from */
	bool destroyed;
	/*
	 * The same on every rank and node (docs/report-format.md, "comm_id"): from the ncclUniqueId
	 * (ncclCommInitRank), the parent's id and the split (ncclCommSplit), or the process
	 * (ncclCommInitAll). Not known for a communicator created before attach.
	 */
	bool comm_id_known;
	__u64 comm_id;
	__u64 splits;               /* successful ncclCommSplit calls on it: numbers its children */
	/* collectives (not Send/Recv) that returned ncclSuccess: the k-th is sequence number k on every rank */
	__u64 collectives;
	enum gp_nccl_op last_op;    /* the latest of them (collectives > 0) */
	__u64 last_bytes, last_entry_ns;
	struct gp_nccl_arrival *arrivals; /* [seq - 1] for seq <= narrivals (at most GP_NCCL_ARRIVALS_MAX) */
	size_t narrivals, arrivals_cap;
	__u32 last_tid;             /* the thread of the latest collective (collectives > 0) */
	struct gp_nccl_row **rows;
	size_t nrows;
	/*
	 * Live only (the stall detector's last look at the calls in progress, src/collect/stalls.c;
	 * not in the capture: a capture has no present): a collective call on it entered and not
	 * returned, and the collective this rank waits on (inside that call, or blocked in a
	 * synchronisation whose awaited work is it) since wait_since_ns (0: not waiting).
	 */
	bool inflight;
	__u64 wait_seq, wait_since_ns;
};

/* A stall (src/collect/stalls.c): ranks waited on collective seq longer than the timeout for others. */
struct gp_nccl_stall_behind {
	__s32 rank;
	__u32 pid;
	__u64 last_seq; /* the last collective it had entered */
	char *state;    /* what it was doing then */
};
struct gp_nccl_stall {
	__u64 comm_id, seq;
	enum gp_nccl_op op; /* GP_NCCL_OP_MAX: not known */
	__u64 bytes;        /* 0: not known */
	__u64 waited_ns;    /* the longest wait of the waiting ranks when it was said */
	__u64 mono_ns;      /* when it was said (CLOCK_MONOTONIC) */
	__s32 *waiting;     /* ranks, ascending */
	size_t nwaiting;
	struct gp_nccl_stall_behind *behind; /* by rank */
	size_t nbehind;
};

struct gp_nccl {
	struct gp_nccl_comm **comms; /* in order of first sight */
	size_t ncomms;
	struct gp_u64map by_handle;  /* handle -> comm */
	__u64 group_calls;           /* ncclGroupStart/End pairs (ncclGroupEnd calls) */
};

/* ---- streams, events, threads, API ------------------------------------- */
struct gp_stream {
	__u64 key;    /* GP_STREAM_KEY_* or the handle */
	__u64 created;
	__u64 destroyed;
	__u64 kernels;
	__u64 graph_launches;
	__u64 copies;
	__u64 copy_bytes;
	__u64 memsets;
	__u64 memset_bytes;
	__u64 collectives;  /* NCCL operations queued on it */
	__u64 collective_bytes;
	__u64 event_records;
	__u64 event_waits;
	__u64 sync_calls;
	__u64 sync_ns;
};

struct gp_events {
	__u64 created;
	__u64 destroyed;
	__u64 records;
	__u64 sync_calls;
	__u64 sync_ns;
};

struct gp_thread {
	__u32 tid;
	char *name;
	__u64 calls;
	__u64 errors;
	__u64 host_ns;
	__u64 first_ns; /* entry of the first traced call */
	__u64 last_ns;  /* return of the last traced call */
	__s32 device;   /* from the last successful cudaSetDevice; -1: not observed */
	struct gp_cpu_attr in_calls;   /* inside its traced calls */
	struct gp_thread_cpu_acct cpu; /* its whole window */
};

struct gp_errcount {
	__s32 code;
	__u64 count;
};

/* A call made inside another traced call on the same thread: its implementation. */
#define GP_API_LINKS_MAX 8
struct gp_api_link {
	__u16 api;  /* the other API */
	__u64 calls;
};

struct gp_api_stats {
	struct gp_stats time; /* host-observed duration of each call made outside any other traced call */
	struct gp_cpu_attr inside; /* the calling threads' off-CPU time, switches, faults during the calls */
	__u64 errors;
	__u64 error_ns;            /* host time of the calls that failed */
	__u64 redundant_syncs;     /* synchronisations that covered no work queued since the previous one */
	__u64 redundant_ns;        /* and their host time */
	struct gp_errcount *codes; /* distinct non-zero return codes */
	size_t ncodes;
	/* calls made inside another traced call (not in time, errors, or any total) */
	__u64 nested_calls;
	__u64 nested_ns;
	__u64 nested_errors;
	struct gp_api_link outer[GP_API_LINKS_MAX];     /* as the implementation of */
	struct gp_api_link inner[GP_API_LINKS_MAX];     /* implemented by (for an outer API) */
	__u64 links_other;                              /* links that did not fit */
	__u64 aggregated_calls;    /* of time.count: folded in from kernel aggregates (aggregate.c) */
	__u64 estimated_calls;     /* of aggregated_calls: scaled up from a duty cycle (overhead budget), not seen */
};

struct gp_library {
	char *path;
	char *build_id; /* hex, "" when none */
	enum gp_family family;
	bool is_static;
};

/* GPU work a layer queued itself (calls outside any other traced call, that succeeded). */
struct gp_layer_work {
	__u64 launches;       /* kernel launches */
	__u64 graph_launches;
	__u64 copies, copy_bytes;
	__u64 memsets, memset_bytes;
	__u64 collectives, collective_bytes; /* NCCL */
	__u64 host_ns;        /* host time in those calls */
};

/* ---- call stacks (stacks.c) ---------------------------------------------- */
/* What one call did, for the row of its stack: filled by the aggregator of its shape. */
enum gp_op_kind { GP_OP_OTHER, GP_OP_KERNEL, GP_OP_GRAPH, GP_OP_COPY, GP_OP_MEMSET, GP_OP_ALLOC, GP_OP_FREE,
		  GP_OP_COLL, GP_OP_SYNC };
struct gp_op {
	enum gp_op_kind kind;
	__u8 dir, hostmem;             /* copies: enum gp_dir, enum gp_hostmem */
	__u8 alloc_kind;               /* allocations and frees: enum gp_alloc_kind */
	__s16 nccl_op, dtype;          /* collectives */
	const struct gp_nccl_comm *comm; /* collectives: its communicator (NULL: not known) */
	__u64 seq;                     /* and its sequence number there (0: a Send/Recv, or it failed) */
	const struct gp_kernel *kernel; /* launches */
	__u64 bytes;                   /* what this call moved, set, allocated or reduced */
};

const char *gp_op_kind_name(enum gp_op_kind k);

struct gp_stack_op {          /* one (API, operation) at a stack */
	__u16 api;
	struct gp_op op;
	__u64 calls, errors, bytes, host_ns;
};

/*
 * Why a stack ends before the thread's first frame (report.json stacks[].truncated): the frame-pointer
 * chain ended (UNWIND), the depth limit, unreadable memory, a pc in no mapping known of the process, a
 * file without unwind information and no frame pointer to follow, a row of a file's table that cannot
 * give the caller (unwind_detail: its GP_UW_STOP_*), rbp not restorable.
 */
enum gp_stack_trunc { GP_TRUNC_NONE, GP_TRUNC_DEPTH, GP_TRUNC_UNWIND, GP_TRUNC_UNREAD, GP_TRUNC_NO_MAPPING,
		      GP_TRUNC_NO_UNWIND_INFO, GP_TRUNC_UNWIND_TABLE, GP_TRUNC_RBP_UNKNOWN, GP_TRUNC_MAX };
const char *gp_stack_trunc_name(enum gp_stack_trunc t); /* NULL for GP_TRUNC_NONE */
/* "gap", "end", "expression", ...: a stop row's cause (unwind.h GP_UW_STOP_*). */
const char *gp_uw_stop_cause_name(unsigned cause);

struct gp_stack {
	struct gp_stack *next; /* hash chain */
	__u64 hash;
	__u32 seq;             /* order of first sight */
	__u16 nframes;         /* native frames; 0: the "[stack table full]" stack */
	__u16 npy;             /* Python frames after them in ips[], two words each */
	__u8 trunc;            /* enum gp_stack_trunc (unwind: set when symbolized) */
	__u8 unwind_detail;    /* GP_TRUNC_UNWIND_TABLE: the row's GP_UW_STOP_* */
	__u8 py_status;        /* enum gp_py_status of the walk */
	__u8 frames_fp;        /* native frames found by frame pointer (no table) */
	bool fp_end;           /* the walk ended where a frame-pointer chain did: whole if that is a thread's start */
	__u64 calls, bytes, host_ns;
	struct gp_stack_op *ops;
	__u32 nops, ops_cap;
	__u32 *py_ids;         /* [npy] indexes into gp_stacks.frames of its Python frames, named at first sight */
	__u32 *frame_ids;      /* [nsym] indexes into gp_stacks.frames, once symbolized: innermost first, */
	__u16 nsym;            /* the native frames with each eval frame replaced by the Python frames it ran */
	__u16 py_unanchored;   /* of them, Python frames whose eval frame the native walk did not reach (outermost) */
	__u64 ips[];           /* [0] the call site, then the callers; then npy Python frames (code, instr) */
};

enum gp_frame_kind { GP_FRAME_NATIVE, GP_FRAME_PYTHON };

/*
 * A frame symbolized: one per distinct address of a process (native), one
 * per distinct (code object, line) (Python).
 */
struct gp_stack_frame {
	__u64 addr;            /* native: the return address; Python: the code object's address */
	char *function;        /* demangled, without parameters; Python: the qualified name; NULL: none */
	char *symbol;          /* raw symbol; NULL: none (Python: none) */
	char *file;            /* mapped file; Python: the code's file name; NULL: anonymous or unmapped */
	char *build_id;        /* hex, "" when none */
	__u64 sym_offset, file_offset;
	__s32 line;            /* Python: the line being executed, 0 when the instruction has none */
	__u8 kind;             /* enum gp_frame_kind */
	__u8 source;           /* enum gp_sym_source */
	bool thread_root;      /* where threads start: a stack ending here is complete */
	bool python_eval;      /* native, in the interpreter's eval loop: it runs Python frames */
};

/* A Python frame as recorded, to its frame: found again without asking the resolver. */
struct gp_py_seen {
	__u64 code, word;
	__u32 id;
};

struct gp_stacks {
	struct gp_u64map by_hash;   /* hash -> struct gp_stack chain */
	struct gp_stack **v;        /* in order of first sight */
	size_t n, cap;
	struct gp_stack *overflow;  /* calls beyond --max-stacks */
	__u64 calls;                /* calls with a stack */
	bool symbolized;
	struct gp_stack_frame *frames;
	size_t nframes, frames_cap;
	struct gp_u64map frame_by_addr; /* addr -> index + 1 */
	struct gp_u64map py_by_key;     /* hash of (code, line) -> index + 1, probed linearly */
	struct gp_py_seen *py_seen;     /* recorded Python frames named so far */
	size_t npy_seen, py_seen_cap;
	struct gp_u64map py_seen_by_key; /* hash of (code, word) -> py_seen index + 1, probed linearly */
	__u64 py_unnamed;               /* Python frames the resolver could not name */
};

/* ---- process ------------------------------------------------------------ */
struct gp_process {
	__u32 pid;
	char *host;             /* the host it ran on when not the session's (gpuprobed merge); NULL: the session's */
	/*
	 * gpuprobed merge: its times are its own host's CLOCK_MONOTONIC; plus clock_offset_ns they are
	 * on the merged axis. own_start_ns/own_end_ns: its own session's bounds (0: the model's).
	 */
	__s64 clock_offset_ns;
	__u64 own_start_ns, own_end_ns;
	char *comm;
	char *cmdline;
	__u64 attach_ns;
	__u64 exit_ns;
	bool exited;
	bool traced_from_start;
	char *traced_because;   /* "pid", "launched", "fork", "name", "cuda"; NULL: not said */
	__u32 parent_pid;       /* the traced process that forked it; 0: none */
	__u32 execs;            /* execs seen while traced */
	/* where it runs (gp_model_process_place); all NULL and ns_pid 0: not said (a host process) */
	struct {
		__u32 ns_pid;       /* its pid inside its own pid namespace; 0: not said (pid) */
		char *runtime;      /* "podman", "docker", "containerd", "cri-o", "kubernetes"; NULL: none */
		char *id;           /* container id (hex); NULL: not in a container */
		char *name;         /* container name, where the runtime's files on the host say it */
		char *pod_uid, *pod_name, *pod_namespace; /* Kubernetes; NULL: not in a pod / not known */
		char *cgroup;       /* the cgroup path they were read from */
	} place;
	struct {
		bool found;         /* gpuprobed looked and said (gp_model_process_python) */
		bool walked;        /* its frames are recorded with its calls' stacks */
		__u32 hexversion;   /* PY_VERSION_HEX; 0: no interpreter found */
		char *note;         /* what was found, or why its frames are not walked */
	} python;

	struct gp_library *libs;
	size_t nlibs;

	struct gp_api_stats *api[GP_API_MAX]; /* allocated with the API's first call */
	__u64 api_total_ns;
	__u64 api_calls;
	struct gp_cpu_attr in_calls;      /* inside any traced call */
	struct gp_cpu_attr in_sync_calls; /* inside synchronisation calls */

	struct gp_layer_work work[GP_FAM_NCCL + 1];      /* [enum gp_family]: the combined GPU work view */
	struct gp_xfer_row xfer[GP_DIR_MAX][GP_HM_MAX][2]; /* [dir][host memory][sync] */
	struct gp_memset_row memsets[2];                 /* [sync] */
	struct gp_memory mem;

	struct gp_kernel **kernels;
	size_t nkernels, kernels_cap;
	struct gp_kernel *unknown_handles; /* driver launches of handles created before attach */
	__u64 modules_loaded, modules_unloaded, functions_named;
	struct gp_nccl *nccl;      /* NULL until the process makes an NCCL call */
	struct gp_pending pending; /* what its synchronisations waited for */
	struct gp_u64map graphs;  /* exec handle -> struct gp_graph */
	struct gp_u64map streams; /* stream key -> struct gp_stream */
	struct gp_events events;
	struct gp_u64map threads; /* tid -> struct gp_thread */
	struct gp_stacks stacks;
	size_t nwaiting;       /* inner calls whose outer call has not returned yet (nesting.c) */
	__u64 nested_left_out; /* inner calls of outer calls that never returned (plus nwaiting) */
	struct gp_process_writer *writer; /* what only the model's writers use (model_internal.h) */
};

struct gp_probe {
	char *target;
	__u32 pid; /* 0: every process mapping target */
	char *symbol;
	__u64 offset;
	enum gp_api_id api;
	__u64 entry_hits;
	__u64 return_hits;
};

struct gp_drop {
	char *name;
	__u64 count;
};

/* ---- the GPU's side (gpus.c): NVML's devices, sampled ---------------------- */
struct gp_gpu_stat {
	__u64 n, min, max, last;
	__u64 last_ns;             /* the time of the sample that gave last */
	double sum;                /* of the values: the plain mean */
	double wsum, wt;           /* weighted by each sample's window: the time mean */
};

/* One process on one device, as NVML listed it. */
struct gp_gpu_proc_row {
	__u32 pid;
	__u64 samples;             /* memory samples */
	__u64 first_ns, last_ns;
	__u64 mem_last, mem_max;   /* device memory NVML says it holds */
	__u64 util_samples;
	__u64 sm_sum, sm_max, mem_util_sum, mem_util_max;
	__u64 sm_last, mem_util_last, util_last_ns; /* the latest utilization NVML gave, and when */
};

struct gp_gpu_error_row {
	__u32 index;               /* GP_GPU_NO_DEVICE: not a device's */
	char *call, *text;
	__s32 code;
	__u64 count, first_ns;
};

struct gp_gpu_device {
	__u32 index;
	char *name, *uuid;
	__u64 memory_total;
	__u64 samples, first_ns, last_ns;
	__u64 window_start_ns, window_ns; /* the first sample's window start; the windows' sum */
	struct gp_gpu_stat m[GP_GM_N];
	__u64 throttle_seen;       /* every reason bit seen */
	bool lost;                 /* NVML said GPU_IS_LOST */
	__u64 lost_ns;
	struct gp_gpu_proc_row *procs;
	size_t nprocs, capprocs;
};

struct gp_gpus {
	int state;                 /* enum gp_nvml_state */
	char *note, *driver;
	__u64 interval_ns;
	__u64 sampler_cpu_ns;      /* the sampling thread's CPU time (its cost) */
	struct gp_gpu_device *devs;
	size_t n, cap;
	struct gp_gpu_error_row *errors;
	size_t nerrors, caperrors;
};

const struct gp_gpu_device *gp_gpu_device_of(const struct gp_model *m, __u32 index); /* NULL: none */
double gp_gpu_stat_mean(const struct gp_gpu_stat *st); /* time-weighted; 0 without samples */

struct gp_model_writer;
struct gp_process_writer;

struct gp_model {
	struct gp_resolver resolver;
	bool has_resolver;
	struct gp_report_source source; /* strings owned; kind NULL: "live" without a capture */
	const struct gp_merge_info *merge; /* gpuprobed merge: its captures and clocks (the caller's); NULL: none */
	__u64 last_event_ns; /* the latest time an ingested record reaches */
	struct gp_model_writer *writer; /* what only the model's writers use (model_internal.h) */

	struct {
		char *tool_version, *command_line, *mode, *hostname, *kernel_release;
		__u64 start_mono_ns, start_realtime_ns;
		__u64 end_mono_ns; /* 0: not set */
		__u64 probe_hit_ns; /* 0: not measured */
		__u64 probe_call_ns; /* 0: not measured */
		bool set;
		bool unwind_set;     /* unwind below was given (stacks were walked with tables) */
		struct gp_unwind_summary unwind; /* build_max_file owned */
		bool holds_set;      /* holds below was given (a live session; a capture since it has them) */
		struct gp_holds_summary holds;
		struct gp_hold_timed_out {
			__u32 pid, reason; /* enum gp_hold_reason */
			__u64 held_ns;
		} *timed_out;        /* in the order they were seen */
		size_t ntimed_out, captimed_out;
		struct gp_hold_file_row {
			__u64 dev, ino;
			__u32 reason;
			char *path;  /* NULL: unknown */
			__u64 holds, total_ns, max_ns;
		} *hold_files;       /* in the order first seen */
		size_t nhold_files, caphold_files;
		struct {
			bool set;
			char *features;       /* the features used, "btf,ring_buffer,..." */
			int perf_event_paranoid; /* GP_PARANOID_UNKNOWN: unknown */
			struct gp_kernel_replaced {
				char *feature, *since, *by, *cost;
				bool by_request; /* an option asked (--no-uprobe-multi) */
			} *replaced;
			size_t nreplaced;
			bool removal_set;
			__u64 removal_probes, removal_ns; /* the probes removed at the end, and how long it took */
			int remover_pid;   /* the process removing them after the session; 0: none */
		} kernel;
	} session;

	struct {
		char *command;
		bool set, exited;
		int exit_status;   /* exit code, or 128 + signal */
		int term_signal;   /* 0 unless killed by a signal */
	} launch;

	struct gp_skipped {
		__u32 pid;
		char *comm, *reason;
	} *skipped;
	size_t nskipped;

	struct gp_process **procs; /* in creation order; a reused pid gets a new entry */
	size_t nprocs, procs_cap;
	struct gp_u64map by_pid;   /* pid -> its newest struct gp_process */

	struct gp_probe *probes[GP_MAX_PROBES];
	struct gp_sampling sampling; /* the overhead budget's duty cycle; sampling.set: there is one */
	__u64 estimated_calls;       /* all processes' estimated_calls, for the metrics' flag */
	struct gp_drop *drops;
	size_t ndrops;

	bool stacks_on;        /* the session captured stacks */
	struct gp_gpus gpus;   /* NVML's view of the devices (gpus.c) */

	struct gp_nccl_stall *stalls; /* NCCL stalls in the order they were said */
	size_t nstalls, stalls_cap;
};

#define GP_NAME_BUF 4096

/* ---- reading ------------------------------------------------------------------ */
/* The window p was traced in, in its own clock: [its admission or the session's start, its exit or the end). */
void gp_process_window(const struct gp_model *m, const struct gp_process *p, __u64 *from, __u64 *to);
__u64 gp_model_drop_get(const struct gp_model *m, const char *name);
/* Live allocations of all kinds but registrations, by address; *out is malloc'ed (NULL when none). */
int gp_memory_live(const struct gp_process *p, const struct gp_alloc ***out, size_t *n);
const struct gp_mem_counts *gp_memory_device(const struct gp_memory *mem, int device); /* NULL if none */
/* A copy call's pointers, bytes, direction and host memory kind, as the transfer table classifies it. */
struct gp_copy_info {
	__u64 dst, src, bytes;
	enum gp_dir dir;
	enum gp_hostmem hostmem;
};
void gp_transfer_classify(const struct gp_process *p, const struct gp_api_call *c, struct gp_copy_info *out);
/* A copy's source and destination addresses alone (what classifying one costs beyond them: host_memory). */
void gp_copy_endpoints(const struct gp_api_call *c, __u64 *src, __u64 *dst);
__u64 gp_transfer_bytes(const struct gp_api_call *c); /* bytes a copy or memset call names */
/* Why k has no name, in words for reports; NULL when it has one. */
const char *gp_kernel_unresolved_reason(const struct gp_process *p, const struct gp_kernel *k);
const char *gp_driver_function_name(const struct gp_process *p, __u64 handle); /* NULL: unknown */
__u64 gp_stream_key(__u64 handle, bool per_thread_variant, __u32 tid);
/* The stream key a call names (its default stream when it takes none); false when unreadable. */
bool gp_call_stream_key(const struct gp_api_call *c, __u64 *key);
/*
 * A call in progress on thread tid of p (api, its entry arguments): the collective it waits on, as
 * *comm and *seq, when it is a collective call (seq: the communicator's next one) or a
 * synchronisation whose awaited work (the rule of "what a synchronisation waited for") is one;
 * false otherwise. Read only.
 */
bool gp_inflight_collective(const struct gp_process *p, enum gp_api_id api, __u32 tid, const __u64 *args,
			    const struct gp_nccl_comm **comm, __u64 *seq);
/* Totals over the process's thread accounts, and the verdict; [from, to) is its traced window. */
void gp_cpu_summarize(const struct gp_process *p, __u64 from, __u64 to, struct gp_cpu_summary *s);
const char *gp_verdict_kind(enum gp_verdict v);
/* cuda_errors.c */
const char *gp_cuda_error_name(int code); /* NULL for codes it does not know */
const char *gp_error_name(enum gp_family family, int code); /* the code's name in that API's enum, or NULL */

#endif /* GP_MODEL_VIEW_H */
