/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * replay_infer.c — what the host-side record says about the GPU, in one pass
 * over a process's operations in entry order, keeping per stream the work
 * queued and the work a synchronisation has covered:
 *
 *  - a kernel's duration, where a synchronisation covered that kernel alone:
 *    it was queued on an idle stream (everything before it synchronised),
 *    nothing else was queued there, and the synchronisation covered no
 *    other stream with work: duration = the synchronisation's return - the
 *    launch's entry (an upper bound: it includes the launch latency). A
 *    kernel's duration is the median of its observations;
 *  - redundant synchronisations: the streams they cover have nothing queued
 *    since their previous synchronisation (the what-if no-redundant-sync).
 *
 * Coverage: a stream synchronisation covers its stream, and the legacy
 * default stream's also every blocking stream (per-thread default streams,
 * streams created without cudaStreamNonBlocking or before the capture); an
 * event synchronisation covers its stream up to the event's last record; a
 * device synchronisation every stream; a synchronous copy or memset its
 * default stream (and, on the legacy one, the blocking streams) up to itself.
 */
#include <stdlib.h>
#include <string.h>

#include "replay/replay_plan_internal.h"

#define CUDA_STREAM_NON_BLOCKING 0x1u /* cudaStreamNonBlocking, CU_STREAM_NON_BLOCKING */

struct sstate {
	__u64 queued,
		synced; /* work items queued on the stream, and covered by a synchronisation */
	long cand;	/* a kernel queued on the idle stream, alone since: its op index, else -1 */
};

struct estate {
	int stream;   /* stream of the event's last record, -1: never recorded */
	__u64 queued; /* the stream's queued count at that record */
};

struct obs {
	__u64 *v;
	size_t n;
};

static bool blocking(const struct gp_robj *o)
{
	return o->skind != GP_RSTREAM_HANDLE || !(o->flags & CUDA_STREAM_NON_BLOCKING);
}

/* Whether synchronising stream s (as far as `upto`) covers stream c too. */
static bool covers(const struct gp_rprocess *p, int s, int c)
{
	if (s == c)
		return true;
	return p->objs[s].skind == GP_RSTREAM_LEGACY && p->objs[c].kind == GP_ROBJ_STREAM &&
	       blocking(&p->objs[c]);
}

static void observe(struct obs *obs, const struct gp_rprocess *p, long cand,
		    const struct gp_rop *sync)
{
	const struct gp_rop *k = &p->ops[cand];
	__u64 end = sync->ts_ns + sync->dur_ns, *v;

	if (!obs || k->kernel < 0 || (size_t)k->kernel >= p->nkernels || end < k->ts_ns)
		return;
	v = realloc(obs[k->kernel].v, (obs[k->kernel].n + 1) * sizeof(*v));
	if (!v)
		return; /* one observation fewer */
	obs[k->kernel].v = v;
	v[obs[k->kernel].n++] = end - k->ts_ns;
}

/*
 * A synchronisation covering the streams `covered` selects (up to `upto`
 * work items on stream `s` when upto is not NULL): redundant when none has
 * anything new; observes a kernel when exactly one covered stream had work,
 * and that work was the kernel alone.
 */
static bool synchronise(struct gp_rprocess *p, struct sstate *ss, struct obs *obs,
			const struct gp_rop *op, int s, const __u64 *upto)
{
	size_t busy = 0;
	int last_busy = -1;

	for (size_t c = 0; c < p->nobjs; c++) {
		if (p->objs[c].kind != GP_ROBJ_STREAM || (s >= 0 && !covers(p, s, (int)c)))
			continue;
		__u64 to = upto && (int)c == s ? *upto : ss[c].queued;

		if (to > ss[c].synced) {
			busy++;
			last_busy = (int)c;
		}
	}
	if (busy == 1) {
		struct sstate *b = &ss[last_busy];
		__u64 to = upto && last_busy == s ? *upto : b->queued;

		if (to == b->queued && b->queued - b->synced == 1 && b->cand >= 0)
			observe(obs, p, b->cand, op);
	}
	for (size_t c = 0; c < p->nobjs; c++) {
		if (p->objs[c].kind != GP_ROBJ_STREAM || (s >= 0 && !covers(p, s, (int)c)))
			continue;
		__u64 to = upto && (int)c == s ? *upto : ss[c].queued;

		if (to > ss[c].synced)
			ss[c].synced = to;
		if (ss[c].synced == ss[c].queued)
			ss[c].cand = -1;
	}
	return busy == 0;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * One pass: with sync_copies false, synchronous copies count as queued work
 * that does not synchronise (the plan as the what-if async-copies replays
 * it), so that a synchronisation is dropped only where it is redundant in
 * the replay that drops it. Kernel observations come from the pass as captured.
 */
static void pass(struct gp_rprocess *p, bool sync_copies, struct obs *obs)
{
	struct sstate *ss = calloc(p->nobjs ? p->nobjs : 1, sizeof(*ss));
	struct estate *es = calloc(p->nobjs ? p->nobjs : 1, sizeof(*es));

	if (!ss || !es)
		goto out; /* no synchronisation called redundant */
	for (size_t i = 0; i < p->nobjs; i++) {
		ss[i].cand = -1;
		es[i].stream = -1;
	}
	for (size_t i = 0; i < p->nops; i++) {
		struct gp_rop *op = &p->ops[i];
		int s = op->stream;
		bool redundant = false;

		switch (op->kind) {
		case GP_ROP_KERNEL:
			ss[s].cand = ss[s].queued == ss[s].synced ? (long)i : -1;
			ss[s].queued++;
			break;
		case GP_ROP_COPY:
		case GP_ROP_MEMSET:
			ss[s].queued++;
			ss[s].cand = -1;
			if (op->legacy_sync && (sync_copies || op->kind == GP_ROP_MEMSET))
				synchronise(p, ss, obs, op, s, NULL);
			break;
		case GP_ROP_ALLOC:
		case GP_ROP_FREE:
		case GP_ROP_STREAM_WAIT:
			if (s >= 0) {
				ss[s].queued++;
				ss[s].cand = -1;
			}
			break;
		case GP_ROP_EVENT_RECORD:
			es[op->event] = (struct estate){ .stream = s, .queued = ss[s].queued };
			break;
		case GP_ROP_STREAM_SYNC:
			redundant = synchronise(p, ss, obs, op, s, NULL);
			break;
		case GP_ROP_EVENT_SYNC:
			if (es[op->event].stream < 0) /* never recorded: returns at once */
				redundant = true;
			else
				redundant = synchronise(p, ss, obs, op, es[op->event].stream,
							&es[op->event].queued);
			break;
		case GP_ROP_DEVICE_SYNC:
			redundant = synchronise(p, ss, obs, op, -1, NULL);
			break;
		default:
			break;
		}
		if (sync_copies) {
			op->redundant = redundant;
			p->redundant_syncs += redundant;
		} else {
			op->redundant_if_async = redundant;
		}
	}
out:
	free(ss);
	free(es);
}

void gp_rplan_infer(struct gp_rprocess *p)
{
	struct obs *obs = calloc(p->nkernels ? p->nkernels : 1, sizeof(*obs));

	if (!obs)
		return; /* no durations inferred, no synchronisation called redundant */
	pass(p, true, obs);
	pass(p, false, NULL);
	for (size_t k = 0; k < p->nkernels; k++) {
		struct gp_rkernel *rk = &p->kernels[k];

		rk->observations = obs[k].n;
		if (rk->source == GP_KDUR_TABLE || !obs[k].n)
			continue;
		qsort(obs[k].v, obs[k].n, sizeof(*obs[k].v), cmp_u64);
		rk->dur_ns = obs[k].v[obs[k].n / 2];
		rk->source = GP_KDUR_INFERRED;
	}
	for (size_t k = 0; k < p->nkernels; k++)
		free(obs[k].v);
	free(obs);
}
