/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nccl_coll.c — NCCL API: collectives, point-to-point, groups, and the work
 * items the GPU model's stream workers run for them.
 *
 * A call validates its arguments, numbers the operation (collectives per
 * communicator, sends and receives per ordered pair, in call order) and
 * queues one host-function work item on its stream (inside a group: records
 * it; ncclGroupEnd queues the whole group as one item on the first
 * operation's stream, joined by events with the group's other streams).
 * When the stream reaches the item, the model calls run_item() with the
 * item's modelled start (the latest of its submission, the end of the
 * stream's previous work and of what it waits for, as for a kernel):
 *
 *   1. per communicator, in the order the items were queued: waits until the
 *      rank's staging area is free (every reader of its previous data has
 *      read it), copies the send buffers in, and registers the arrival of
 *      each operation (time = the modelled start) in the segment;
 *   2. per operation: waits (off-CPU) until every rank it involves has
 *      arrived, computes its end = latest arrival + ring-model duration,
 *      reads the peers' staged data into the receive buffer (reducing it
 *      where the operation reduces) and releases the peers' staging;
 *   3. sleeps to the latest end of its operations (clock_nanosleep
 *      TIMER_ABSTIME) and returns it: the model makes it the stream's time,
 *      so a late rank delays everyone and a worker that woke late shifts
 *      nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_internal.h"

/* ---- groups (per host thread) --------------------------------------------------------------- */
struct nc_group {
	int depth;
	struct nc_op *ops;
	int nops, cap_ops;
	struct nc_job *jobs;
	int njobs, cap_jobs;
};
static __thread struct nc_group grp;

int nc_group_depth(void)
{
	return grp.depth;
}

static int grow(void **arr, int *cap, int need, size_t elem)
{
	void *n;
	int nc;

	if (need <= *cap)
		return 0;
	nc = *cap ? *cap * 2 : 16;
	while (nc < need)
		nc *= 2;
	n = realloc(*arr, (size_t)nc * elem);
	if (!n)
		return -1;
	*arr = n;
	*cap = nc;
	return 0;
}

ncclResult_t nc_group_defer(const struct nc_job *job)
{
	if (grow((void **)&grp.jobs, &grp.cap_jobs, grp.njobs + 1, sizeof(*job)))
		return ncclSystemError;
	grp.jobs[grp.njobs++] = *job;
	return ncclSuccess;
}

/* ---- work items ------------------------------------------------------------------------------- */
struct nc_item_comm {
	struct ncclComm *c;
	uint64_t idx; /* this item's turn on c */
};

struct nc_item {
	int nops, ncomms;
	struct nc_op *ops;
	struct nc_item_comm *comms;
};

static bool is_coll(enum nc_kind k)
{
	return k != NC_SEND && k != NC_RECV;
}

static bool reduces(enum nc_kind k)
{
	return k == NC_ALLREDUCE || k == NC_REDUCE || k == NC_REDUCESCATTER;
}

/* Bytes this rank stages for op (0: none). */
static uint64_t stage_bytes(const struct nc_op *op)
{
	uint64_t b = (uint64_t)op->count * nc_dtsize(op->dt);

	switch (op->kind) {
	case NC_REDUCESCATTER:
	case NC_ALLTOALL:
		return b * (uint64_t)op->comm->nranks;
	case NC_BROADCAST:
		return op->comm->rank == op->root ? b : 0;
	case NC_RECV:
		return 0;
	default:
		return b;
	}
}

static void log_not_moved(const struct nc_op *op, uint64_t bytes)
{
	static int once;

	if (sg_log_level && !__atomic_exchange_n(&once, 1, __ATOMIC_RELAXED))
		sg_log("nccl: %s stages %llu bytes, more than the staging area holds (%llu bytes per rank, "
		       "SIMGPU_NCCL_STAGING_MB): such operations are timed but move no data (logged once)",
		       op->api, (unsigned long long)bytes,
		       (unsigned long long)op->comm->seg.ctl->staging);
}

static void fail(struct nc_op *op, ncclResult_t e)
{
	op->failed = true;
	__atomic_store_n(&op->comm->async_err, e, __ATOMIC_RELEASE);
}

/* Copies op's send data into this rank's staging at *cursor. */
static void stage(struct nc_op *op, uint64_t *cursor)
{
	struct ncclComm *c = op->comm;
	struct nc_seg *seg = &c->seg;
	uint64_t b = stage_bytes(op), end = *cursor + b;

	op->staged = false;
	op->bytes = b;
	if (!b || op->failed)
		return;
	if (end > seg->ctl->staging) {
		log_not_moved(op, b);
		return;
	}
	if (end > c->backed) {
		off_t base = (off_t)(seg->ctl->off_staging + (uint64_t)c->rank * seg->ctl->staging);

		/* back the pages first: a full /dev/shm must not SIGBUS */
		if (posix_fallocate(seg->fd, base + (off_t)c->backed, (off_t)(end - c->backed))) {
			log_not_moved(op, b);
			return;
		}
		c->backed = end;
	}
	memcpy(nc_staging(seg, c->rank) + *cursor, op->send, b);
	op->off = *cursor;
	op->staged = true;
	*cursor = (end + 63) & ~(uint64_t)63;
}

/* Registers op's arrival at time t (segment lock held). */
static void arrive(struct nc_op *op, uint64_t t)
{
	struct ncclComm *c = op->comm;
	struct nc_seg *seg = &c->seg;
	ncclResult_t e = ncclSuccess;

	if (op->failed)
		return;
	if (is_coll(op->kind)) {
		struct nc_slot *sl = nc_slot_at(seg, op->seq);
		struct nc_part *p;

		while (sl->seq != op->seq && !e)
			e = nc_wait(seg);
		if (e) {
			fail(op, e);
			return;
		}
		if (!sl->arrived) {
			sl->kind = op->kind;
			sl->dt = op->dt;
			sl->op = op->red;
			sl->root = op->root;
			sl->count = op->count;
		} else if (sl->kind != (int)op->kind || sl->dt != op->dt ||
			   sl->count != op->count || (reduces(op->kind) && sl->op != op->red) ||
			   ((op->kind == NC_BROADCAST || op->kind == NC_REDUCE) &&
			    sl->root != op->root)) {
			sl->mismatch = 1;
		}
		p = &nc_parts(sl)[c->rank];
		p->t_arr = t;
		p->off = op->off;
		p->bytes = op->bytes;
		p->staged = op->staged;
		p->arrived = 1;
		sl->arrived++;
		if (t > sl->t_max)
			sl->t_max = t;
		if (op->staged)
			nc_rank(seg, c->rank)->stage_busy += (uint64_t)c->nranks;
	} else if (op->kind == NC_SEND) {
		struct nc_p2p *x = nc_p2p_at(seg, c->rank, op->peer, op->seq);

		while (x->seq != op->seq && !e)
			e = nc_wait(seg);
		if (e) {
			fail(op, e);
			return;
		}
		x->sent = 1;
		x->t_send = t;
		x->off = op->off;
		x->bytes = (uint64_t)op->count * nc_dtsize(op->dt);
		x->staged = op->staged;
		if (op->staged)
			nc_rank(seg, c->rank)->stage_busy++;
	} else {
		struct nc_p2p *x = nc_p2p_at(seg, op->peer, c->rank, op->seq);

		while (x->seq != op->seq && !e)
			e = nc_wait(seg);
		if (e) {
			fail(op, e);
			return;
		}
		x->recvd = 1;
		x->t_recv = t;
	}
}

/* Reads the collective's data once everyone has arrived. */
static void move_coll(struct nc_op *op, const struct nc_part *parts)
{
	struct ncclComm *c = op->comm;
	struct nc_seg *seg = &c->seg;
	int n = c->nranks, r = c->rank, j;
	size_t d = nc_dtsize(op->dt), blk = op->count * d;
	bool need_all = op->kind != NC_BROADCAST;
	void *acc;

	if (op->kind == NC_REDUCE && r != op->root)
		return;
	for (j = 0; j < n; j++)
		if ((need_all || j == op->root) && !parts[j].staged) {
			log_not_moved(op, parts[j].bytes ? parts[j].bytes
							 : nc_op_bytes(op->kind, op->count, d, n));
			return;
		}
#define SRC(j) (nc_staging(seg, (j)) + parts[(j)].off)
	switch (op->kind) {
	case NC_BROADCAST:
		memmove(op->recv, SRC(op->root), blk);
		break;
	case NC_ALLGATHER:
		for (j = 0; j < n; j++)
			memcpy((char *)op->recv + (size_t)j * blk, SRC(j), blk);
		break;
	case NC_ALLTOALL:
		for (j = 0; j < n; j++)
			memcpy((char *)op->recv + (size_t)j * blk, SRC(j) + (size_t)r * blk, blk);
		break;
	default: { /* reductions: rank order, the same bits on every rank */
		size_t off = op->kind == NC_REDUCESCATTER ? (size_t)r * blk : 0;

		acc = nc_acc_size(op->dt) == d ? op->recv : malloc(op->count * nc_acc_size(op->dt));
		if (!acc)
			return;
		nc_acc_load(acc, SRC(0) + off, op->count, op->dt);
		for (j = 1; j < n; j++)
			nc_acc_reduce(acc, SRC(j) + off, op->count, op->dt, op->red);
		nc_acc_store(op->recv, acc, op->count, op->dt, op->red, n);
		if (acc != op->recv)
			free(acc);
		break;
	}
	}
#undef SRC
}

/* Waits for every rank of op, moves its data, releases the staging it read. */
static void complete(struct nc_op *op)
{
	struct ncclComm *c = op->comm;
	struct nc_seg *seg = &c->seg;
	ncclResult_t e = ncclSuccess;
	int n = c->nranks, j;

	if (op->failed)
		return;
	nc_lock(seg->ctl);
	if (is_coll(op->kind)) {
		struct nc_slot *sl = nc_slot_at(seg, op->seq);
		struct nc_part *parts = malloc((size_t)n * sizeof(*parts));
		int mismatch;

		while (sl->arrived < n && !e)
			e = nc_wait(seg);
		if (e || !parts) {
			nc_unlock(seg->ctl);
			free(parts);
			fail(op, e ? e : ncclSystemError);
			return;
		}
		op->t_end = sl->t_max + nc_duration_ns(op->kind, op->count, nc_dtsize(op->dt), n);
		memcpy(parts, nc_parts(sl), (size_t)n * sizeof(*parts));
		mismatch = sl->mismatch;
		nc_unlock(seg->ctl);

		if (mismatch) {
			nc_set_error(
				"%s: the ranks called different collectives as operation %llu of the "
				"communicator (or different counts, types, operations or roots)",
				op->api, (unsigned long long)op->seq);
			__atomic_store_n(&c->async_err, ncclInvalidUsage, __ATOMIC_RELEASE);
		} else {
			move_coll(op, parts);
		}

		nc_lock(seg->ctl);
		for (j = 0; j < n; j++)
			if (parts[j].staged)
				nc_rank(seg, j)->stage_busy--;
		if (++sl->left == n) {
			uint64_t next = sl->seq + NC_SLOTS;

			memset(sl, 0, seg->ctl->slot_size);
			sl->seq = next;
		}
		free(parts);
	} else if (op->kind == NC_SEND) {
		struct nc_p2p *x = nc_p2p_at(seg, c->rank, op->peer, op->seq);

		while (!x->recvd && !e)
			e = nc_wait(seg);
		if (e) {
			nc_unlock(seg->ctl);
			fail(op, e);
			return;
		}
		op->t_end = (x->t_send > x->t_recv ? x->t_send : x->t_recv) +
			    nc_duration_ns(NC_SEND, x->bytes, 1, n);
		if (++x->left == 2)
			*x = (struct nc_p2p){ .seq = x->seq + NC_P2P_SLOTS };
	} else {
		struct nc_p2p *x = nc_p2p_at(seg, op->peer, c->rank, op->seq), v;
		uint64_t want = (uint64_t)op->count * nc_dtsize(op->dt);

		while (!x->sent && !e)
			e = nc_wait(seg);
		if (e) {
			nc_unlock(seg->ctl);
			fail(op, e);
			return;
		}
		v = *x;
		nc_unlock(seg->ctl);
		op->t_end = (v.t_send > v.t_recv ? v.t_send : v.t_recv) +
			    nc_duration_ns(NC_RECV, v.bytes, 1, n);
		if (v.bytes != want) {
			nc_set_error(
				"ncclRecv of %llu bytes from rank %d matches a send of %llu bytes",
				(unsigned long long)want, op->peer, (unsigned long long)v.bytes);
			__atomic_store_n(&c->async_err, ncclInvalidUsage, __ATOMIC_RELEASE);
		}
		if (v.staged)
			memcpy(op->recv, nc_staging(seg, op->peer) + v.off,
			       v.bytes < want ? v.bytes : want);
		else
			log_not_moved(op, v.bytes);
		nc_lock(seg->ctl);
		if (v.staged)
			nc_rank(seg, op->peer)->stage_busy--;
		if (++x->left == 2)
			*x = (struct nc_p2p){ .seq = x->seq + NC_P2P_SLOTS };
	}
	nc_broadcast(seg->ctl);
	nc_unlock(seg->ctl);
}

static uint64_t run_item(void *arg, uint64_t t)
{
	struct nc_item *it = arg;
	uint64_t end = t;
	bool failed = false;
	int i, k;

	for (k = 0; k < it->ncomms; k++) {
		struct ncclComm *c = it->comms[k].c;
		struct nc_seg *seg = &c->seg;
		ncclResult_t e = ncclSuccess; /* an aborted clique fails every wait at once */
		uint64_t cursor = 0;

		/* staging turns in the order items were queued on this communicator */
		pthread_mutex_lock(&c->mu);
		while (c->stage_turn != it->comms[k].idx)
			pthread_cond_wait(&c->cv, &c->mu);
		pthread_mutex_unlock(&c->mu);

		nc_lock(seg->ctl);
		while (nc_rank(seg, c->rank)->stage_busy && !e)
			e = nc_wait(seg);
		nc_unlock(seg->ctl);
		for (i = 0; i < it->nops; i++)
			if (it->ops[i].comm == c) {
				if (e)
					fail(&it->ops[i], e);
				stage(&it->ops[i], &cursor);
			}
		nc_lock(seg->ctl);
		for (i = 0; i < it->nops; i++)
			if (it->ops[i].comm == c)
				arrive(&it->ops[i], t);
		nc_broadcast(seg->ctl);
		nc_unlock(seg->ctl);

		pthread_mutex_lock(&c->mu);
		c->stage_turn++;
		pthread_cond_broadcast(&c->cv);
		pthread_mutex_unlock(&c->mu);
	}
	for (i = 0; i < it->nops; i++) {
		complete(&it->ops[i]);
		if (it->ops[i].failed)
			failed = true;
		else if (it->ops[i].t_end > end)
			end = it->ops[i].t_end;
	}
	/* a failure is noticed on the host's clock (a dead peer, an abort): no model says when */
	if (failed && sg_now_ns() > end)
		end = sg_now_ns();
	/* sleep here rather than in the model: the communicator's work is pending until its end
	 * (ncclCommFinalize and ncclCommDestroy wait for it) */
	if (end > sg_now_ns())
		sg_sleep_until(end);
	for (k = 0; k < it->ncomms; k++) {
		struct ncclComm *c = it->comms[k].c;

		pthread_mutex_lock(&c->mu);
		c->pending--;
		pthread_cond_broadcast(&c->cv);
		pthread_mutex_unlock(&c->mu);
	}
	free(it->ops);
	free(it->comms);
	free(it);
	return end;
}

/* ---- submission -------------------------------------------------------------------------------- */
static ncclResult_t model_err(int st)
{
	switch (st) {
	case SG_OK:
		return ncclSuccess;
	case SG_ENOMEM:
		return ncclSystemError;
	case SG_ECAPTURE_UNSUPPORTED:
	case SG_ECAPTURE_IMPLICIT:
	case SG_ECAPTURE_INVALIDATED:
		return ncclInvalidUsage;
	default:
		return ncclUnhandledCudaError;
	}
}

struct nc_streams {
	struct sg_stream **s;
	int n;
};

static void put_streams(struct nc_streams *ss)
{
	int i;

	for (i = 0; i < ss->n; i++)
		sg_stream_put(ss->s[i]);
	free(ss->s);
}

/* Resolves every op's stream (NULL: the legacy stream of the communicator's
 * device), distinct ones only, the first op's first. */
static ncclResult_t get_streams(const struct nc_op *ops, int nops, struct nc_streams *ss)
{
	int i, k;

	ss->n = 0;
	ss->s = calloc((size_t)nops, sizeof(*ss->s));
	if (!ss->s)
		return ncclSystemError;
	for (i = 0; i < nops; i++) {
		struct sg_stream *s;
		int st = sg_stream_get(ops[i].stream, 0, ops[i].comm->dev, &s);

		if (st) {
			nc_set_error("%s: stream %p: not a valid stream", ops[i].api,
				     ops[i].stream);
			put_streams(ss);
			return model_err(st);
		}
		if (sg_capture_status(s) != SG_CAPTURE_NONE) {
			nc_set_error(
				"%s: stream %p is capturing: the simulated NCCL cannot be captured into a graph",
				ops[i].api, ops[i].stream);
			sg_stream_put(s);
			put_streams(ss);
			return ncclInvalidUsage;
		}
		for (k = 0; k < ss->n && ss->s[k] != s; k++)
			;
		if (k < ss->n)
			sg_stream_put(s);
		else
			ss->s[ss->n++] = s;
	}
	return ncclSuccess;
}

/* a waits for everything queued on b so far. */
static void join(struct sg_stream *a, struct sg_stream *b)
{
	struct sg_event *ev;

	if (sg_event_create(SG_EVENT_DISABLE_TIMING, &ev))
		return;
	if (!sg_event_record(ev, b))
		sg_stream_wait_event(a, ev);
	sg_event_destroy(ev);
}

static ncclResult_t submit(const struct nc_op *ops, int nops, const char *name)
{
	struct nc_item *it = calloc(1, sizeof(*it));
	struct nc_streams ss = { 0 };
	struct sg_work w = { .kind = SG_WORK_HOSTFN, .name = name, .timed_fn = run_item };
	ncclResult_t e;
	int i, k, st;

	if (!it)
		return ncclSystemError;
	it->ops = malloc((size_t)nops * sizeof(*it->ops));
	it->comms = calloc((size_t)nops, sizeof(*it->comms));
	if (!it->ops || !it->comms) {
		e = ncclSystemError;
		goto out_free;
	}
	for (i = 0; i < nops; i++) {
		struct ncclComm *c = ops[i].comm;

		if (!c->joined) {
			nc_set_error("%s: comm %p is not initialised", ops[i].api, (void *)c);
			e = ncclInvalidUsage;
			goto out_free;
		}
		it->ops[i] = ops[i];
		for (k = 0; k < it->ncomms && it->comms[k].c != c; k++)
			;
		if (k == it->ncomms)
			it->comms[it->ncomms++].c = c;
	}
	it->nops = nops;
	if ((e = get_streams(ops, nops, &ss)))
		goto out_free;

	/* number the operations and the item, in call order */
	for (k = 0; k < it->ncomms; k++) {
		struct ncclComm *c = it->comms[k].c;

		pthread_mutex_lock(&c->mu);
		it->comms[k].idx = c->item_seq++;
		c->pending++;
		for (i = 0; i < nops; i++) {
			struct nc_op *op = &it->ops[i];

			if (op->comm != c)
				continue;
			if (is_coll(op->kind))
				op->seq = c->coll_seq++;
			else if (op->kind == NC_SEND)
				op->seq = c->send_seq[op->peer]++;
			else
				op->seq = c->recv_seq[op->peer]++;
		}
		pthread_mutex_unlock(&c->mu);
	}

	for (k = 1; k < ss.n; k++)
		join(ss.s[0], ss.s[k]);
	w.arg = it;
	st = sg_submit(ss.s[0], &w, NULL);
	if (st) {
		/* undo the numbering: nothing of this item will run */
		for (k = it->ncomms - 1; k >= 0; k--) {
			struct ncclComm *c = it->comms[k].c;

			pthread_mutex_lock(&c->mu);
			c->item_seq--;
			c->pending--;
			for (i = nops - 1; i >= 0; i--) {
				struct nc_op *op = &it->ops[i];

				if (op->comm != c)
					continue;
				if (is_coll(op->kind))
					c->coll_seq--;
				else if (op->kind == NC_SEND)
					c->send_seq[op->peer]--;
				else
					c->recv_seq[op->peer]--;
			}
			pthread_cond_broadcast(&c->cv);
			pthread_mutex_unlock(&c->mu);
		}
		nc_set_error("%s: cannot queue on stream %p", name, ops[0].stream);
		e = model_err(st);
		put_streams(&ss);
		goto out_free;
	}
	for (k = 1; k < ss.n; k++)
		join(ss.s[k], ss.s[0]);
	put_streams(&ss);
	return ncclSuccess;

out_free:
	free(it->ops);
	free(it->comms);
	free(it);
	return e;
}

/* ---- validation ---------------------------------------------------------------------------------- */
static ncclResult_t check_buf(const struct nc_op *op, const char *what, const void *p,
			      uint64_t bytes)
{
	struct sg_range r;

	if (!bytes)
		return ncclSuccess;
	if (!p) {
		nc_set_error("%s: %s is NULL", op->api, what);
		return ncclInvalidArgument;
	}
	if (sg_mem_check(p, bytes, &r)) {
		nc_set_error("%s: %s %p + %llu bytes is not valid memory", op->api, what, p,
			     (unsigned long long)bytes);
		return ncclInvalidArgument;
	}
	return ncclSuccess;
}

static ncclResult_t validate(const struct nc_op *op)
{
	struct ncclComm *c = op->comm;
	uint64_t b, n;
	size_t d;
	ncclResult_t e;

	if (!c) {
		nc_set_error("%s: comm is NULL", op->api);
		return ncclInvalidArgument;
	}
	if (!nc_comm_live(c)) {
		nc_set_error("%s: comm %p is not a live communicator", op->api, (void *)c);
		return ncclInvalidArgument;
	}
	if ((e = nc_enter()))
		return e;
	d = nc_dtsize(op->dt);
	if (!d) {
		nc_set_error("%s: invalid datatype %d", op->api, op->dt);
		return ncclInvalidArgument;
	}
	if (reduces(op->kind) && (op->red < 0 || op->red >= ncclNumOps)) {
		nc_set_error("%s: invalid reduction operation %d", op->api, op->red);
		return ncclInvalidArgument;
	}
	if ((op->kind == NC_BROADCAST || op->kind == NC_REDUCE) &&
	    (op->root < 0 || op->root >= c->nranks)) {
		nc_set_error("%s: invalid root %d (nranks %d)", op->api, op->root, c->nranks);
		return ncclInvalidArgument;
	}
	if ((op->kind == NC_SEND || op->kind == NC_RECV) &&
	    (op->peer < 0 || op->peer >= c->nranks)) {
		nc_set_error("%s: invalid peer %d (nranks %d)", op->api, op->peer, c->nranks);
		return ncclInvalidArgument;
	}
	b = (uint64_t)op->count * d;
	n = (uint64_t)c->nranks;
	switch (op->kind) {
	case NC_ALLREDUCE:
		if ((e = check_buf(op, "sendbuff", op->send, b)) ||
		    (e = check_buf(op, "recvbuff", op->recv, b)))
			return e;
		break;
	case NC_BROADCAST:
		if ((c->rank == op->root && (e = check_buf(op, "sendbuff", op->send, b))) ||
		    (e = check_buf(op, "recvbuff", op->recv, b)))
			return e;
		break;
	case NC_REDUCE:
		if ((e = check_buf(op, "sendbuff", op->send, b)) ||
		    (c->rank == op->root && (e = check_buf(op, "recvbuff", op->recv, b))))
			return e;
		break;
	case NC_ALLGATHER:
		if ((e = check_buf(op, "sendbuff", op->send, b)) ||
		    (e = check_buf(op, "recvbuff", op->recv, b * n)))
			return e;
		break;
	case NC_REDUCESCATTER:
		if ((e = check_buf(op, "sendbuff", op->send, b * n)) ||
		    (e = check_buf(op, "recvbuff", op->recv, b)))
			return e;
		break;
	case NC_ALLTOALL:
		if ((e = check_buf(op, "sendbuff", op->send, b * n)) ||
		    (e = check_buf(op, "recvbuff", op->recv, b * n)))
			return e;
		break;
	case NC_SEND:
		if ((e = check_buf(op, "sendbuff", op->send, b)))
			return e;
		break;
	case NC_RECV:
		if ((e = check_buf(op, "recvbuff", op->recv, b)))
			return e;
		break;
	}
	return ncclSuccess;
}

ncclResult_t nc_enqueue(const struct nc_op *op)
{
	ncclResult_t e = validate(op);

	if (e)
		return e;
	if (!op->count) /* nothing to do on any rank (counts must agree) */
		return ncclSuccess;
	if (grp.depth > 0) {
		if (grow((void **)&grp.ops, &grp.cap_ops, grp.nops + 1, sizeof(*op)))
			return ncclSystemError;
		grp.ops[grp.nops++] = *op;
		return ncclSuccess;
	}
	return submit(op, 1, op->api);
}

/* ---- the API -------------------------------------------------------------------------------------- */
#define OP(...) ((struct nc_op){ .api = __func__, __VA_ARGS__ })

NC_API ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
				  ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
				  cudaStream_t stream)
{
	struct nc_op o = OP(.kind = NC_ALLREDUCE, .comm = comm, .stream = stream, .send = sendbuff,
			    .recv = recvbuff, .count = count, .dt = datatype, .red = op);

	NC_RETURN(nc_enqueue(&o),
		  "sendbuff=%p recvbuff=%p count=%zu datatype=%s op=%s comm=%p stream=%p", sendbuff,
		  recvbuff, count, nc_dtname(datatype), nc_opname(op), (void *)comm,
		  (void *)stream);
}

NC_API ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
				  ncclDataType_t datatype, int root, ncclComm_t comm,
				  cudaStream_t stream)
{
	struct nc_op o = OP(.kind = NC_BROADCAST, .comm = comm, .stream = stream, .send = sendbuff,
			    .recv = recvbuff, .count = count, .dt = datatype, .root = root);

	NC_RETURN(nc_enqueue(&o),
		  "sendbuff=%p recvbuff=%p count=%zu datatype=%s root=%d comm=%p stream=%p",
		  sendbuff, recvbuff, count, nc_dtname(datatype), root, (void *)comm,
		  (void *)stream);
}

NC_API ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
			      ncclComm_t comm, cudaStream_t stream)
{
	struct nc_op o = OP(.kind = NC_BROADCAST, .comm = comm, .stream = stream, .send = buff,
			    .recv = buff, .count = count, .dt = datatype, .root = root);

	NC_RETURN(nc_enqueue(&o), "buff=%p count=%zu datatype=%s root=%d comm=%p stream=%p", buff,
		  count, nc_dtname(datatype), root, (void *)comm, (void *)stream);
}

NC_API ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
			       ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
			       cudaStream_t stream)
{
	struct nc_op o =
		OP(.kind = NC_REDUCE, .comm = comm, .stream = stream, .send = sendbuff,
		   .recv = recvbuff, .count = count, .dt = datatype, .red = op, .root = root);

	NC_RETURN(nc_enqueue(&o),
		  "sendbuff=%p recvbuff=%p count=%zu datatype=%s op=%s root=%d comm=%p stream=%p",
		  sendbuff, recvbuff, count, nc_dtname(datatype), nc_opname(op), root, (void *)comm,
		  (void *)stream);
}

NC_API ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
				  ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	struct nc_op o = OP(.kind = NC_ALLGATHER, .comm = comm, .stream = stream, .send = sendbuff,
			    .recv = recvbuff, .count = sendcount, .dt = datatype);

	NC_RETURN(nc_enqueue(&o),
		  "sendbuff=%p recvbuff=%p sendcount=%zu datatype=%s comm=%p stream=%p", sendbuff,
		  recvbuff, sendcount, nc_dtname(datatype), (void *)comm, (void *)stream);
}

NC_API ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
				      ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
				      cudaStream_t stream)
{
	struct nc_op o =
		OP(.kind = NC_REDUCESCATTER, .comm = comm, .stream = stream, .send = sendbuff,
		   .recv = recvbuff, .count = recvcount, .dt = datatype, .red = op);

	NC_RETURN(nc_enqueue(&o),
		  "sendbuff=%p recvbuff=%p recvcount=%zu datatype=%s op=%s comm=%p stream=%p",
		  sendbuff, recvbuff, recvcount, nc_dtname(datatype), nc_opname(op), (void *)comm,
		  (void *)stream);
}

NC_API ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
				 ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	struct nc_op o = OP(.kind = NC_ALLTOALL, .comm = comm, .stream = stream, .send = sendbuff,
			    .recv = recvbuff, .count = count, .dt = datatype);

	NC_RETURN(nc_enqueue(&o), "sendbuff=%p recvbuff=%p count=%zu datatype=%s comm=%p stream=%p",
		  sendbuff, recvbuff, count, nc_dtname(datatype), (void *)comm, (void *)stream);
}

/* RCCL's spelling: the same operation, its own symbol. */
NC_API ncclResult_t ncclAllToAll(const void *sendbuff, void *recvbuff, size_t count,
				 ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	struct nc_op o = OP(.kind = NC_ALLTOALL, .comm = comm, .stream = stream, .send = sendbuff,
			    .recv = recvbuff, .count = count, .dt = datatype);

	NC_RETURN(nc_enqueue(&o), "sendbuff=%p recvbuff=%p count=%zu datatype=%s comm=%p stream=%p",
		  sendbuff, recvbuff, count, nc_dtname(datatype), (void *)comm, (void *)stream);
}

NC_API ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
			     ncclComm_t comm, cudaStream_t stream)
{
	struct nc_op o = OP(.kind = NC_SEND, .comm = comm, .stream = stream, .send = sendbuff,
			    .count = count, .dt = datatype, .peer = peer);

	NC_RETURN(nc_enqueue(&o), "sendbuff=%p count=%zu datatype=%s peer=%d comm=%p stream=%p",
		  sendbuff, count, nc_dtname(datatype), peer, (void *)comm, (void *)stream);
}

NC_API ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
			     ncclComm_t comm, cudaStream_t stream)
{
	struct nc_op o = OP(.kind = NC_RECV, .comm = comm, .stream = stream, .recv = recvbuff,
			    .count = count, .dt = datatype, .peer = peer);

	NC_RETURN(nc_enqueue(&o), "recvbuff=%p count=%zu datatype=%s peer=%d comm=%p stream=%p",
		  recvbuff, count, nc_dtname(datatype), peer, (void *)comm, (void *)stream);
}

NC_API ncclResult_t ncclGroupStart(void)
{
	NC_FRAME();
	grp.depth++;
	NC_RETURN(ncclSuccess, "%s", "");
}

static ncclResult_t group_end(void)
{
	ncclResult_t e = ncclSuccess, e2;

	if (grp.depth <= 0) {
		nc_set_error("ncclGroupEnd without ncclGroupStart");
		return ncclInvalidUsage;
	}
	if (--grp.depth > 0)
		return ncclSuccess;
	if (grp.njobs)
		e = nc_jobs_run(grp.jobs, grp.njobs);
	if (grp.nops) {
		e2 = submit(grp.ops, grp.nops, "ncclGroupEnd");
		if (!e)
			e = e2;
	}
	grp.njobs = 0;
	grp.nops = 0;
	return e;
}

NC_API ncclResult_t ncclGroupEnd(void)
{
	NC_RETURN(group_end(), "%s", "");
}
