/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nesting.c — calls made inside another traced call on the same thread
 * (the BPF programs name the enclosing API in hdr.flags): the runtime going
 * down to the driver (cudaMemcpy -> cuMemcpyHtoD_v2), a library's traced
 * call going down to another one. Such a call is its outer call's
 * implementation: the outer call is the one counted (its record is
 * inclusive of the inner one's time, switches and faults); the inner one is
 * only listed, with the link both ways, and feeds no total.
 */
#include <stdlib.h>

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

void gp_api_nested(struct gp_process *p, struct gp_api_stats *st, const struct gp_api_call *c, __u16 outer)
{
	st->nested_calls++;
	st->nested_ns += c->dur_ns;
	if (c->ret)
		st->nested_errors++;
	link_add(st, st->outer, outer);
	if (outer > GP_API_INVALID && outer < GP_API_MAX) {
		struct gp_api_stats *o = p->api[outer];

		if (!o)
			o = p->api[outer] = calloc(1, sizeof(*o));
		if (o)
			link_add(o, o->inner, c->api);
	}
}
