/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_doc_advice.c — report.json "recommendations" and "verdicts": the
 * findings of analysis/ (plain C data, finding.h) as the document holds
 * them, each with its evidence, call paths, what host time it is about and
 * the ranks it meets (evidence and about: analysis/finding_json.c, the SQL
 * export's too). docs/report-format.md defines each field.
 */
#include "analysis/advice.h"
#include "analysis/finding_json.h"
#include "report/report_builders.h"

static json_t *sites_json(struct gp_doc *d, const struct gp_finding *f)
{
	json_t *arr = gp_doc_arr_new(d);

	for (unsigned i = 0; i < f->nsites; i++) {
		json_t *o = gp_doc_obj_new(d);

		gp_doc_put(d, o, "path", gp_j_str(f->sites[i].path));
		gp_doc_put(d, o, "calls", gp_j_u64(f->sites[i].calls));
		gp_doc_put(d, o, "host_ns", gp_j_u64(f->sites[i].host_ns));
		gp_doc_push(d, arr, o);
	}
	return arr;
}

/* One finding; ranks_key: "overlaps" (a ranked finding) or "explained_by" (a verdict). */
static json_t *finding_json(struct gp_doc *d, const struct gp_finding *f, const char *ranks_key)
{
	json_t *o = gp_doc_obj_new(d), *ranks = gp_doc_arr_new(d);

	gp_doc_put(d, o, "id", gp_j_str(f->id));
	gp_doc_put(d, o, "pid", gp_j_u64(f->pid));
	gp_doc_put(d, o, "comm", gp_j_str(f->comm));
	gp_doc_put(d, o, "title", gp_j_str(f->title));
	gp_doc_put(d, o, "impact_ns", gp_j_u64(f->impact_ns));
	gp_doc_put(d, o, "impact_share",
		   f->wall_ns ? json_real((double)f->impact_ns / (double)f->wall_ns) : json_null());
	gp_doc_put(d, o, "estimate", gp_j_str(f->estimate));
	gp_doc_put(d, o, "method", gp_j_str(f->method));
	gp_doc_put(d, o, "evidence", gp_fields_json(&f->evidence));
	gp_doc_put(d, o, "call_sites", sites_json(d, f));
	gp_doc_put(d, o, "action", gp_j_str(f->action));
	gp_doc_put(d, o, "about", gp_about_json(f->about));
	for (size_t i = 0; i < f->nranks; i++)
		gp_doc_push(d, ranks, gp_j_u64(f->ranks[i]));
	gp_doc_put(d, o, ranks_key, ranks);
	return o;
}

json_t *gp_doc_recommendations(struct gp_doc *d, json_t **verdicts)
{
	struct gp_findings fs;
	json_t *ranked;

	*verdicts = gp_doc_arr_new(d);
	if (gp_advise(d->m, &fs)) {
		d->failed = true;
		return NULL;
	}
	ranked = gp_doc_arr_new(d);
	for (size_t i = 0; i < fs.n; i++)
		gp_doc_push(d, ranked, finding_json(d, fs.v[i], "overlaps"));
	for (size_t i = 0; i < fs.nverdicts; i++)
		gp_doc_push(d, *verdicts, finding_json(d, fs.verdicts[i], "explained_by"));
	gp_findings_release(&fs);
	return ranked;
}
