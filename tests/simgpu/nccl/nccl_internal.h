/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nccl_internal.h — what the simulated NCCL's files share (README.md in
 * this directory describes the design):
 *
 *   - the shared-memory segment of a clique (one per ncclUniqueId, and one
 *     per colour of each ncclCommSplit): a control block with a robust,
 *     process-shared mutex and condition variable, a record per rank, a
 *     ring of collective slots, a ring of point-to-point entries per
 *     ordered pair of ranks, and each rank's staging area;
 *   - the process-local communicator (struct ncclComm) and the work items
 *     that the stream workers of the GPU model run (one per collective, or
 *     one per ncclGroupEnd);
 *   - the export rules (NC_API, NC_FRAME, NC_RETURN), as in the runtime:
 *     every export is its own non-inlined, interposable symbol that starts
 *     with push %rbp and calls no other export; nc_enter() and NC_RETURN
 *     read the clock of the thread's calls (sg_call_mark).
 */
#ifndef SIMGPU_NCCL_INTERNAL_H
#define SIMGPU_NCCL_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "gpu_model.h"
#include "nccl.h"

#define NC_API	   __attribute__((visibility("default"), noinline))
#define NC_HIDDEN  __attribute__((visibility("hidden")))
/* Makes gcc set up a frame even in a trivial function (push %rbp first). */
#define NC_FRAME() __asm__ volatile("" : : "r"(__builtin_frame_address(0)))

#define NC_MAX_RANKS 256
#define NC_SLOTS     64 /* collectives in flight per communicator */
#define NC_P2P_SLOTS 16 /* sends in flight per ordered pair of ranks */
#define NC_NAME_MAX  64

/* ---- knobs (read once per process) ------------------------------------------------------ */
struct nc_config {
	uint64_t latency_ns; /* SIMGPU_NCCL_LATENCY_US, default 5 */
	double gbps;	     /* SIMGPU_NCCL_BW_GBPS, default 20 (GB/s = bytes per ns) */
	uint64_t staging;    /* SIMGPU_NCCL_STAGING_MB, default 64: bytes per rank */
};
NC_HIDDEN const struct nc_config *nc_config(void);

/* ---- operations ------------------------------------------------------------------------------ */
enum nc_kind {
	NC_ALLREDUCE = 1,
	NC_BROADCAST, /* ncclBroadcast and ncclBcast */
	NC_REDUCE,
	NC_ALLGATHER,
	NC_REDUCESCATTER,
	NC_ALLTOALL,
	NC_SEND,
	NC_RECV,
};

/* Bytes moved and the ring-model duration, as nccl-tests count them. */
NC_HIDDEN uint64_t nc_op_bytes(enum nc_kind kind, size_t count, size_t dtsize, int nranks);
NC_HIDDEN uint64_t nc_duration_ns(enum nc_kind kind, size_t count, size_t dtsize, int nranks);

/* Data types and reductions (nccl_reduce.c). */
NC_HIDDEN size_t nc_dtsize(int dt); /* 0 for an invalid type */
NC_HIDDEN const char *nc_dtname(int dt);
NC_HIDDEN const char *nc_opname(int op);
/* acc[i] = acc[i] op in[i] for n elements of dt. acc holds the partial
 * result: for float16/bfloat16/fp8 it is float (4 bytes per element), see
 * nc_acc_size(). */
NC_HIDDEN size_t nc_acc_size(int dt);
NC_HIDDEN void nc_acc_load(void *acc, const void *in, size_t n, int dt);
NC_HIDDEN void nc_acc_reduce(void *acc, const void *in, size_t n, int dt, int op);
/* out = acc (divided by nranks for ncclAvg), converted back to dt. */
NC_HIDDEN void nc_acc_store(void *out, const void *acc, size_t n, int dt, int op, int nranks);

/* ---- shared memory ------------------------------------------------------------------------------ */
struct nc_rankrec {
	int joined;
	int pid;
	int dev;
	int backed;	     /* its whole staging area is allocated (pre-faulted at init) */
	uint64_t stage_busy; /* reads of this rank's staging still to come */
	/* ncclCommSplit exchange, round n posts gens n */
	uint64_t split_gen;
	int color, key;
	uint64_t name_gen; /* when this rank leads a colour: its new segment */
	char split_name[NC_NAME_MAX];
	uint64_t done_gen;
};

/* One rank's part of a collective. */
struct nc_part {
	uint64_t t_arr; /* arrival time (CLOCK_MONOTONIC ns) */
	uint64_t off;	/* staging offset */
	uint64_t bytes; /* staged bytes */
	int staged;	/* its data is in its staging area */
	int arrived;
};

/* A collective in flight: op number seq of the communicator. */
struct nc_slot {
	uint64_t seq;
	int arrived, left;
	int kind, dt, op, root;
	uint64_t count;
	int mismatch;
	int pad;
	uint64_t t_max;
	/* struct nc_part parts[nranks] follows */
};

/* The seq-th send from src to dst and the matching receive. */
struct nc_p2p {
	uint64_t seq;
	int sent, recvd, left, staged;
	uint64_t t_send, t_recv;
	uint64_t off, bytes;
};

struct nc_ctl {
	uint64_t magic;
	pthread_mutex_t mu; /* robust, process-shared */
	pthread_cond_t cv;  /* process-shared, CLOCK_MONOTONIC; broadcast on every change */
	int nranks;	    /* 0 until the first rank joins */
	int joined;
	int live;    /* communicators not yet destroyed */
	int aborted; /* a rank called ncclCommAbort */
	int unlinked;
	int ready;	  /* ranks that joined and mapped every staging area */
	uint64_t staging; /* bytes per rank (the first joiner's SIMGPU_NCCL_STAGING_MB) */
	uint64_t size;	  /* whole segment */
	uint64_t off_ranks, off_slots, slot_size, off_p2p, off_staging;
	char name[NC_NAME_MAX];
};

/* A mapped segment. */
struct nc_seg {
	int fd;
	char name[NC_NAME_MAX];
	void *base;
	size_t size;
	struct nc_ctl *ctl;
};

#define NC_ID_MAGIC "SGNCCL\x01"

NC_HIDDEN ncclResult_t nc_seg_create(char name_out[NC_NAME_MAX]);
/* Maps the segment named in id (registers nothing). */
NC_HIDDEN ncclResult_t nc_seg_open(const char *name, struct nc_seg *seg);
NC_HIDDEN void nc_seg_close(struct nc_seg *seg);
NC_HIDDEN void nc_lock(struct nc_ctl *c);
NC_HIDDEN void nc_unlock(struct nc_ctl *c);
NC_HIDDEN void nc_broadcast(struct nc_ctl *c);
/* Waits on the segment's condition variable (lock held) for at most ~200 ms;
 * returns ncclRemoteError when a rank of the clique has died or aborted. */
NC_HIDDEN ncclResult_t nc_wait(struct nc_seg *seg);

static inline struct nc_rankrec *nc_rank(struct nc_seg *s, int r)
{
	return (struct nc_rankrec *)((char *)s->base + s->ctl->off_ranks) + r;
}

static inline struct nc_slot *nc_slot_at(struct nc_seg *s, uint64_t seq)
{
	return (struct nc_slot *)((char *)s->base + s->ctl->off_slots +
				  (seq % NC_SLOTS) * s->ctl->slot_size);
}

static inline struct nc_part *nc_parts(struct nc_slot *sl)
{
	return (struct nc_part *)(sl + 1);
}

static inline struct nc_p2p *nc_p2p_at(struct nc_seg *s, int src, int dst, uint64_t seq)
{
	size_t pair = (size_t)src * (size_t)s->ctl->nranks + (size_t)dst;

	return (struct nc_p2p *)((char *)s->base + s->ctl->off_p2p) + pair * NC_P2P_SLOTS +
	       seq % NC_P2P_SLOTS;
}

static inline char *nc_staging(struct nc_seg *s, int r)
{
	return (char *)s->base + s->ctl->off_staging + (size_t)r * s->ctl->staging;
}

/* ---- communicators ------------------------------------------------------------------------------- */
#define NC_COMM_MAGIC 0x6e63636c636f6d6dull

struct ncclComm {
	uint64_t magic;
	struct nc_seg seg;
	int rank, nranks, dev;
	bool joined; /* the rendezvous completed */
	bool finalized;
	ncclResult_t async_err;
	/* numbering, in call order (the calling thread) */
	uint64_t coll_seq;  /* next collective */
	uint64_t *send_seq; /* [peer]: next send to peer */
	uint64_t *recv_seq; /* [peer]: next receive from peer */
	uint64_t item_seq;  /* next work item touching this communicator */
	uint64_t split_round;
	/* work items (process-local) */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t stage_turn; /* the item that may stage next */
	unsigned pending;    /* items queued, not finished */
	uint64_t backed; /* bytes of this rank's staging allocated (fallocate; all of it at init) */
};

/* Live-handle registry: a destroyed or garbage comm is an invalid argument. */
NC_HIDDEN bool nc_comm_live(const struct ncclComm *c);
NC_HIDDEN struct ncclComm *nc_comm_new(void);
NC_HIDDEN void nc_comm_free(struct ncclComm *c);
/* Joins comm as rank of an opened segment: the register half of the
 * rendezvous (the first joiner sizes the segment). */
NC_HIDDEN ncclResult_t nc_join_register(struct ncclComm *c, const char *name, int nranks, int rank,
					int dev);
/* The wait half: until all nranks joined; then maps the peers' staging areas into this
 * process's page tables, so that no collective takes a page fault on the segment, and says
 * it is ready. */
NC_HIDDEN ncclResult_t nc_join_wait(struct ncclComm *c);
/* The last barrier: until every rank is ready, so that the ranks leave their init together
 * (like NCCL's bootstrap), however long their mapping took. */
NC_HIDDEN ncclResult_t nc_join_ready(struct ncclComm *c);
/* Waits for the communicator's queued work, then releases it; abort marks
 * the clique aborted first (its waiting operations give up). */
NC_HIDDEN void nc_comm_release(struct ncclComm *c, bool abort);
NC_HIDDEN void nc_comm_drain(struct ncclComm *c);

/* Current device of the calling thread, as the runtime keeps it (cudaGetDevice
 * looked up with dlsym, an untraced call); 0 without a runtime. */
NC_HIDDEN int nc_current_device(void);
/* ncclUnhandledCudaError when the GPU model has no device or an init error. */
NC_HIDDEN ncclResult_t nc_enter(void);

/* ---- errors and the call log ------------------------------------------------------------------------ */
NC_HIDDEN const char *nc_result_name(ncclResult_t r);
NC_HIDDEN void nc_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
NC_HIDDEN const char *nc_last_error(void);

#define NC_RETURN(e, fmt, ...)                                                             \
	do {                                                                               \
		ncclResult_t nc_e_ = (e);                                                  \
		if (__builtin_expect(sg_log_level != 0, 0))                                \
			sg_log("%s(" fmt ") = %d %s", __func__, ##__VA_ARGS__, (int)nc_e_, \
			       nc_result_name(nc_e_));                                     \
		sg_call_mark();                                                            \
		return nc_e_;                                                              \
	} while (0)

/* ---- groups and work (nccl_coll.c) --------------------------------------------------------------------- */
struct nc_op {
	enum nc_kind kind;
	const char *api; /* "ncclAllReduce", ... */
	struct ncclComm *comm;
	void *stream; /* the caller's handle */
	const void *send;
	void *recv;
	size_t count;
	int dt, red, root, peer;
	uint64_t seq; /* collective number, or p2p number of the pair */
	/* at run time */
	uint64_t off, bytes; /* this rank's staging */
	bool staged;
	bool failed;
	uint64_t t_end;
};

/* Validates op, then queues it now, or records it when a group is open. */
NC_HIDDEN ncclResult_t nc_enqueue(const struct nc_op *op);
NC_HIDDEN int nc_group_depth(void);

/* ---- communicator creation (nccl_comm.c): init and split, as jobs that run
 * in phases, so that ncclGroupEnd can create several communicators of one
 * clique from one thread (each phase posts, then waits, for every job) ------- */
enum nc_job_kind { NC_JOB_INIT = 1, NC_JOB_SPLIT };

struct nc_job {
	enum nc_job_kind kind;
	struct ncclComm *comm;	/* the new communicator (split: made in a later phase) */
	ncclComm_t *out;	/* split: where the new communicator goes */
	char name[NC_NAME_MAX]; /* the segment to join */
	int nranks, rank, dev;
	struct ncclComm *parent; /* split */
	int color, key;
	uint64_t round;
	int leader; /* split: old rank that creates the new segment */
	ncclResult_t err;
};

NC_HIDDEN ncclResult_t nc_jobs_run(struct nc_job *jobs, int n);
/* Records a job for ncclGroupEnd. */
NC_HIDDEN ncclResult_t nc_group_defer(const struct nc_job *job);

#endif /* SIMGPU_NCCL_INTERNAL_H */
