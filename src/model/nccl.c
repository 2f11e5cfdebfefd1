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
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
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
static void init_all(struct gp_process *p, const struct gp_api_call *c, const char *ext,
		     __u32 ext_len)
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

static struct gp_nccl_row *collective(struct gp_process *p, const struct gp_api_call *c,
				      __u64 *bytes_out, struct gp_nccl_comm **comm_out)
{
	struct gp_nccl_layout l;
	struct gp_nccl_comm *cm;
	struct gp_nccl_row *r;
	bool partial = c->hdr.flags & GP_EVF_ARGS_PARTIAL; /* slots 6..7 came from the stack */

	if (!gp_nccl_layout(c->api, &l))
		return NULL;
	cm = comm_get(p, partial && l.comm >= 6 ? 0 : c->args[l.comm]);
	*comm_out = cm;
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
		if (i == r->npeers &&
		    r->npeers < sizeof(r->peers_or_roots) / sizeof(r->peers_or_roots[0]))
			r->peers_or_roots[r->npeers++] = who;
	}
	*bytes_out = bytes;
	return r;
}

/* A string's bytes into the id hash, 8 at a time (the last word zero-padded). */
static __u64 mix_str(__u64 h, const char *str)
{
	size_t n = str ? strlen(str) : 0;

	for (size_t i = 0; i < n; i += 8) {
		__u64 w = 0;

		memcpy(&w, str + i, n - i < 8 ? n - i : 8);
		h = gp_nccl_id_mix(h, w);
	}
	return gp_nccl_id_mix(h, n);
}

/*
 * A successful collective (not Send/Recv: those pair ranks, not the whole communicator) is the
 * communicator's next sequence number, the same operation on every rank; its entry is this rank's
 * arrival, joined across ranks by comm_id (src/model/nccl_jobs.c).
 */
static __u64 sequenced(struct gp_nccl_comm *cm, const struct gp_api_call *c, enum gp_nccl_op op,
		       __u64 bytes)
{
	__u64 seq;

	if (op == GP_NCCL_SEND || op == GP_NCCL_RECV)
		return 0;
	seq = ++cm->collectives;
	cm->last_op = op;
	cm->last_bytes = bytes;
	cm->last_entry_ns = c->hdr.ts_ns;
	cm->last_tid = c->hdr.tid;
	/* the first GP_NCCL_ARRIVALS_MAX, in order; from the first that cannot be kept on, none */
	if (seq == cm->narrivals + 1 && seq <= GP_NCCL_ARRIVALS_MAX &&
	    !GP_ARRAY_GROW(cm->arrivals, cm->arrivals_cap, seq, 256))
		cm->arrivals[cm->narrivals++] =
			(struct gp_nccl_arrival){ .entry_ns = c->hdr.ts_ns };
	return seq;
}

void gp_nccl_released(struct gp_nccl_comm *cm, __u64 seq, __u64 ns)
{
	if (seq <= cm->narrivals && !cm->arrivals[seq - 1].release_ns)
		cm->arrivals[seq - 1].release_ns = ns;
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

	if (!nccl_of(x->p) || !out_read(c) || !(cm = comm_get(x->p, c->out)))
		return;
	created(cm, c, (__s32)c->args[2], (__s32)c->args[1], thread_device(x->p, c->hdr.tid));
	/*
	 * The id's hash (GP_CK_NCCL_ID): every rank got the same id. Not when it could not be read, nor
	 * 0: a capture recorded before gpuprobed read ids (a hash of 0 is as likely as any other value).
	 */
	cm->comm_id_known = !(c->hdr.flags & GP_EVF_ARGS_PARTIAL) && c->args[6];
	cm->comm_id = cm->comm_id_known ? c->args[6] : 0;
}

void gp_shape_nccl_init_all(struct gp_shape_call *x)
{
	struct gp_nccl *n = nccl_of(x->p);
	size_t first = n ? n->ncomms : 0;
	/* one clique in one process: unique to it (host, pid, the call's time), shared by its ranks */
	__u64 id = gp_nccl_id_mix(
		gp_nccl_id_mix(mix_str(GP_NCCL_ID_SEED, x->m->session.hostname), x->p->pid),
		x->c->hdr.ts_ns);

	if (!n || x->c->ret || !x->ext)
		return;
	init_all(x->p, x->c, x->ext, x->ext_len);
	for (size_t i = first; i < n->ncomms; i++) {
		n->comms[i]->comm_id_known = true;
		n->comms[i]->comm_id = id;
	}
}

/* (comm, color, key, ncclComm_t *newcomm, config); NULL for NCCL_SPLIT_NOCOLOR */
void gp_shape_nccl_split(struct gp_shape_call *x)
{
	const struct gp_api_call *c = x->c;
	struct gp_nccl *n = nccl_of(x->p);
	struct gp_nccl_comm *cm, *parent;

	__u64 k;

	if (!n || c->ret)
		return;
	/* the k-th split of a communicator is the same call on every rank (NCCL requires it) */
	parent = gp_u64map_get(&n->by_handle, c->args[0]);
	if (parent && parent->destroyed)
		parent = NULL;
	k = parent ? parent->splits++ : 0;
	if (!out_read(c) || !c->out || !(cm = comm_get(x->p, c->out)))
		return;
	created(cm, c, -1, -1, -1);
	cm->parent = c->args[0];
	if (!parent)
		return;
	cm->device = parent->device;
	/* its members agree: the parent's id, which split, and the colour they share */
	cm->comm_id_known = parent->comm_id_known;
	if (cm->comm_id_known)
		cm->comm_id = gp_nccl_id_mix(
			gp_nccl_id_mix(gp_nccl_id_mix(GP_NCCL_ID_SEED, parent->comm_id), k),
			(__u32)c->args[1]);
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
	struct gp_nccl_comm *cm = NULL;
	struct gp_nccl_row *row;
	__u64 bytes = 0;

	if (!nccl_of(p) || !(row = collective(p, c, &bytes, &cm)))
		return;
	*x->op = (struct gp_op){ .kind = GP_OP_COLL,
				 .nccl_op = row->op,
				 .dtype = row->dtype,
				 .bytes = bytes,
				 .comm = cm };
	if (c->ret)
		return;
	x->op->seq = sequenced(cm, c, row->op, bytes);
	gp_stream_collective(p, c, row, bytes, cm, x->op->seq, x->fx);
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
		free(n->comms[i]->arrivals);
		free(n->comms[i]);
	}
	free(n->comms);
	gp_u64map_clear(&n->by_handle, NULL);
	free(n);
	p->nccl = NULL;
}

/* ---- stalls (said by src/collect/stalls.c) ----------------------------------------------- */

int gp_model_nccl_stall(struct gp_model *m, __u64 comm_id, __u64 seq, unsigned op, __u64 bytes,
			__u64 waited_ns, __u64 mono_ns, const __s32 *waiting, size_t nwaiting)
{
	struct gp_nccl_stall *st;

	if (nwaiting > GP_NCCL_STALL_RANKS_MAX)
		return -EINVAL;
	if (GP_ARRAY_GROW(m->stalls, m->stalls_cap, m->nstalls + 1, 4))
		return -ENOMEM;
	st = &m->stalls[m->nstalls];
	*st = (struct gp_nccl_stall){ .comm_id = comm_id,
				      .seq = seq,
				      .op = op < GP_NCCL_OP_MAX ? op : GP_NCCL_OP_MAX,
				      .bytes = bytes,
				      .waited_ns = waited_ns,
				      .mono_ns = mono_ns };
	st->waiting = malloc((nwaiting ? nwaiting : 1) * sizeof(*st->waiting));
	if (!st->waiting)
		return -ENOMEM;
	memcpy(st->waiting, waiting, nwaiting * sizeof(*waiting));
	st->nwaiting = nwaiting;
	gp_model_tap_nccl_stall(
		m, &(struct gp_op_nccl_stall){
			   .comm_id = comm_id,
			   .seq = seq,
			   .op = op,
			   .bytes = bytes,
			   .waited_ns = waited_ns,
			   .mono_ns = mono_ns,
			   .waiting = { .p = waiting, .n = nwaiting * sizeof(*waiting) } });
	m->nstalls++;
	return 0;
}

int gp_model_nccl_stall_behind(struct gp_model *m, __u64 comm_id, __u64 seq, __s32 rank, __u32 pid,
			       __u64 last_seq, const char *state)
{
	struct gp_nccl_stall *st = m->nstalls ? &m->stalls[m->nstalls - 1] : NULL;
	struct gp_nccl_stall_behind *v;
	char *s;

	if (!st || st->comm_id != comm_id || st->seq != seq)
		return -EINVAL;
	v = realloc(st->behind, (st->nbehind + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	st->behind = v;
	s = strdup(state ? state : "");
	if (!s)
		return -ENOMEM;
	gp_model_tap_nccl_stall_behind(m, &(struct gp_op_nccl_stall_behind){ .comm_id = comm_id,
									     .seq = seq,
									     .rank = rank,
									     .pid = pid,
									     .last_seq = last_seq,
									     .state = s });
	v[st->nbehind++] = (struct gp_nccl_stall_behind){
		.rank = rank, .pid = pid, .last_seq = last_seq, .state = s
	};
	return 0;
}

void gp_nccl_stalls_release(struct gp_model *m)
{
	for (size_t i = 0; i < m->nstalls; i++) {
		for (size_t k = 0; k < m->stalls[i].nbehind; k++)
			free(m->stalls[i].behind[k].state);
		free(m->stalls[i].behind);
		free(m->stalls[i].waiting);
	}
	free(m->stalls);
	m->stalls = NULL;
	m->nstalls = m->stalls_cap = 0;
}

void gp_model_nccl_live_clear(struct gp_model *m)
{
	for (size_t i = 0; i < m->nprocs; i++) {
		struct gp_nccl *n = m->procs[i]->nccl;

		for (size_t k = 0; n && k < n->ncomms; k++) {
			n->comms[k]->inflight = false;
			n->comms[k]->wait_seq = n->comms[k]->wait_since_ns = 0;
		}
	}
}

void gp_model_nccl_live(struct gp_model *m, __u32 pid, __u64 handle, bool inflight, __u64 wait_seq,
			__u64 wait_since_ns)
{
	struct gp_process *p = gp_u64map_get(&m->by_pid, pid);
	struct gp_nccl_comm *cm = p && p->nccl ? gp_u64map_get(&p->nccl->by_handle, handle) : NULL;

	if (!cm || cm->destroyed)
		return;
	cm->inflight |= inflight;
	if (wait_seq && (!cm->wait_since_ns || wait_since_ns < cm->wait_since_ns)) {
		cm->wait_seq = wait_seq;
		cm->wait_since_ns = wait_since_ns;
	}
}
