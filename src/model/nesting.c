/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nesting.c — calls made inside another traced call on the same thread
 * (the BPF programs name the enclosing API in hdr.flags): the runtime going
 * down to the driver (cudaMemcpy -> cuMemcpyHtoD_v2), a library's traced
 * call going down to another one. Such a call is its outer call's
 * implementation: the outer call is the one counted (its record is
 * inclusive of the inner one's time, switches and faults); the inner one is
 * only listed, with the link both ways, and feeds no total.
 *
 * An inner call's record comes before its outer call's (it returns first),
 * so it waits, per process, until a call of its thread that covers it in
 * time returns, and is listed then. One the outer call never covers — the
 * outer call was still running when tracing stopped, or the process ended
 * inside it, or its return was missed — is left out with it and counted
 * (nested_left_out), so a report holds every call whole or not at all. An
 * outer call counted in the kernel (--aggregate) writes no record: its inner
 * calls are listed at once (GP_EVF_PARENT_COUNTED).
 */
#include <stdlib.h>

#include "array.h"
#include "model/model_internal.h"

static void link_add(struct gp_api_stats *st, struct gp_api_link *links, __u16 api)
{
	for (int i = 0; i < GP_API_LINKS_MAX; i++) {
		if (links[i].api == api) {
			links[i].calls++;
			return;
		}
		if (!links[i].api) {
			links[i] = (struct gp_api_link){ .api = api, .calls = 1 };
			return;
		}
	}
	st->links_other++;
}

static void nested_count(struct gp_process *p, const struct gp_nested_wait *w)
{
	struct gp_api_stats *st = p->api[w->api];

	if (!st && !(st = p->api[w->api] = calloc(1, sizeof(*st))))
		return;
	st->nested_calls++;
	st->nested_ns += w->end - w->ts;
	if (w->ret)
		st->nested_errors++;
	link_add(st, st->outer, w->outer);
	if (w->outer > GP_API_INVALID && w->outer < GP_API_MAX) {
		struct gp_api_stats *o = p->api[w->outer];

		if (!o)
			o = p->api[w->outer] = calloc(1, sizeof(*o));
		if (o)
			link_add(o, o->inner, w->api);
	}
}

void gp_api_nested(struct gp_process *p, const struct gp_api_call *c, __u16 outer, bool wait)
{
	struct gp_nested_wait w = { .ts = c->hdr.ts_ns,
				    .end = c->hdr.ts_ns + c->dur_ns,
				    .tid = c->hdr.tid,
				    .ret = c->ret,
				    .api = c->api,
				    .outer = outer };

	if (!wait) {
		nested_count(p, &w);
		return;
	}
	if (GP_ARRAY_GROW(p->writer->waiting, p->writer->waiting_cap, p->nwaiting + 1, 8)) {
		nested_count(p, &w); /* out of memory: listed now, as if its outer call will come */
		return;
	}
	p->writer->waiting[p->nwaiting++] = w;
}

void gp_api_outer_returned(struct gp_process *p, __u32 tid, __u64 ts, __u64 end)
{
	size_t kept = 0;

	for (size_t i = 0; i < p->nwaiting; i++) {
		const struct gp_nested_wait *w = &p->writer->waiting[i];

		if (w->tid != tid)
			p->writer->waiting[kept++] = *w; /* in order: links listed as first seen */
		else if (w->ts >= ts && w->end <= end)
			nested_count(p, w);
		else
			p->nested_left_out++; /* an earlier outer call on this thread that never returned */
	}
	p->nwaiting = kept;
}
