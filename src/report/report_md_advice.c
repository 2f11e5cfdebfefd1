/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_md_advice.c — report.md "Recommendations": the verdicts first (a
 * state the findings below explain), then report.json's ranked findings as a
 * table (what, where, how much it would save, how that was estimated, which
 * others claim the same time), then each one with its formula, its call paths
 * and what to do.
 * docs/recommendations.md defines the rules.
 */
#include <string.h>

#include "report/report_md.h"

/* "#1, #3" of an array of ranks; "—" when empty. */
static const char *rank_list(char *buf, size_t len, const json_t *ranks)
{
	const json_t *r;
	size_t i, o = 0;

	buf[0] = '\0';
	json_array_foreach(ranks, i, r)
		if (o < len)
			o += (size_t)snprintf(buf + o, len - o, "%s#%lld", i ? ", " : "",
					      (long long)json_integer_value(r));
	return o ? buf : "—";
}

/* Each verdict in a sentence, with the findings that name its causes. */
static void verdicts(const json_t *doc, FILE *out)
{
	const json_t *v, *by;
	size_t i;
	char ranks[256];

	json_array_foreach(json_object_get(doc, "verdicts"), i, v) {
		by = json_object_get(v, "explained_by");
		fprintf(out,
			"**Verdict (pid %lld, %s): %s.** Overlapping the host's work with the GPU's would save at "
			"most %s ns (`%s`, an upper bound: the state, not a fix). %s%s%s\n\n",
			(long long)gp_md_int(v, "pid"), gp_md_str(v, "comm"), gp_md_str(v, "title"),
			gp_md_n((char[32]){ 0 }, v, "impact_ns"), gp_md_str(v, "id"),
			json_array_size(by) ? "The findings that name its causes: "
					    : "No finding below names its cause.",
			json_array_size(by) ? rank_list(ranks, sizeof(ranks), by) : "",
			json_array_size(by) ? "." : "");
	}
}

int gp_md_recommendations(const json_t *doc, FILE *out)
{
	static const char *const head[] = { "#",	"Saves (ns)", "Share", "Estimate",
					    "Overlaps", "PID",	      "Rule",  "Finding" };
	const json_t *arr = json_object_get(doc, "recommendations"), *f;
	struct gp_md_table *t;
	unsigned kinds = 0;
	size_t i;
	char n[32], ranks[256];
	int err;

	fputs("## Recommendations\n\n", out);
	verdicts(doc, out);
	if (!json_array_size(arr)) {
		fputs("No rule fired: nothing in this session matched a known cause of lost time "
		      "(docs/recommendations.md lists the rules and their thresholds).\n\n",
		      out);
		return 0;
	}
	json_array_foreach(arr, i, f) {
		const char *e = gp_md_str(f, "estimate");

		if (gp_md_int(
			    f,
			    "impact_ns")) /* a leak saves no time: it is ranked last whatever its kind */
			kinds |= !strcmp(e, "exact") ? 1u : !strcmp(e, "model") ? 2u : 4u;
	}
	fputs("Ranked by the host time a fix would save in this session, each estimated alone: findings that claim "
	      "the same host time (\"Overlaps\") do not add up. Rules and formulas: docs/recommendations.md.",
	      out);
	if (kinds & (kinds - 1))
		fputs(" The ranks compare estimates of different kinds: `exact` is the time of calls a fix removes, "
		      "`model` a formula on measured rates, `upper_bound` what a fix saves at most (often less).",
		      out);
	fputs("\n\n", out);
	t = gp_md_table_new(8, head, "rrrllrll");
	json_array_foreach(arr, i, f) {
		const json_t *share = json_object_get(f, "impact_share");

		if (!t)
			break;
		gp_md_table_cell(t, "%zu", i + 1);
		gp_md_table_cell(t, "%s", gp_md_n(n, f, "impact_ns"));
		if (json_is_number(share))
			gp_md_table_cell(t, "%.1f %%", 100.0 * json_number_value(share));
		else
			gp_md_table_cell(t, "—");
		gp_md_table_cell(t, "%s", gp_md_str(f, "estimate"));
		gp_md_table_cell(t, "%s",
				 rank_list(ranks, sizeof(ranks), json_object_get(f, "overlaps")));
		gp_md_table_cell(t, "%lld", (long long)gp_md_int(f, "pid"));
		gp_md_table_cell(t, "`%s`", gp_md_str(f, "id"));
		gp_md_table_cell(t, "%s", gp_md_str(f, "title"));
	}
	err = gp_md_flush_table(t, out);
	fputc('\n', out);
	json_array_foreach(arr, i, f) {
		const json_t *sites = json_object_get(f, "call_sites"), *s;
		size_t j;

		/* each line a paragraph of its own item: a Markdown renderer joins single line breaks. Indented
		 * by 4: CommonMark continues the item from 3, python-markdown (and Markdown.pl) only from 4,
		 * and otherwise restarts the list at each item, all numbered 1 */
		fprintf(out,
			"%zu. **`%s`** (pid %lld, %s): %s.\n\n    Estimate (%s): %s.\n\n    Do: %s\n",
			i + 1, gp_md_str(f, "id"), (long long)gp_md_int(f, "pid"),
			gp_md_str(f, "comm"), gp_md_str(f, "title"), gp_md_str(f, "estimate"),
			gp_md_str(f, "method"), gp_md_str(f, "action"));
		if (json_array_size(sites))
			fputc('\n', out);
		json_array_foreach(sites, j, s)
			fprintf(out, "    - %s calls, %s ns: `%s`\n", gp_md_n(n, s, "calls"),
				gp_md_n((char[32]){ 0 }, s, "host_ns"), gp_md_str(s, "path"));
		fputc('\n', out);
	}
	return err;
}
