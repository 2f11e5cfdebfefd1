/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_md_merge.c — report.md's "Merged captures" (gpuprobed merge): each
 * capture with its host and how its clock was put on the merged axis.
 */
#include "report/report_md.h"

static const char *ns_or_dash(char *buf, size_t len, const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_integer(v))
		return "—";
	snprintf(buf, len, "%+lld", (long long)json_integer_value(v));
	return buf;
}

int gp_md_merge(const json_t *doc, FILE *out)
{
	static const char *const head[] = {
		"#",	    "Capture",	   "Host",   "Processes",   "Complete",
		"Clock by", "Offset (ns)", "± (ns)", "Collectives", "Correction to REALTIME (ns)"
	};
	const json_t *mg = json_object_get(doc, "merge"), *c, *nt;
	struct gp_md_table *t;
	size_t i;
	char a[32], b[32], e[32], n[32], k[32];
	int err;

	if (!json_is_object(mg))
		return 0;
	fputs("## Merged captures\n\n", out);
	t = gp_md_table_new(10, head, "rllrllrrrr");
	json_array_foreach(json_object_get(mg, "captures"), i, c) {
		const json_t *cl = json_array_get(json_object_get(mg, "clocks"), i);
		const json_t *u = json_object_get(cl, "uncertainty_ns");

		if (!t)
			break;
		gp_md_table_cell(t, "%zu", i);
		gp_md_table_cell(t, "`%s`", gp_md_str(c, "path"));
		gp_md_table_cell(t, "%s", gp_md_str(c, "host"));
		gp_md_table_cell(t, "%s", gp_md_n(n, c, "processes"));
		gp_md_table_cell(t, "%s", gp_md_bool(c, "complete") ? "yes" : "cut");
		gp_md_table_cell(t, "%s", gp_md_str(cl, "method"));
		gp_md_table_cell(t, "%s", ns_or_dash(a, sizeof(a), cl, "offset_ns"));
		gp_md_table_cell(t, "%s",
				 json_is_integer(u) ? gp_md_n(e, cl, "uncertainty_ns") : "unknown");
		gp_md_table_cell(t, "%s", gp_md_n(k, cl, "collectives"));
		gp_md_table_cell(t, "%s", ns_or_dash(b, sizeof(b), cl, "correction_ns"));
	}
	err = gp_md_flush_table(t, out);
	fputs("\nTimes of a process are its host's CLOCK_MONOTONIC; plus its capture's offset they are on the merged "
	      "axis (the first capture's clock, trace.json's). Offsets come from the CLOCK_REALTIME relation each "
	      "capture recorded, refined where captures share an NCCL communicator: the synchronisations that "
	      "awaited collective #k return together on every rank (± half the spread of the middle 80 % of the "
	      "per-collective estimates, or the causal bounds when tighter).\n\n",
	      out);
	json_array_foreach(json_object_get(mg, "notes"), i, nt)
		fprintf(out, "- Note: %s\n", json_string_value(nt));
	if (json_array_size(json_object_get(mg, "notes")))
		fputc('\n', out);
	return err;
}
