/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * view.h — the model as its readers see it: every table of a model and of
 * its processes, to be read through const pointers, and the functions that
 * read them; each domain's tables in a header of its own, included here
 * (view_memory.h, view_kernels.h, view_cpu.h, view_nccl.h, view_stacks.h,
 * view_gpus.h), the process and the model below. The report builders and
 * sinks (src/report, src/stack_formats, src/timeline), the daemon's metrics and the replay planner include
 * this header (it includes model.h), not the domain headers; only the
 * src/model files change these tables (model_internal.h: their writers, and
 * what only they use). Nothing here is ordered for printing: readers sort
 * (docs/report-format.md states each order).
 */
#ifndef GP_MODEL_VIEW_H
#define GP_MODEL_VIEW_H

#include "model/model.h"
#include "model/hist.h"
#include "model/u64map.h"
#include "model/view_cpu.h"
#include "model/view_gpus.h"
#include "model/view_kernels.h"
#include "model/view_memory.h"
#include "model/view_nccl.h"
#include "model/view_stacks.h"

/* Stream keys: explicit handles are user addresses, so the top bit is free. */
#define GP_STREAM_KEY_LEGACY	  0ULL
#define GP_STREAM_KEY_PER_THREAD  (1ULL << 63) /* | tid */
#define GP_CUDA_STREAM_LEGACY	  1ULL	       /* cudaStreamLegacy */
#define GP_CUDA_STREAM_PER_THREAD 2ULL	       /* cudaStreamPerThread */

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

/* ---- streams, events, threads, API ------------------------------------- */
struct gp_stream {
	__u64 key; /* GP_STREAM_KEY_* or the handle */
	__u64 created;
	__u64 destroyed;
	__u64 kernels;
	__u64 graph_launches;
	__u64 copies;
	__u64 copy_bytes;
	__u64 memsets;
	__u64 memset_bytes;
	__u64 collectives; /* NCCL operations queued on it */
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
	__u64 first_ns;		     /* entry of the first traced call */
	__u64 last_ns;		     /* return of the last traced call */
	__s32 device;		     /* from the last successful cudaSetDevice; -1: not observed */
	struct gp_cpu_attr in_calls; /* inside its traced calls */
	struct gp_thread_cpu_acct cpu; /* its whole window */
};

struct gp_errcount {
	__s32 code;
	__u64 count;
};

/* A call made inside another traced call on the same thread: its implementation. */
#define GP_API_LINKS_MAX 8
struct gp_api_link {
	__u16 api; /* the other API */
	__u64 calls;
};

struct gp_api_stats {
	struct gp_stats
		time; /* host-observed duration of each call made outside any other traced call */
	struct gp_cpu_attr
		inside; /* the calling threads' off-CPU time, switches, faults during the calls */
	__u64 errors;
	__u64 error_ns;	       /* host time of the calls that failed */
	__u64 redundant_syncs; /* synchronisations that covered no work queued since the previous one */
	__u64 redundant_ns;	   /* and their host time */
	struct gp_errcount *codes; /* distinct non-zero return codes */
	size_t ncodes;
	/* calls made inside another traced call (not in time, errors, or any total) */
	__u64 nested_calls;
	__u64 nested_ns;
	__u64 nested_errors;
	struct gp_api_link outer[GP_API_LINKS_MAX]; /* as the implementation of */
	struct gp_api_link inner[GP_API_LINKS_MAX]; /* implemented by (for an outer API) */
	__u64 links_other;			    /* links that did not fit */
	__u64 aggregated_calls; /* of time.count: folded in from kernel aggregates (aggregate.c) */
	__u64 estimated_calls; /* of aggregated_calls: scaled up from a duty cycle (overhead budget), not seen */
};

struct gp_library {
	char *path;
	char *build_id; /* hex, "" when none */
	enum gp_family family;
	bool is_static;
};

/* GPU work a layer queued itself (calls outside any other traced call, that succeeded). */
struct gp_layer_work {
	__u64 launches; /* kernel launches */
	__u64 graph_launches;
	__u64 copies, copy_bytes;
	__u64 memsets, memset_bytes;
	__u64 collectives, collective_bytes; /* NCCL */
	__u64 host_ns;			     /* host time in those calls */
};

/* ---- process ------------------------------------------------------------ */
struct gp_process {
	__u32 pid;
	char *host; /* the host it ran on when not the session's (gpuprobed merge); NULL: the session's */
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
	char *traced_because; /* "pid", "launched", "fork", "name", "cuda"; NULL: not said */
	__u32 parent_pid;     /* the traced process that forked it; 0: none */
	__u32 execs;	      /* execs seen while traced */
	/* where it runs (gp_model_process_place); all NULL and ns_pid 0: not said (a host process) */
	struct {
		__u32 ns_pid; /* its pid inside its own pid namespace; 0: not said (pid) */
		char *runtime; /* "podman", "docker", "containerd", "cri-o", "kubernetes"; NULL: none */
		char *id;      /* container id (hex); NULL: not in a container */
		char *name; /* container name, where the runtime's files on the host say it */
		char *pod_uid, *pod_name,
			*pod_namespace; /* Kubernetes; NULL: not in a pod / not known */
		char *cgroup;		/* the cgroup path they were read from */
	} place;
	struct {
		bool found;	  /* gpuprobed looked and said (gp_model_process_python) */
		bool walked;	  /* its frames are recorded with its calls' stacks */
		__u32 hexversion; /* PY_VERSION_HEX; 0: no interpreter found */
		char *note;	  /* what was found, or why its frames are not walked */
	} python;

	struct gp_library *libs;
	size_t nlibs;

	struct gp_api_stats *api[GP_API_MAX]; /* allocated with the API's first call */
	__u64 api_total_ns;
	__u64 api_calls;
	struct gp_cpu_attr in_calls;	  /* inside any traced call */
	struct gp_cpu_attr in_sync_calls; /* inside synchronisation calls */

	struct gp_layer_work
		work[GP_FAM_NCCL + 1]; /* [enum gp_family]: the combined GPU work view */
	struct gp_xfer_row xfer[GP_DIR_MAX][GP_HM_MAX][2]; /* [dir][host memory][sync] */
	struct gp_memset_row memsets[2];		   /* [sync] */
	struct gp_memory mem;

	struct gp_kernel **kernels;
	size_t nkernels, kernels_cap;
	struct gp_kernel *unknown_handles; /* driver launches of handles created before attach */
	__u64 modules_loaded, modules_unloaded, functions_named;
	struct gp_nccl *nccl;	   /* NULL until the process makes an NCCL call */
	struct gp_pending pending; /* what its synchronisations waited for */
	struct gp_u64map graphs;   /* exec handle -> struct gp_graph */
	struct gp_u64map streams;  /* stream key -> struct gp_stream */
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

struct gp_model_writer;
struct gp_process_writer;

struct gp_model {
	struct gp_resolver resolver;
	bool has_resolver;
	struct gp_report_source source; /* strings owned; kind NULL: "live" without a capture */
	const struct gp_merge_info
		*merge; /* gpuprobed merge: its captures and clocks (the caller's); NULL: none */
	__u64 last_event_ns;		/* the latest time an ingested record reaches */
	struct gp_model_writer *writer; /* what only the model's writers use (model_internal.h) */

	struct {
		char *tool_version, *command_line, *mode, *hostname, *kernel_release;
		__u64 start_mono_ns, start_realtime_ns;
		__u64 end_mono_ns;    /* 0: not set */
		__u64 probe_hit_ns;   /* 0: not measured */
		__u64 probe_call_ns;  /* 0: not measured */
		__u32 timeline_files; /* trace.json and its continuations written; 0: none */
		bool set;
		bool unwind_set; /* unwind below was given (stacks were walked with tables) */
		struct gp_unwind_summary unwind; /* build_max_file owned */
		bool holds_set; /* holds below was given (a live session; a capture since it has them) */
		struct gp_holds_summary holds;
		struct gp_hold_timed_out {
			__u32 pid, reason; /* enum gp_hold_reason */
			__u64 held_ns;
		} * timed_out; /* in the order they were seen */
		size_t ntimed_out, captimed_out;
		struct gp_hold_file_row {
			__u64 dev, ino;
			__u32 reason;
			char *path; /* NULL: unknown */
			__u64 holds, total_ns, max_ns;
		} * hold_files; /* in the order first seen */
		size_t nhold_files, caphold_files;
		struct {
			bool set;
			char *features;		 /* the features used, "btf,ring_buffer,..." */
			int perf_event_paranoid; /* GP_PARANOID_UNKNOWN: unknown */
			struct gp_kernel_replaced {
				char *feature, *since, *by, *cost;
				bool by_request; /* an option asked (--no-uprobe-multi) */
			} * replaced;
			size_t nreplaced;
			bool removal_set;
			__u64 removal_probes,
				removal_ns; /* the probes removed at the end, and how long it took */
			int remover_pid; /* the process removing them after the session; 0: none */
		} kernel;
	} session;

	struct {
		char *command;
		bool set, exited;
		int exit_status; /* exit code, or 128 + signal */
		int term_signal; /* 0 unless killed by a signal */
	} launch;

	struct gp_skipped {
		__u32 pid;
		char *comm, *reason;
	} * skipped;
	size_t nskipped;

	struct gp_process **procs; /* in creation order; a reused pid gets a new entry */
	size_t nprocs, procs_cap;
	struct gp_u64map by_pid; /* pid -> its newest struct gp_process */

	struct gp_probe *probes[GP_MAX_PROBES];
	struct gp_sampling
		sampling;      /* the overhead budget's duty cycle; sampling.set: there is one */
	__u64 estimated_calls; /* all processes' estimated_calls, for the metrics' flag */
	struct gp_drop *drops;
	size_t ndrops;

	bool stacks_on;	     /* the session captured stacks */
	struct gp_gpus gpus; /* NVML's view of the devices (gpus.c) */

	struct gp_nccl_stall *stalls; /* NCCL stalls in the order they were said */
	size_t nstalls, stalls_cap;
};

#define GP_NAME_BUF 4096

/* ---- reading ------------------------------------------------------------------ */
/* The window p was traced in, in its own clock: [its admission or the session's start, its exit or the end). */
void gp_process_window(const struct gp_model *m, const struct gp_process *p, __u64 *from,
		       __u64 *to);
__u64 gp_model_drop_get(const struct gp_model *m, const char *name);
__u64 gp_stream_key(__u64 handle, bool per_thread_variant, __u32 tid);
/* The stream key a call names (its default stream when it takes none); false when unreadable. */
bool gp_call_stream_key(const struct gp_api_call *c, __u64 *key);
/* cuda_errors.c */
const char *gp_cuda_error_name(int code); /* NULL for codes it does not know */
const char *gp_error_name(enum gp_family family,
			  int code); /* the code's name in that API's enum, or NULL */

#endif /* GP_MODEL_VIEW_H */
