/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * replay_plan.c — reads a session's model operations and keeps, per
 * process, every outermost successful call that queues, waits for or
 * allocates GPU work, decoded into a struct gp_rop. The operations are also
 * applied to a model, so that a copy's direction and host memory kind, a
 * call's stream and a launch's kernel are decided by the very code that
 * writes the reports (transfers.c, streams.c, kernels.c), applied as
 * `gpuprobed report` applies them (capture_open.h), with the resolver's
 * recorded answers. replay_order.c then orders and links the calls.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture_open.h"
#include "model/view.h"
#include "model/model_ops.h"
#include "replay/replay_plan_internal.h"

/* ---- processes and threads ------------------------------------------------ */

struct gp_rbproc *gp_rbuild_proc(struct gp_rbuild *b, __u32 pid)
{
	for (size_t i = b->nprocs; i-- > 0;)
		if (b->procs[i]->p->pid == pid)
			return b->procs[i];

	struct gp_rbproc **v = realloc(b->procs, (b->nprocs + 1) * sizeof(*v));
	struct gp_rbproc *bp = calloc(1, sizeof(*bp));

	if (v)
		b->procs = v;
	if (!v || !bp || !(bp->p = calloc(1, sizeof(*bp->p)))) {
		free(bp);
		return NULL;
	}
	bp->p->pid = pid;
	b->procs[b->nprocs++] = bp;
	return bp;
}

static int set_str(char **dst, const char *s)
{
	char *c = s ? strdup(s) : NULL;

	if (s && !c)
		return -ENOMEM;
	free(*dst);
	*dst = c;
	return 0;
}

static int thread_name(struct gp_rbuild *b, __u32 pid, __u32 tid, const char *name)
{
	struct gp_rbproc *bp = gp_rbuild_proc(b, pid);
	struct gp_rtname *t;

	if (!bp)
		return -ENOMEM;
	for (size_t i = 0; i < bp->ntnames; i++)
		if (bp->tnames[i].tid == tid)
			return set_str(&bp->tnames[i].name, name);
	t = realloc(bp->tnames, (bp->ntnames + 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	bp->tnames = t;
	t[bp->ntnames] = (struct gp_rtname){ .tid = tid };
	if (set_str(&t[bp->ntnames].name, name))
		return -ENOMEM;
	bp->ntnames++;
	return 0;
}

/* ---- calls ---------------------------------------------------------------- */

static struct gp_rraw *raw_new(struct gp_rbproc *bp, const struct gp_api_call *c,
			       enum gp_rraw_kind kind)
{
	struct gp_rraw *r;

	if (bp->nraw == bp->raw_cap) {
		size_t cap = bp->raw_cap ? 2 * bp->raw_cap : 256;

		r = realloc(bp->raw, cap * sizeof(*r));
		if (!r)
			return NULL;
		bp->raw = r;
		bp->raw_cap = cap;
	}
	r = &bp->raw[bp->nraw++];
	*r = (struct gp_rraw){ .kind = kind,
			       .seq = bp->nraw - 1,
			       .api = c->api,
			       .tid = c->hdr.tid,
			       .ts_ns = c->hdr.ts_ns,
			       .dur_ns = c->dur_ns,
			       .async = (gp_apis[c->api].attr & GP_A_ASYNC) != 0,
			       .kernel = -1 };
	r->has_stream = gp_call_stream_key(c, &r->stream_key) && gp_api_stream_slot(c->api) >= 0;
	return r;
}

static void not_replayed(struct gp_rbproc *bp, const struct gp_api_call *c)
{
	bp->p->not_replayed[c->api]++;
	bp->p->not_replayed_total++;
}

/* The kernel row (index in the model process's kernels) whose call count a launch just advanced. */
static int launched_kernel(struct gp_rbproc *bp, const struct gp_process *mp)
{
	int found = -1;

	if (mp->nkernels > bp->kcalls_n) {
		__u64 *v = realloc(bp->kcalls, mp->nkernels * sizeof(*v));

		if (!v)
			return -1; /* an index, not an error: out of memory, the kernel stays unknown */
		memset(v + bp->kcalls_n, 0, (mp->nkernels - bp->kcalls_n) * sizeof(*v));
		bp->kcalls = v;
		bp->kcalls_n = mp->nkernels;
	}
	for (size_t i = 0; i < mp->nkernels; i++) {
		if (mp->kernels[i]->calls != bp->kcalls[i]) {
			bp->kcalls[i] = mp->kernels[i]->calls;
			found = (int)i;
		}
	}
	return found;
}

static unsigned create_flags(const struct gp_api_call *c)
{
	switch (c->api) {
	case GP_API_CUDA_STREAM_CREATE_WITH_FLAGS:
	case GP_API_CUDA_STREAM_CREATE_WITH_PRIORITY:
	case GP_API_CUDA_EVENT_CREATE_WITH_FLAGS:
		return (unsigned)c->args[1]; /* an unsigned int in esi */
	default:
		return 0;
	}
}

static int plan_call(struct gp_rbuild *b, const struct gp_api_call *c)
{
	const struct gp_api_info *a = &gp_apis[c->api];
	struct gp_rbproc *bp;
	struct gp_process *mp;
	struct gp_rraw *r = NULL;

	if (GP_EVF_PARENT(c->hdr.flags)) {
		if ((bp = gp_rbuild_proc(b, c->hdr.tgid)))
			bp->p->nested_skipped++;
		return bp ? 0 : -ENOMEM;
	}
	if (!(bp = gp_rbuild_proc(b, c->hdr.tgid)) ||
	    !(mp = gp_u64map_get(&b->model->by_pid, c->hdr.tgid)))
		return -ENOMEM;
	/* every launch, failed ones too, advances a kernel row: keep the snapshot current */
	int kernel = gp_api_queues(c->api) == GP_Q_KERNEL ? launched_kernel(bp, mp) : -1;

	if (c->ret) {
		bp->p->failed_skipped++;
		return 0;
	}
	/* no default: a new shape does not build until the replay says what it re-issues of it */
	switch (a->shape) {
	case GP_SHAPE_ALLOC:
	case GP_SHAPE_ALLOC_ASYNC:
		if (!(c->hdr.flags & GP_EVF_OUT_VALID) || !c->out)
			return 0;
		if (!(r = raw_new(bp, c, GP_RRAW_ALLOC)))
			return -ENOMEM;
		r->addr[0] = c->out;
		r->bytes = c->args[1];
		r->mem = (a->attr & GP_A_MEM_PINNED)	? GP_RMEM_PINNED
			 : (a->attr & GP_A_MEM_MANAGED) ? GP_RMEM_MANAGED
							: GP_RMEM_DEVICE;
		return 0;
	case GP_SHAPE_HOST_REGISTER:
		if (!(r = raw_new(bp, c, GP_RRAW_ALLOC)))
			return -ENOMEM;
		r->addr[0] = c->args[0];
		r->bytes = c->args[1];
		r->mem = GP_RMEM_REGISTERED;
		return 0;
	case GP_SHAPE_FREE:
	case GP_SHAPE_FREE_ASYNC:
		if (!c->args[0]) /* cudaFree(NULL): no work */
			return 0;
		if (!(r = raw_new(bp, c, GP_RRAW_FREE)))
			return -ENOMEM;
		r->addr[0] = c->args[0];
		return 0;
	case GP_SHAPE_MEMCPY:
	case GP_SHAPE_MEMCPY_2D:
	case GP_SHAPE_MEMCPY_PEER:
	case GP_SHAPE_CU_MEMCPY: {
		struct gp_copy_info ci;

		gp_transfer_classify(mp, c, &ci);
		if (ci.dir == GP_DIR_PTOP ||
		    ci.dir == GP_DIR_DEFAULT) { /* two devices, or unknown pointers */
			not_replayed(bp, c);
			return 0;
		}
		if (!(r = raw_new(bp, c, GP_RRAW_COPY)))
			return -ENOMEM;
		r->addr[0] = ci.dst;
		r->addr[1] = ci.src;
		r->bytes = ci.bytes;
		r->dir = ci.dir;
		r->hostmem = ci.hostmem;
		return 0;
	}
	case GP_SHAPE_MEMSET:
		if (!(r = raw_new(bp, c, GP_RRAW_MEMSET)))
			return -ENOMEM;
		r->addr[0] = c->args[0];
		r->bytes = gp_transfer_bytes(c);
		return 0;
	case GP_SHAPE_LAUNCH:
	case GP_SHAPE_LAUNCH_EXC:
	case GP_SHAPE_CU_LAUNCH:
	case GP_SHAPE_CU_LAUNCH_EX:
		if (!(r = raw_new(bp, c, GP_RRAW_KERNEL)))
			return -ENOMEM;
		r->kernel = kernel;
		return 0;
	case GP_SHAPE_GRAPH_LAUNCH:
	case GP_SHAPE_NCCL_COLL6:
	case GP_SHAPE_NCCL_COLL7:
	case GP_SHAPE_NCCL_COLL8:
	case GP_SHAPE_VMM_CREATE:
	case GP_SHAPE_VMM_MAP:
		not_replayed(bp, c);
		return 0;
	case GP_SHAPE_STREAM_CREATE:
	case GP_SHAPE_EVENT_CREATE:
		if (!(c->hdr.flags & GP_EVF_OUT_VALID))
			return 0;
		if (!(r = raw_new(bp, c,
				  a->shape == GP_SHAPE_STREAM_CREATE ? GP_RRAW_STREAM_CREATE
								     : GP_RRAW_EVENT_CREATE)))
			return -ENOMEM;
		r->handle = c->out;
		r->flags = create_flags(c);
		return 0;
	case GP_SHAPE_STREAM_SYNC:
		if (!(r = raw_new(bp, c, GP_RRAW_STREAM_SYNC)))
			return -ENOMEM;
		return 0;
	case GP_SHAPE_STREAM_DESTROY:
		return 0; /* the replay destroys its streams at the end */
	case GP_SHAPE_STREAM_WAIT_EVENT:
		if (!(r = raw_new(bp, c, GP_RRAW_STREAM_WAIT)))
			return -ENOMEM;
		r->handle = c->args[1];
		return 0;
	case GP_SHAPE_EVENT_RECORD:
		if (!(r = raw_new(bp, c, GP_RRAW_EVENT_RECORD)))
			return -ENOMEM;
		r->handle = c->args[0];
		return 0;
	case GP_SHAPE_EVENT_SYNC:
		if (!(r = raw_new(bp, c, GP_RRAW_EVENT_SYNC)))
			return -ENOMEM;
		r->handle = c->args[0];
		return 0;
	case GP_SHAPE_DEVICE_SYNC:
		if (!(r = raw_new(bp, c, GP_RRAW_DEVICE_SYNC)))
			return -ENOMEM;
		return 0;
	case GP_SHAPE_SET_DEVICE:
		if (!(r = raw_new(bp, c, GP_RRAW_SET_DEVICE)))
			return -ENOMEM;
		r->device = (int)(__s32)c->args[0];
		return 0;
	case GP_SHAPE_NONE:
	case GP_SHAPE_EVENT_DESTROY:
	case GP_SHAPE_GET_KERNEL:
	case GP_SHAPE_REGISTER_FUNCTION:
	case GP_SHAPE_VMM_RELEASE:
	case GP_SHAPE_VMM_UNMAP:
	case GP_SHAPE_MODULE_LOAD:
	case GP_SHAPE_MODULE_LOAD_FILE:
	case GP_SHAPE_MODULE_UNLOAD:
	case GP_SHAPE_GET_FUNCTION:
	case GP_SHAPE_KERNEL_GET_FUNCTION:
	case GP_SHAPE_NCCL_INIT_RANK:
	case GP_SHAPE_NCCL_INIT_ALL:
	case GP_SHAPE_NCCL_SPLIT:
	case GP_SHAPE_NCCL_COMM:
	case GP_SHAPE_NCCL_COMM_QUERY:
	case GP_SHAPE_NCCL_GROUP_START:
	case GP_SHAPE_NCCL_GROUP_END:
	case GP_SHAPE_MAX:
		return 0; /* no GPU work: host time, inside the next call's think time */
	}
	return 0;
}

static int ingest(struct gp_rbuild *b, const void *data, size_t len)
{
	const struct gp_event_hdr *h = data;
	struct gp_api_call c;

	if (len < sizeof(c) || !gp_event_is_call(h->type))
		return 0; /* a thread account, or malformed: nothing to replay */
	memcpy(&c, data, sizeof(c));
	if (c.api <= GP_API_INVALID || c.api >= GP_API_MAX)
		return 0;
	return plan_call(b, &c);
}

/* The model made (capture_open.h): the plan reads it. */
static int ready(void *ctx, struct gp_model *m)
{
	((struct gp_rbuild *)ctx)->model = m;
	return 0;
}

/* op applied to the model as a report applies it (err: how it went): what the replay needs kept. */
static int applied(void *ctx, unsigned op, const void *data, size_t len, int err)
{
	struct gp_rbuild *b = ctx;
	union gp_op_val v[GP_OP_MAX_FIELDS];
	struct gp_rbproc *bp;

	if (err || gp_model_op_is_answer(op) || gp_op_unpack(op, data, len, v))
		return 0; /* malformed operations are skipped, as a report skips them */
	switch (op) {
	case GP_MOP_PROCESS_ADD:
	case GP_MOP_PROCESS_EXEC:
		if (!(bp = gp_rbuild_proc(b, (__u32)v[0].u)))
			return -ENOMEM;
		return set_str(&bp->p->comm, v[1].s);
	case GP_MOP_THREAD_NAME:
		return thread_name(b, (__u32)v[0].u, (__u32)v[1].u, v[2].s);
	case GP_MOP_INGEST:
		return ingest(b, v[0].r.p, v[0].r.n);
	default:
		return 0;
	}
}

static void rbuild_release(struct gp_rbuild *b)
{
	for (size_t i = 0; i < b->nprocs; i++) {
		struct gp_rbproc *bp = b->procs[i];

		for (size_t t = 0; t < bp->ntnames; t++)
			free(bp->tnames[t].name);
		free(bp->tnames);
		free(bp->raw);
		free(bp->kcalls);
		gp_rprocess_free(bp->p);
		free(bp);
	}
	free(b->procs);
}

int gp_rplan_build(const struct gp_op_source *src, const struct gp_kernel_times *kt,
		   struct gp_rplan *plan, char *errmsg, size_t errlen)
{
	struct gp_rbuild b = { 0 };
	const struct gp_capture_open_opts opts = { .next = src->next,
						   .next_ctx = src->ctx,
						   .ctx = &b,
						   .ready = ready,
						   .applied = applied };
	struct gp_capture_model cm;
	int rc;

	memset(plan, 0, sizeof(*plan));
	snprintf(errmsg, errlen, "out of memory");
	rc = gp_capture_open_model(NULL, &opts, &cm, NULL, 0);
	if (rc)
		goto out;
	if ((rc = cm.read_err) < 0) {
		snprintf(errmsg, errlen, "reading operations: %s", strerror(-rc));
		goto out;
	}
	plan->procs = calloc(b.nprocs ? b.nprocs : 1, sizeof(*plan->procs));
	if (!plan->procs) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < b.nprocs; i++) {
		struct gp_rbproc *bp = b.procs[i];

		if ((rc = gp_rplan_order(&b, bp, kt)))
			goto out;
		plan->procs[plan->nprocs++] = bp->p;
		bp->p = NULL;
	}
	rc = 0;
out:
	rbuild_release(&b);
	gp_capture_model_close(&cm);
	if (rc)
		gp_rplan_release(plan);
	return rc;
}

struct gp_rprocess *gp_rplan_process(const struct gp_rplan *plan, __u32 pid)
{
	for (size_t i = 0; i < plan->nprocs; i++)
		if (plan->procs[i]->pid == pid)
			return plan->procs[i];
	return NULL;
}

void gp_rprocess_free(struct gp_rprocess *p)
{
	if (!p)
		return;
	free(p->comm);
	free(p->ops);
	for (size_t t = 0; t < p->nthreads; t++) {
		free(p->threads[t].name);
		free(p->threads[t].ops);
	}
	free(p->threads);
	free(p->objs);
	for (size_t k = 0; k < p->nkernels; k++) {
		free(p->kernels[k].name);
		free(p->kernels[k].mangled);
	}
	free(p->kernels);
	free(p);
}

void gp_rplan_release(struct gp_rplan *plan)
{
	for (size_t i = 0; i < plan->nprocs; i++)
		gp_rprocess_free(plan->procs[i]);
	free(plan->procs);
	memset(plan, 0, sizeof(*plan));
}
