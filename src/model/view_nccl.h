/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * view_nccl.h — NCCL as readers see it (view.h includes it): a process's
 * communicators and their (op, dtype) rows, each collective's arrival and
 * release, the stalls said; the collective a call in progress waits on.
 */
#ifndef GP_MODEL_VIEW_NCCL_H
#define GP_MODEL_VIEW_NCCL_H

#include "model/model.h"
#include "model/hist.h"
#include "model/u64map.h"

struct gp_process;

/* ---- NCCL ------------------------------------------------------------------ */
struct gp_nccl_row { /* one (communicator, op, dtype) */
	enum gp_nccl_op op;
	int dtype;
	__u64 calls, errors;
	__u64 elements, bytes;		 /* bytes as nccl-tests count them (gp_nccl_layout) */
	__u64 host_ns;			 /* host time inside the calls */
	__u64 blocked_calls, blocked_ns; /* synchronisations that waited for it, and their time */
	__u64 measured, measured_bytes,
		measured_ns; /* enqueue -> sync return, alone on its stream */
	__u64 size_hist[GP_SIZE_BUCKETS];
	__u64 bytes_unknown_nranks; /* calls whose byte count needs nranks, not known for the communicator */
	__u32 peers_or_roots[8]; /* Send/Recv peers, Broadcast/Reduce roots seen (first 8) */
	unsigned npeers;
};

/* One collective of a communicator as this rank saw it (its sequence number is its index + 1). */
struct gp_nccl_arrival {
	__u64 entry_ns;	  /* the call's entry (CLOCK_MONOTONIC of this rank's host) */
	__u64 release_ns; /* the return of the first synchronisation that awaited it; 0: none seen */
};

/* At most this many collectives of one communicator are remembered per rank (16 MiB); later ones are counted. */
#define GP_NCCL_ARRIVALS_MAX (1u << 20)

struct gp_nccl_comm {
	__u64 handle;
	__s32 rank, nranks, device; /* -1: not known */
	__u64 init_api;		    /* how it was created (enum gp_api_id), 0: before attach */
	__u64 parent;		    /* ncclCommSplit: the communicator it was split from */
	bool destroyed;
	/*
	 * The same on every rank and node (docs/report-format.md, "comm_id"): from the ncclUniqueId
	 * (ncclCommInitRank), the parent's id and the split (ncclCommSplit), or the process
	 * (ncclCommInitAll). Not known for a communicator created before attach.
	 */
	bool comm_id_known;
	__u64 comm_id;
	__u64 splits; /* successful ncclCommSplit calls on it: numbers its children */
	/* collectives (not Send/Recv) that returned ncclSuccess: the k-th is sequence number k on every rank */
	__u64 collectives;
	enum gp_nccl_op last_op; /* the latest of them (collectives > 0) */
	__u64 last_bytes, last_entry_ns;
	struct gp_nccl_arrival
		*arrivals; /* [seq - 1] for seq <= narrivals (at most GP_NCCL_ARRIVALS_MAX) */
	size_t narrivals, arrivals_cap;
	__u32 last_tid; /* the thread of the latest collective (collectives > 0) */
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
	char *state;	/* what it was doing then */
};
struct gp_nccl_stall {
	__u64 comm_id, seq;
	enum gp_nccl_op op; /* GP_NCCL_OP_MAX: not known */
	__u64 bytes;	    /* 0: not known */
	__u64 waited_ns;    /* the longest wait of the waiting ranks when it was said */
	__u64 mono_ns;	    /* when it was said (CLOCK_MONOTONIC) */
	__s32 *waiting;	    /* ranks, ascending */
	size_t nwaiting;
	struct gp_nccl_stall_behind *behind; /* by rank */
	size_t nbehind;
};

struct gp_nccl {
	struct gp_nccl_comm **comms; /* in order of first sight */
	size_t ncomms;
	struct gp_u64map by_handle; /* handle -> comm */
	__u64 group_calls;	    /* ncclGroupStart/End pairs (ncclGroupEnd calls) */
};

/*
 * A call in progress on thread tid of p (api, its entry arguments): the collective it waits on, as
 * *comm and *seq, when it is a collective call (seq: the communicator's next one) or a
 * synchronisation whose awaited work (the rule of "what a synchronisation waited for") is one;
 * false otherwise. Read only.
 */
bool gp_inflight_collective(const struct gp_process *p, enum gp_api_id api, __u32 tid,
			    const __u64 *args, const struct gp_nccl_comm **comm, __u64 *seq);

#endif /* GP_MODEL_VIEW_NCCL_H */
