/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_doc_merge.c — report.json "merge" (gpuprobed merge): the captures
 * merged, the clock offset each was given and how sure it is, and the notes
 * a reader must know (docs/report-format.md, "merge").
 */
#include <inttypes.h>
#include <stdio.h>

#include "report/report_builders.h"

static json_t *capture(struct gp_doc *d, const struct gp_merge_capture *c)
{
	json_t *o = gp_doc_obj_new(d);

	gp_doc_put(d, o, "path", gp_j_str(c->path));
	gp_doc_put(d, o, "host", gp_j_str(c->host));
	gp_doc_put(d, o, "processes", gp_j_u64(c->processes));
	gp_doc_put(d, o, "ops", gp_j_u64(c->ops));
	gp_doc_put(d, o, "chunks", gp_j_u64(c->chunks));
	gp_doc_put(d, o, "corrupt_chunks", gp_j_u64(c->corrupt_chunks));
	gp_doc_put(d, o, "complete", json_boolean(c->complete));
	gp_doc_put(d, o, "cut", c->cut ? gp_j_str(c->cut) : json_null());
	gp_doc_put(d, o, "corruption", c->corruption ? gp_j_str(c->corruption) : json_null());
	return o;
}

static json_t *clock_of(struct gp_doc *d, size_t i, const struct gp_merge_capture *c)
{
	json_t *o = gp_doc_obj_new(d);
	bool coll = c->collectives != 0;
	char id[17];

	snprintf(id, sizeof(id), "%016" PRIx64, (uint64_t)c->comm_id);
	gp_doc_put(d, o, "capture", gp_j_u64(i));
	gp_doc_put(d, o, "host", gp_j_str(c->host));
	gp_doc_put(d, o, "method", gp_j_str(c->method));
	gp_doc_put(d, o, "offset_ns", gp_j_s64(c->offset_ns));
	gp_doc_put(d, o, "uncertainty_ns",
		   c->uncertainty_ns >= 0 ? gp_j_s64(c->uncertainty_ns) : json_null());
	gp_doc_put(d, o, "realtime_offset_ns",
		   c->realtime_known ? gp_j_s64(c->realtime_offset_ns) : json_null());
	gp_doc_put(d, o, "correction_ns",
		   c->realtime_known && coll ? gp_j_s64(c->offset_ns - c->realtime_offset_ns)
					     : json_null());
	gp_doc_put(d, o, "collectives", gp_j_u64(c->collectives));
	gp_doc_put(d, o, "aligned_to", coll ? gp_j_u64(c->aligned_to) : json_null());
	gp_doc_put(d, o, "comm_id", coll ? gp_j_str(id) : json_null());
	if (coll && c->bounded) {
		json_t *b = gp_doc_arr_new(d);

		gp_doc_push(d, b, gp_j_s64(c->lo_ns));
		gp_doc_push(d, b, gp_j_s64(c->hi_ns));
		gp_doc_put(d, o, "bounds_ns", b);
	} else {
		gp_doc_put(d, o, "bounds_ns", json_null());
	}
	return o;
}

json_t *gp_doc_merge(struct gp_doc *d)
{
	const struct gp_merge_info *mi = d->m->merge;
	json_t *o, *caps, *clocks, *notes;

	if (!mi)
		return json_null();
	o = gp_doc_obj_new(d);
	caps = gp_doc_arr_new(d);
	clocks = gp_doc_arr_new(d);
	notes = gp_doc_arr_new(d);
	for (size_t i = 0; i < mi->ncaptures; i++) {
		gp_doc_push(d, caps, capture(d, &mi->captures[i]));
		gp_doc_push(d, clocks, clock_of(d, i, &mi->captures[i]));
	}
	for (size_t i = 0; i < mi->nnotes; i++)
		if (mi->notes[i])
			gp_doc_push(d, notes, gp_j_str(mi->notes[i]));
	gp_doc_put(d, o, "captures", caps);
	gp_doc_put(d, o, "clocks", clocks);
	gp_doc_put(d, o, "notes", notes);
	return o;
}
