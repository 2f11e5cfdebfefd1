/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * collector.h — drains the BPF ring buffer into the model. Never blocks the
 * producer: the BPF side never wakes us; we drain on a timer (--poll-ms),
 * so the ring must hold that long's worth of records: 16 MiB is ~140k
 * records, 14 million calls a second at the default 10 ms. What does not
 * fit is counted (ringbuf_full), never silently lost.
 * Names each new thread from /proc while it is alive.
 */
#ifndef GP_COLLECTOR_H
#define GP_COLLECTOR_H

#include <sys/types.h>
#include <linux/types.h>

#include "model/model.h"

struct ring_buffer;
struct gp_cpu_accounts;

struct gp_collector {
	struct ring_buffer *rb;
	struct gp_model *model;
	struct gp_cpu_accounts *cpu; /* receives thread-exit records; may be NULL */
	/* receives process records (admissions, holds); may be NULL */
	void (*on_proc)(void *ctx, const struct gp_proc_event *e);
	void *proc_ctx;
	__u64 records;	    /* records read from the ring */
	__u64 calls;	    /* of which: completed API calls made outside any other traced call */
	__u64 nested_calls; /* and those made inside another traced call (its implementation) */
	__u64 bytes;
	__u64 py_holds; /* processes continued after their new Python code objects were named */
	/* continues a process held for its Python code (with proc_ctx); NULL: a plain SIGCONT */
	void (*continue_held)(void *ctx, pid_t pid);
	__u32 last_tid;	  /* fast path: consecutive records of one thread */
	void *known_tids; /* tsearch tree of tids already named */
};

/* ringbuf_fd: the BPF ring buffer map. 0 or -errno. */
int gp_collector_init(struct gp_collector *c, int ringbuf_fd, struct gp_model *model,
		      struct gp_cpu_accounts *cpu);
/* Drain everything available. Records consumed, or -errno. */
int gp_collector_drain(struct gp_collector *c);
void gp_collector_release(struct gp_collector *c);

#endif
