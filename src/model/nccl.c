/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nccl.c — NCCL communicators and their operations in one process. A
 * communicator is known by its handle (ncclComm_t) from the call that
 * created it (rank, nranks, device), or from its first use when it was
 * created before gpuprobed attached (then what the process asks with
 * ncclCommCount / ncclCommUserRank / ncclCommCuDevice fills it in). Each
 * (communicator, op, dtype) gets a row: calls, elements, bytes as
 * nccl-tests count them, a log2 size histogram, host time in the calls; the
 * synchronisations that waited for it add their blocked time (streams.c).
 * Every NCCL shape's handler (shapes.h) is here.
 */
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"

static struct gp_nccl *nccl_of(struct gp_process *p)
{
	if (!p->nccl)
		p->nccl = calloc(1, sizeof(*p->nccl));
	return p->nccl;
}

static struct gp_nccl_comm *comm_get(struct gp_process *p, __u64 handle)
{
	struct gp_nccl *n = nccl_of(p);
	struct gp_nccl_comm *cm, **comms;

	if (!n)
		return NULL;
	if ((cm = gp_u64map_get(&n->by_handle, handle)) && !cm->destroyed)
		return cm;
	/* new, or a handle value reused after ncclCommDestroy: a new communicator */
	comms = realloc(n->comms, (n->ncomms + 1) * sizeof(*comms));
	if (!comms)
		return NULL;
	n->comms = comms;
	cm = calloc(1, sizeof(*cm));
	if (!cm)
		return NULL;
	*cm = (struct gp_nccl_comm){ .handle = handle, .rank = -1, .nranks = -1, .device = -1 };
	if (gp_u64map_put(&n->by_handle, handle, cm)) {
		free(cm);
		return NULL;
	}
	n->comms[n->ncomms++] = cm;
	return cm;
}

static struct gp_nccl_row *row_get(struct gp_nccl_comm *cm, enum gp_nccl_op op, int dtype)
{
	struct gp_nccl_row *r, **rows;

	for (size_t i = 0; i < cm->nrows; i++)
		if (cm->rows[i]->op == op && cm->rows[i]->dtype == dtype)
			return cm->rows[i];
	rows = realloc(cm->rows, (cm->nrows + 1) * sizeof(*rows));
	if (!rows)
		return NULL;
	cm->rows = rows;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->op = op;
	r->dtype = dtype;
	cm->rows[cm->nrows++] = r;
	return r;
}

static __s32 thread_device(const struct gp_process *p, __u32 tid)
{
	const struct gp_thread *t = gp_u64map_get(&p->threads, tid);

	return t ? t->device : -1;
}

static void created(struct gp_nccl_comm *cm, const struct gp_api_call *c, __s32 rank, __s32 nranks,
		    __s32 device)
{
	cm->init_api = c->api;
	cm->rank = rank;
	cm->nranks = nranks;
	cm->device = device;
}

/* ncclCommInitAll's extension: comms[0..ndev) as u64, then devlist[0..ndev) as s32 at a fixed offset. */
static void init_all(struct gp_process *p, const struct gp_api_call *c, const char *ext, __u32 ext_len)
{
	int ndev = (int)(__s32)c->args[1];

	if (ndev > GP_NCCL_INIT_ALL_MAX)
		ndev = GP_NCCL_INIT_ALL_MAX;
	for (int i = 0; i < ndev && (__u32)(i + 1) * 8 <= ext_len; i++) {
		__u64 h;
		__s32 dev = i;
		struct gp_nccl_comm *cm;

		memcpy(&h, ext + i * 8, 8);
		if (ext_len >= GP_NCCL_INIT_ALL_MAX * 8 + (__u32)(i + 1) * 4)
			memcpy(&dev, ext + GP_NCCL_INIT_ALL_MAX * 8 + i * 4, 4);
		if ((cm = comm_get(p, h)))
			created(cm, c, i, ndev, dev);
	}
}

static struct gp_nccl_row *collective(struct gp_process *p, const struct gp_api_call *c, __u64 *bytes_out)
{
	struct gp_nccl_layout l;
	struct gp_nccl_comm *cm;
	struct gp_nccl_row *r;
	bool partial = c->hdr.flags & GP_EVF_ARGS_PARTIAL; /* slots 6..7 came from the stack */

	if (!gp_nccl_layout(c->api, &l))
		return NULL;
	cm = comm_get(p, partial && l.comm >= 6 ? 0 : c->args[l.comm]);
	r = cm ? row_get(cm, l.op, (int)(__s32)c->args[l.dtype]) : NULL;
	if (!r)
		return NULL;
	r->calls++;
	r->host_ns += c->dur_ns;
	if (c->ret) {
		r->errors++;
		return NULL;
	}

	__u64 count = c->args[l.count];
	__u64 bytes = count * gp_nccl_dtype_size(r->dtype);

	if (l.per_rank_count) {
		if (cm->nranks > 0)
			bytes *= (__u64)cm->nranks;
		else
			r->bytes_unknown_nranks++; /* counted as one rank's share */
	}
	r->elements += count;
	r->bytes += bytes;
	r->size_hist[gp_size_bucket(bytes)]++;
	if (l.root_or_peer >= 0 && !(partial && l.root_or_peer >= 6)) {
		__u32 who = (__u32)c->args[l.root_or_peer];
		unsigned i;

		for (i = 0; i < r->npeers && r->peers_or_roots[i] != who; i++)
			;
		if (i == r->npeers && r->npeers < sizeof(r->peers_or_roots) / sizeof(r->peers_or_roots[0]))
			r->peers_or_roots[r->npeers++] = who;
	}
	*bytes_out = bytes;
	return r;
}

/* Whether the out pointer of a successful call was read. */
static bool out_read(const struct gp_api_call *c)
{
	return !c->ret && (c->hdr.flags & GP_EVF_OUT_VALID);
}

/* (ncclComm_t *out, int nranks, id on the stack, int rank) */
void gp_shape_nccl_init_rank(struct gp_shape_call *x)
{
	const struct gp_api_call *c = x->c;
	struct gp_nccl_comm *cm;

	if (nccl_of(x->p) && out_read(c) && (cm = comm_get(x->p, c->out)))
		created(cm, c, (__s32)c->args[2], (__s32)c->args[1],
			thread_device(x->p, c->hdr.tid));
}

void gp_shape_nccl_init_all(struct gp_shape_call *x)
{
	if (nccl_of(x->p) && !x->c->ret && x->ext)
		init_all(x->p, x->c, x->ext, x->ext_len);
}

/* (comm, color, key, ncclComm_t *newcomm, config); NULL for NCCL_SPLIT_NOCOLOR */
void gp_shape_nccl_split(struct gp_shape_call *x)
{
	const struct gp_api_call *c = x->c;
	struct gp_nccl *n = nccl_of(x->p);
	struct gp_nccl_comm *cm, *parent;

	if (!n || !out_read(c) || !c->out || !(cm = comm_get(x->p, c->out)))
		return;
	created(cm, c, -1, -1, -1);
	cm->parent = c->args[0];
	parent = gp_u64map_get(&n->by_handle, c->args[0]);
	if (parent)
		cm->device = parent->device;
}

/* (comm): ncclCommDestroy, ncclCommAbort */
void gp_shape_nccl_comm_end(struct gp_shape_call *x)
{
	struct gp_nccl *n = nccl_of(x->p);
	struct gp_nccl_comm *cm;

	if (n && !x->c->ret && (cm = gp_u64map_get(&n->by_handle, x->c->args[0])))
		cm->destroyed = true;
}

/* (comm, int *out): what the process asks fills in a communicator created before attach */
void gp_shape_nccl_comm_query(struct gp_shape_call *x)
{
	const struct gp_api_call *c = x->c;
	struct gp_nccl_comm *cm;

	if (!nccl_of(x->p) || !out_read(c) || !(cm = comm_get(x->p, c->args[0])))
		return;
	if (c->api == GP_API_NCCL_COMM_COUNT)
		cm->nranks = (__s32)c->out;
	else if (c->api == GP_API_NCCL_COMM_USER_RANK)
		cm->rank = (__s32)c->out;
	else
		cm->device = (__s32)c->out;
}

/* A collective or point-to-point call: its row, and, queued, its stream and the layer's work. */
void gp_shape_nccl_coll(struct gp_shape_call *x)
{
	struct gp_process *p = x->p;
	const struct gp_api_call *c = x->c;
	struct gp_nccl_row *row;
	__u64 bytes = 0;

	if (!nccl_of(p) || !(row = collective(p, c, &bytes)))
		return;
	*x->op = (struct gp_op){
		.kind = GP_OP_COLL, .nccl_op = row->op, .dtype = row->dtype, .bytes = bytes
	};
	if (c->ret)
		return;
	gp_stream_collective(p, c, row, bytes, x->fx);
	p->work[GP_FAM_NCCL].collectives++;
	p->work[GP_FAM_NCCL].collective_bytes += bytes;
	p->work[GP_FAM_NCCL].host_ns += c->dur_ns;
}

void gp_shape_nccl_group_start(struct gp_shape_call *x)
{
	nccl_of(x->p); /* a process that calls NCCL has an nccl section */
}

void gp_shape_nccl_group_end(struct gp_shape_call *x)
{
	struct gp_nccl *n = nccl_of(x->p);

	if (n && !x->c->ret)
		n->group_calls++;
}

void gp_nccl_release(struct gp_process *p)
{
	struct gp_nccl *n = p->nccl;

	if (!n)
		return;
	for (size_t i = 0; i < n->ncomms; i++) {
		for (size_t k = 0; k < n->comms[i]->nrows; k++)
			free(n->comms[i]->rows[k]);
		free(n->comms[i]->rows);
		free(n->comms[i]);
	}
	free(n->comms);
	gp_u64map_clear(&n->by_handle, NULL);
	free(n);
	p->nccl = NULL;
}
