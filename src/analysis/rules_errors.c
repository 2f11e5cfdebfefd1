/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rules_errors.c — the rules that hold whatever time they cost
 * (docs/recommendations.md): failing-calls (one finding per API), leak.
 */
#include <stdio.h>
#include <stdlib.h>

#include "analysis/advice_rules.h"

/* ---- errors, leaks ------------------------------------------------------------ */

void gp_rule_failing_calls(struct gp_advice *a)
{
	const struct gp_process *p = a->p;
	char t1[32];

	for (unsigned i = 0; i < GP_API_MAX; i++) {
		const struct gp_api_stats *st = p->api[i];
		struct gp_finding f = {
			.id = "failing-calls",
			.estimate = "exact",
			.unconditional = true,
			.action =
				"Check the error the first time it happens: a call that keeps failing "
				"does nothing but cost time (and may hide a bug)."
		};
		struct gp_ev_rows *codes;

		if (!st || st->errors < GP_ADVICE_FAIL_MIN)
			continue;
		f.about = gp_about_api(i);
		f.impact_ns = st->error_ns;
		codes = gp_ev_rows_new();
		for (size_t j = 0; j < st->ncodes; j++) {
			const char *name = gp_error_name(gp_apis[i].family, st->codes[j].code);
			struct gp_fields *o = gp_ev_row(codes);

			gp_ev_s64(o, "code", st->codes[j].code);
			if (name)
				gp_ev_str(o, "name", name);
			else
				gp_ev_null(o, "name");
			gp_ev_u64(o, "count", st->codes[j].count);
		}
		snprintf(f.title, sizeof(f.title), "%s failed %llu of %llu times",
			 gp_apis[i].symbol, (unsigned long long)st->errors,
			 (unsigned long long)st->time.count);
		snprintf(f.method, sizeof(f.method), "the host time of the %llu failed calls: %s",
			 (unsigned long long)st->errors, MS(t1, st->error_ns));
		gp_ev_str(&f.evidence, "api", gp_apis[i].symbol);
		gp_ev_u64(&f.evidence, "calls", st->time.count);
		gp_ev_u64(&f.evidence, "errors", st->errors);
		gp_ev_u64(&f.evidence, "error_host_ns", st->error_ns);
		gp_ev_rows_put(&f.evidence, "codes", codes);
		gp_advice_emit(a, &f);
	}
}

void gp_rule_leak(struct gp_advice *a)
{
	const struct gp_process *p = a->p;
	struct gp_finding f = {
		.id = "leak",
		.about = 0,
		.estimate = "exact",
		.unconditional = true,
		.action =
			"Free what the process allocates before it exits (if it is a framework's cache, "
			"this is how much it kept)."
	};
	const struct gp_alloc **live;
	size_t n;
	__u64 count[GP_AK_MAPPED + 1] = { 0 }, bytes[GP_AK_MAPPED + 1] = { 0 }, total = 0;
	struct gp_ev_rows *by_kind;

	if (!p->exited || gp_memory_live(p, &live, &n) || !n)
		return;
	for (size_t i = 0; i < n; i++) {
		count[live[i]->kind]++;
		bytes[live[i]->kind] += live[i]->bytes;
		total += live[i]->bytes;
	}
	free(live);
	by_kind = gp_ev_rows_new();
	for (int k = 0; k <= GP_AK_MAPPED; k++) {
		struct gp_fields *o;

		if (!count[k])
			continue;
		o = gp_ev_row(by_kind);
		gp_ev_str(o, "kind", gp_alloc_kind_name(k));
		gp_ev_u64(o, "allocations", count[k]);
		gp_ev_u64(o, "bytes", bytes[k]);
	}
	snprintf(f.title, sizeof(f.title),
		 "%zu allocation%s (%.1f MiB) never freed before the process exited", n,
		 n == 1 ? "" : "s", (double)total / (1 << 20));
	snprintf(f.method, sizeof(f.method),
		 "memory, not time: the allocations live at exit (memory.leaks)");
	gp_ev_u64(&f.evidence, "allocations", n);
	gp_ev_u64(&f.evidence, "bytes", total);
	gp_ev_rows_put(&f.evidence, "by_kind", by_kind);
	gp_advice_emit(a, &f);
}
