/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_doc_nccl.c — the combined "GPU work" view of a process (what the
 * runtime, the driver and NCCL each queued by themselves, never counted
 * twice) and the NCCL section: communicators, per (communicator, op,
 * dtype) calls, bytes, size histogram, host time, blocked time and the
 * host-side bandwidths, and the communication/computation ratio. Every
 * number's exact meaning is in docs/report-format.md ("gpu_work", "nccl").
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/nccl_jobs.h"
#include "report/report_builders.h"

static json_t *layer_work(struct gp_doc *d, const struct gp_layer_work *w)
{
	json_t *o = gp_doc_obj_new(d);

	gp_doc_put(d, o, "launches", gp_j_u64(w->launches));
	gp_doc_put(d, o, "graph_launches", gp_j_u64(w->graph_launches));
	gp_doc_put(d, o, "copies", gp_j_u64(w->copies));
	gp_doc_put(d, o, "copy_bytes", gp_j_u64(w->copy_bytes));
	gp_doc_put(d, o, "memsets", gp_j_u64(w->memsets));
	gp_doc_put(d, o, "memset_bytes", gp_j_u64(w->memset_bytes));
	gp_doc_put(d, o, "collectives", gp_j_u64(w->collectives));
	gp_doc_put(d, o, "collective_bytes", gp_j_u64(w->collective_bytes));
	gp_doc_put(d, o, "host_ns", gp_j_u64(w->host_ns));
	return o;
}

json_t *gp_doc_gpu_work(struct gp_doc *d, const struct gp_process *p)
{
	json_t *o = gp_doc_obj_new(d);
	struct gp_layer_work total = { 0 };

	for (int f = GP_FAM_CUDART; f <= GP_FAM_NCCL; f++) {
		const struct gp_layer_work *w = &p->work[f];

		gp_doc_put(d, o, gp_family_name(f), layer_work(d, w));
		total.launches += w->launches;
		total.graph_launches += w->graph_launches;
		total.copies += w->copies;
		total.copy_bytes += w->copy_bytes;
		total.memsets += w->memsets;
		total.memset_bytes += w->memset_bytes;
		total.collectives += w->collectives;
		total.collective_bytes += w->collective_bytes;
		total.host_ns += w->host_ns;
	}
	gp_doc_put(d, o, "total", layer_work(d, &total));
	return o;
}

/* bytes per second of measured time, in GB/s (1e9 B/s); null when nothing was measured. */
static json_t *gbps(__u64 bytes, __u64 ns, double factor)
{
	if (!ns)
		return json_null();
	return gp_j_real2((double)bytes / (double)ns * factor);
}

static json_t *nccl_row(struct gp_doc *d, const struct gp_nccl_comm *cm,
			const struct gp_nccl_row *r)
{
	json_t *o = gp_doc_obj_new(d);
	const char *dt = gp_nccl_dtype_name(r->dtype);
	json_t *peers = gp_doc_arr_new(d);
	bool known_n = cm->nranks > 0;
	double factor = known_n ? gp_nccl_bus_factor(r->op, (unsigned)cm->nranks) : 0;

	for (unsigned i = 0; i < r->npeers; i++)
		gp_doc_push(d, peers, gp_j_u64(r->peers_or_roots[i]));
	gp_doc_put(d, o, "op", gp_j_str(gp_nccl_op_name(r->op)));
	gp_doc_put(d, o, "dtype", dt ? gp_j_str(dt) : gp_j_s64(r->dtype));
	gp_doc_put(d, o, "calls", gp_j_u64(r->calls));
	gp_doc_put(d, o, "errors", gp_j_u64(r->errors));
	gp_doc_put(d, o, "elements", gp_j_u64(r->elements));
	gp_doc_put(d, o, "bytes", gp_j_u64(r->bytes));
	gp_doc_put(d, o, "bytes_unknown_nranks", gp_j_u64(r->bytes_unknown_nranks));
	gp_doc_put(d, o, "size_histogram", gp_doc_size_histogram(d, r->size_hist));
	gp_doc_put(d, o, r->op == GP_NCCL_SEND || r->op == GP_NCCL_RECV ? "peers" : "roots", peers);
	gp_doc_put(d, o, "host_ns", gp_j_u64(r->host_ns));
	gp_doc_put(d, o, "host_avg_ns",
		   r->calls ? gp_j_u64((r->host_ns + r->calls / 2) / r->calls) : json_null());
	gp_doc_put(d, o, "blocked_calls", gp_j_u64(r->blocked_calls));
	gp_doc_put(d, o, "blocked_ns", gp_j_u64(r->blocked_ns));
	gp_doc_put(d, o, "measured_calls", gp_j_u64(r->measured));
	gp_doc_put(d, o, "measured_bytes", gp_j_u64(r->measured_bytes));
	gp_doc_put(d, o, "measured_ns", gp_j_u64(r->measured_ns));
	gp_doc_put(d, o, "algbw_gbps", gbps(r->measured_bytes, r->measured_ns, 1.0));
	gp_doc_put(d, o, "busbw_gbps",
		   known_n ? gbps(r->measured_bytes, r->measured_ns, factor) : json_null());
	gp_doc_put(d, o, "bus_factor", known_n ? gp_j_real2(factor) : json_null());
	return o;
}

static json_t *s32_or_null(__s32 v)
{
	return v >= 0 ? gp_j_s64(v) : json_null();
}

json_t *gp_doc_comm_id(const struct gp_nccl_comm *cm)
{
	char id[17];

	if (!cm->comm_id_known)
		return json_null();
	snprintf(id, sizeof(id), "%016" PRIx64, (uint64_t)cm->comm_id);
	return gp_j_str(id);
}

const char *gp_doc_host(const struct gp_model *m, const struct gp_process *p)
{
	return p->host ? p->host : m->session.hostname;
}

/* The top-level communicators[]: each comm_id with the ranks this report holds (nccl_jobs.c). */
static json_t *job(struct gp_doc *d, const struct gp_nccl_job *j)
{
	json_t *o = gp_doc_obj_new(d), *ranks = gp_doc_arr_new(d), *last = gp_doc_arr_new(d);

	gp_doc_put(d, o, "comm_id", gp_doc_comm_id(j->ranks[0].c));
	gp_doc_put(d, o, "nranks", s32_or_null(j->nranks));
	for (size_t i = 0; i < j->ntraced; i++) {
		const struct gp_nccl_job_rank *r = &j->ranks[i];
		json_t *x = gp_doc_obj_new(d);

		gp_doc_put(d, x, "rank", gp_j_s64(r->rank));
		gp_doc_put(d, x, "host", gp_j_str(gp_doc_host(d->m, r->p)));
		gp_doc_put(d, x, "pid", gp_j_u64(r->p->pid));
		gp_doc_put(d, x, "collectives", gp_j_u64(r->c->collectives));
		gp_doc_push(d, ranks, x);
		if (!j->complete)
			continue;
		x = gp_doc_obj_new(d);
		gp_doc_put(d, x, "rank", gp_j_s64(r->rank));
		gp_doc_put(d, x, "count", gp_j_u64(r->last));
		gp_doc_put(d, x, "mean_late_ns",
			   r->last ? gp_j_u64((r->late_sum_ns + r->last / 2) / r->last)
				   : json_null());
		gp_doc_push(d, last, x);
	}
	gp_doc_put(d, o, "ranks", ranks);
	gp_doc_put(d, o, "traced_ranks", gp_j_u64(j->ntraced));
	gp_doc_put(d, o, "duplicate_ranks", gp_j_u64(j->duplicates));
	gp_doc_put(d, o, "collectives", gp_j_u64(j->collectives));
	gp_doc_put(d, o, "compared", gp_j_u64(j->compared));
	if (j->complete) {
		gp_doc_put(d, o, "last_arrival", last);
	} else {
		json_decref(last);
		gp_doc_put(d, o, "last_arrival", json_null());
	}
	return o;
}

json_t *gp_doc_communicators(struct gp_doc *d)
{
	struct gp_nccl_jobs jobs;
	json_t *arr = gp_doc_arr_new(d);

	if (gp_nccl_jobs_build(d->m, &jobs)) {
		d->failed = true;
		return arr;
	}
	for (size_t i = 0; i < jobs.n; i++)
		gp_doc_push(d, arr, job(d, &jobs.v[i]));
	gp_nccl_jobs_free(&jobs);
	return arr;
}

json_t *gp_doc_nccl(struct gp_doc *d, const struct gp_process *p)
{
	const struct gp_nccl *n = p->nccl;
	const struct gp_pending *pd = &p->pending;
	json_t *o = gp_doc_obj_new(d), *comms = gp_doc_arr_new(d);
	__u64 comm_ns = pd->blocked_ns[GP_WORK_COLL];
	__u64 compute_ns = pd->blocked_ns[GP_WORK_KERNEL];

	for (size_t i = 0; n && i < n->ncomms; i++) {
		const struct gp_nccl_comm *cm = n->comms[i];
		json_t *c = gp_doc_obj_new(d), *ops = gp_doc_arr_new(d);

		gp_doc_put(d, c, "handle", gp_j_hex(cm->handle));
		gp_doc_put(d, c, "comm_id", gp_doc_comm_id(cm));
		gp_doc_put(d, c, "collectives", gp_j_u64(cm->collectives));
		gp_doc_put(d, c, "rank", s32_or_null(cm->rank));
		gp_doc_put(d, c, "nranks", s32_or_null(cm->nranks));
		gp_doc_put(d, c, "device", s32_or_null(cm->device));
		gp_doc_put(d, c, "created_by",
			   cm->init_api ? gp_j_str(gp_apis[cm->init_api].symbol) : json_null());
		gp_doc_put(d, c, "split_from", cm->parent ? gp_j_hex(cm->parent) : json_null());
		gp_doc_put(d, c, "destroyed", json_boolean(cm->destroyed));
		for (size_t k = 0; k < cm->nrows; k++)
			gp_doc_push(d, ops, nccl_row(d, cm, cm->rows[k]));
		gp_doc_put(d, c, "ops", ops);
		gp_doc_push(d, comms, c);
	}
	gp_doc_put(d, o, "communicators", comms);
	gp_doc_put(d, o, "group_calls", gp_j_u64(n ? n->group_calls : 0));
	/* what every synchronisation waited for (streams.c) */
	gp_doc_put(d, o, "sync_blocked_ns_collectives", gp_j_u64(comm_ns));
	gp_doc_put(d, o, "sync_blocked_ns_kernels", gp_j_u64(compute_ns));
	gp_doc_put(d, o, "sync_blocked_ns_copies",
		   gp_j_u64(pd->blocked_ns[GP_WORK_COPY] + pd->blocked_ns[GP_WORK_MEMSET]));
	gp_doc_put(d, o, "comm_compute_ratio",
		   compute_ns ? gp_j_real2((double)comm_ns / (double)compute_ns) : json_null());
	return o;
}

/* The top-level stalls[]: NCCL stalls said while tracing (src/session/stalls.c). */
json_t *gp_doc_stalls(struct gp_doc *d)
{
	json_t *arr = gp_doc_arr_new(d);

	for (size_t i = 0; i < d->m->nstalls; i++) {
		const struct gp_nccl_stall *st = &d->m->stalls[i];
		json_t *o = gp_doc_obj_new(d), *waiting = gp_doc_arr_new(d),
		       *behind = gp_doc_arr_new(d);
		char id[17];

		snprintf(id, sizeof(id), "%016" PRIx64, (uint64_t)st->comm_id);
		gp_doc_put(d, o, "comm_id", gp_j_str(id));
		gp_doc_put(d, o, "seq", gp_j_u64(st->seq));
		gp_doc_put(d, o, "op",
			   st->op < GP_NCCL_OP_MAX ? gp_j_str(gp_nccl_op_name(st->op))
						   : json_null());
		gp_doc_put(d, o, "bytes", st->bytes ? gp_j_u64(st->bytes) : json_null());
		for (size_t k = 0; k < st->nwaiting; k++)
			gp_doc_push(d, waiting, json_integer(st->waiting[k]));
		gp_doc_put(d, o, "waiting", waiting);
		for (size_t k = 0; k < st->nbehind; k++) {
			const struct gp_nccl_stall_behind *b = &st->behind[k];
			json_t *r = gp_doc_obj_new(d);

			gp_doc_put(d, r, "rank", json_integer(b->rank));
			gp_doc_put(d, r, "pid", gp_j_u64(b->pid));
			gp_doc_put(d, r, "last_seq", gp_j_u64(b->last_seq));
			gp_doc_put(d, r, "state", gp_j_str(b->state));
			gp_doc_push(d, behind, r);
		}
		gp_doc_put(d, o, "behind", behind);
		gp_doc_put(d, o, "waited_ns", gp_j_u64(st->waited_ns));
		gp_doc_put(d, o, "at_ns",
			   gp_j_u64(st->mono_ns >= d->m->session.start_mono_ns
					    ? st->mono_ns - d->m->session.start_mono_ns
					    : 0));
		gp_doc_push(d, arr, o);
	}
	return arr;
}
