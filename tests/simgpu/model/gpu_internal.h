/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpu_internal.h — the model's private structures shared by its files: the
 * one model lock and completion condition variable, streams and their work
 * queues, operations, events, graphs, and the handle registry that tells a
 * live handle from a destroyed or garbage one without dereferencing it.
 */
#ifndef SIMGPU_GPU_INTERNAL_H
#define SIMGPU_GPU_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "gpu_model.h"

#define SG_HIDDEN __attribute__((visibility("hidden")))

/* One lock guards streams, operations, events and graphs; memory tables
 * have their own (gpu_mem.c). sg_done_cv is broadcast whenever an operation
 * completes: host synchronisation, queue-space waits and workers waiting on
 * cross-stream dependencies all wait on it. */
extern pthread_mutex_t sg_mu SG_HIDDEN;
extern pthread_cond_t sg_done_cv SG_HIDDEN;
/* Host threads blocked in a wait on sg_done_cv (simgpu_host_waiters()), not stream workers. */
extern int sg_host_waiters SG_HIDDEN;

/* A host thread's wait on sg_done_cv, with sg_mu held. */
static inline void sg_host_wait_locked(void)
{
	sg_host_waiters++;
	pthread_cond_wait(&sg_done_cv, &sg_mu);
	sg_host_waiters--;
}

enum sg_stream_type { SG_ST_USER = 0, SG_ST_LEGACY, SG_ST_PER_THREAD };

#define SG_OP_INLINE_DEPS 4

struct sg_op {
	struct sg_op *next; /* queue link */
	struct sg_work w;
	int refs;
	bool done;
	bool moved;		 /* w.signal_moved: the bytes moved (before the modelled end) */
	uint64_t t_enq;		 /* when the host queued it (CLOCK_MONOTONIC ns) */
	uint64_t t_start, t_end; /* modelled times (CLOCK_MONOTONIC ns), set by the worker */
	void *staged;		 /* snapshot of the source (pageable HtoD async) */
	int ndeps;
	struct sg_op *deps_inline[SG_OP_INLINE_DEPS];
	struct sg_op **deps; /* deps_inline or heap */
	int cap_deps;
};

struct sg_stream {
	int dev;
	enum sg_stream_type type;
	unsigned flags;
	int priority;
	int refs;   /* handle + worker + sg_stream_get() holders */
	bool dying; /* destroyed: drain then exit */
	pthread_t thread;
	pthread_cond_t work_cv;
	struct sg_op *head, *tail;
	unsigned pending;
	struct sg_op *last;	  /* last queued op (reference) */
	uint64_t t_free;	  /* modelled end of the last executed op */
	struct sg_graph *capture; /* capture this stream records into */
	bool capture_origin;
	struct sg_stream *dev_next; /* device's stream list */
};

struct sg_event {
	unsigned flags;
	struct sg_op *op;	  /* last record (reference), NULL if never */
	struct sg_graph *capture; /* recorded inside this capture */
};

struct sg_graph {
	struct sg_work *nodes;
	size_t n, cap;
	bool capturing; /* capture still open */
	bool invalidated;
	int mode;
	int dev;
	struct sg_stream *origin;
};

struct sg_exec {
	struct sg_work *nodes;
	size_t n;
};

/* Handle registry (gpu_handles.c): kind-tagged set of live pointers. */
enum sg_hkind { SG_HK_STREAM = 1, SG_HK_EVENT, SG_HK_GRAPH, SG_HK_EXEC, SG_HK_FUNC };
SG_HIDDEN int sg_handle_add(const void *p, enum sg_hkind kind);
SG_HIDDEN void sg_handle_del(const void *p);
SG_HIDDEN bool sg_handle_is(const void *p, enum sg_hkind kind);

/* Streams (gpu_stream.c), with sg_mu held. */
SG_HIDDEN struct sg_stream *sg_dev_streams(int dev);
/* Records w into s's capture, or queues it behind the implicit legacy-stream
 * dependencies and the given extra ones (references are taken). *out, when
 * out is not NULL, receives a reference to the queued op, or NULL. */
SG_HIDDEN int sg_submit_locked(struct sg_stream *s, const struct sg_work *w, struct sg_op **extra,
			       int n_extra, struct sg_op **out);
SG_HIDDEN void sg_op_put_locked(struct sg_op *op);
/* The last op the calling thread queued (no reference taken), NULL if none or captured. */
SG_HIDDEN struct sg_op *sg_last_op_locked(void);
/* Waits until op's bytes moved (w.signal_moved) or it is done; keeps the reference. */
SG_HIDDEN void sg_op_wait_moved(struct sg_op *op);

/* Memory table (gpu_mem.c) for VMM mappings (gpu_vmm.c): capacity charged without a
 * range of the device region, and ranges the caller mapped itself. Lock order: the VMM
 * lock, then the memory table's. */
SG_HIDDEN int sg_mem_charge(int dev, uint64_t bytes);
SG_HIDDEN void sg_mem_uncharge(int dev, uint64_t bytes);
SG_HIDDEN int sg_mem_add_range(const struct sg_range *r); /* SG_EINVAL on overlap */
SG_HIDDEN int sg_mem_del_range(uintptr_t base);
SG_HIDDEN void sg_mem_set_flags(uintptr_t base, unsigned set, unsigned clear);
/* Whether p lies in an address reservation (gpu_vmm.c; takes the VMM lock). */
SG_HIDDEN bool sg_vmm_reserved(uintptr_t p);

/* Staging buffers of asynchronous pageable copies (gpu_staging.c): reused, not fresh pages each copy. */
SG_HIDDEN void *sg_staging_get(size_t bytes); /* NULL when out of memory */
SG_HIDDEN void sg_staging_put(void *buf);     /* NULL: nothing */

/* Capture (gpu_graph.c), with sg_mu held. */
SG_HIDDEN int sg_capture_append_locked(struct sg_graph *g, const struct sg_work *w);
SG_HIDDEN void sg_capture_invalidate_locked(struct sg_graph *g);

#endif /* SIMGPU_GPU_INTERNAL_H */
