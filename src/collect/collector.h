/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * collector.h — drains the BPF ring buffer into the model. Never blocks the
 * producer: the BPF side does not wake us per record; we drain on a timer
 * (and when the BPF side forces a wakeup because the ring is half full).
 * Names each new thread from /proc while it is alive.
 */
#ifndef GP_COLLECTOR_H
#define GP_COLLECTOR_H

#include <linux/types.h>

#include "model/model.h"

struct ring_buffer;

struct gp_collector {
	struct ring_buffer *rb;
	struct gp_model *model;
	__u64 records;      /* records handed to the model */
	__u64 bytes;
	__u32 last_tid;     /* fast path: consecutive records of one thread */
	void *known_tids;   /* tsearch tree of tids already named */
};

/* ringbuf_fd: the BPF ring buffer map. 0 or -errno. */
int gp_collector_init(struct gp_collector *c, int ringbuf_fd, struct gp_model *model);
/* The fd that becomes readable when the BPF side forces a wakeup. */
int gp_collector_fd(const struct gp_collector *c);
/* Drain everything available. Records consumed, or -errno. */
int gp_collector_drain(struct gp_collector *c);
void gp_collector_fini(struct gp_collector *c);

#endif
