/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rules_copies.c — the rules on copies (docs/recommendations.md):
 * pageable-copies, sync-copies, small-copies.
 */
#include <stdio.h>

#include "analysis/advice_rules.h"

/* A bandwidth, null when not known. */
static void ev_gbps(struct gp_fields *o, const char *key, double v, bool known)
{
	if (known)
		gp_ev_real2(o, key, v);
	else
		gp_ev_null(o, key);
}

/* ---- copies ----------------------------------------------------------------- */

static bool site_pageable(const struct gp_stack_op *r)
{
	return r->op.kind == GP_OP_COPY && r->op.hostmem == GP_HM_PAGEABLE &&
	       (r->op.dir == GP_DIR_HTOD || r->op.dir == GP_DIR_DTOH);
}

void gp_rule_pageable(struct gp_advice *a)
{
	static const enum gp_dir dirs[] = { GP_DIR_HTOD, GP_DIR_DTOH };
	const struct gp_process *p = a->p;
	struct gp_finding f = {
		.id = "pageable-copies",
		.about = GP_ABOUT_COPIES,
		.estimate = "model",
		.site = site_pageable,
		.action =
			"Allocate the host buffers with cudaMallocHost/cudaHostAlloc, or cudaHostRegister "
			"them once (PyTorch: pin_memory=True); pinned memory is copied by DMA directly."
	};
	struct gp_ev_rows *arr = gp_ev_rows_new();
	__u64 calls = 0, bytes = 0, host = 0;
	size_t len = 0;
	char t[32];

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		const struct gp_xfer_row *ps = &p->xfer[dirs[i]][GP_HM_PAGEABLE][1],
					 *pa = &p->xfer[dirs[i]][GP_HM_PAGEABLE][0];
		const struct gp_xfer_row *pin = &p->xfer[dirs[i]][GP_HM_PINNED][1];
		__u64 T = ps->total_ns + pa->total_ns, save;
		double pg = gbps(ps->bytes, ps->total_ns), pn = gbps(pin->bytes, pin->total_ns), r;
		bool measured = ps->bytes >= GP_ADVICE_MEASURE_BYTES &&
				pin->bytes >= GP_ADVICE_MEASURE_BYTES && pg > 0 && pn > 0;
		struct gp_fields *o;

		if (!ps->calls && !pa->calls)
			continue;
		r = measured ? (pg < pn ? pg / pn : 1.0) : GP_ADVICE_PAGEABLE_RATIO;
		save = (__u64)((double)T * (1.0 - r));
		f.impact_ns += save;
		calls += ps->calls + pa->calls;
		bytes += ps->bytes + pa->bytes;
		host += T;
		o = gp_ev_row(arr);
		gp_ev_str(o, "direction", gp_dir_name(dirs[i]));
		gp_ev_u64(o, "calls", ps->calls + pa->calls);
		gp_ev_u64(o, "bytes", ps->bytes + pa->bytes);
		gp_ev_u64(o, "host_ns", T);
		ev_gbps(o, "pageable_gbps", pg, ps->calls && ps->total_ns);
		ev_gbps(o, "pinned_gbps", pn, measured);
		gp_ev_real2(o, "ratio", r);
		gp_ev_str(o, "ratio_source", measured ? "measured" : "assumed");
		if (len < sizeof(f.method))
			len += (size_t)snprintf(
				f.method + len, sizeof(f.method) - len,
				"%s%s: %s in pageable copies × (1 − %.2f, pageable/pinned bandwidth %s) = %s",
				len ? "; " : "", gp_dir_name(dirs[i]), MS(t, T), r,
				measured ? "measured" : "assumed",
				gp_advice_ms((char[32]){ 0 }, 32, save));
	}
	if (!calls) {
		gp_ev_rows_free(arr);
		return;
	}
	snprintf(f.title, sizeof(f.title),
		 "%llu copies of pageable host memory (%.1f MiB) took %s of host time",
		 (unsigned long long)calls, (double)bytes / (1 << 20), MS(t, host));
	gp_ev_rows_put(&f.evidence, "directions", arr);
	gp_advice_emit(a, &f);
}

static bool site_sync_copy(const struct gp_stack_op *r)
{
	return r->op.kind == GP_OP_COPY && r->op.dir != GP_DIR_HTOH &&
	       !(gp_apis[r->api].attr & GP_A_ASYNC);
}

void gp_rule_sync_copies(struct gp_advice *a, __u64 outside)
{
	const struct gp_process *p = a->p;
	struct gp_finding f = {
		.id = "sync-copies",
		.about = GP_ABOUT_COPIES | GP_ABOUT_OUTSIDE,
		.estimate = "upper_bound",
		.site = site_sync_copy,
		.action =
			"Use cudaMemcpyAsync on a stream (from pinned memory) and synchronise only where "
			"the data is needed, so that the host works while the copy runs."
	};
	__u64 calls = 0, bytes = 0, T = 0;
	char t1[32], t2[32], t3[32];

	for (int dir = 0; dir < GP_DIR_MAX; dir++) {
		if (dir == GP_DIR_HTOH)
			continue;
		for (int hm = 0; hm < GP_HM_MAX; hm++) {
			calls += p->xfer[dir][hm][1].calls;
			bytes += p->xfer[dir][hm][1].bytes;
			T += p->xfer[dir][hm][1].total_ns;
		}
	}
	if (!calls)
		return;
	f.impact_ns = min_u64(T, outside);
	snprintf(f.title, sizeof(f.title), "%llu synchronous copies held the host for %s",
		 (unsigned long long)calls, MS(t1, T));
	snprintf(
		f.method, sizeof(f.method),
		"min(host time in synchronous copies %s, host time outside GPU calls %s) = %s: the most an "
		"asynchronous copy can overlap with the host's own work",
		MS(t1, T), MS(t2, outside), MS(t3, f.impact_ns));
	gp_ev_u64(&f.evidence, "calls", calls);
	gp_ev_u64(&f.evidence, "bytes", bytes);
	gp_ev_u64(&f.evidence, "host_ns", T);
	gp_ev_u64(&f.evidence, "outside_ns", outside);
	gp_advice_emit(a, &f);
}

static bool site_small_copy(const struct gp_stack_op *r)
{
	return r->op.kind == GP_OP_COPY && r->op.bytes <= GP_SMALL_COPY_BYTES;
}

void gp_rule_small_copies(struct gp_advice *a)
{
	const struct gp_process *p = a->p;
	struct gp_finding f = {
		.id = "small-copies",
		.about = GP_ABOUT_COPIES,
		.estimate = "model",
		.site = site_small_copy,
		.action =
			"Gather small tensors into one buffer and copy it once (or use pinned, mapped "
			"memory the kernels read directly): each copy call pays a fixed cost."
	};
	struct gp_ev_rows *rows = gp_ev_rows_new();
	__u64 calls = 0, S = 0;
	char t1[32], t2[32];

	for (int dir = 0; dir < GP_DIR_MAX; dir++)
		for (int hm = 0; hm < GP_HM_MAX; hm++)
			calls += p->xfer[dir][hm][0].small_calls + p->xfer[dir][hm][1].small_calls;
	if (calls < GP_ADVICE_SMALL_MIN_CALLS) {
		gp_ev_rows_free(rows);
		return;
	}
	for (int dir = 0; dir < GP_DIR_MAX; dir++) {
		for (int hm = 0; hm < GP_HM_MAX; hm++) {
			for (int sync = 0; sync < 2; sync++) {
				const struct gp_xfer_row *r = &p->xfer[dir][hm][sync];
				__u64 big = r->bytes - r->small_bytes,
				      big_ns = r->total_ns - r->small_ns;
				bool measured = big >= GP_ADVICE_MEASURE_BYTES && big_ns;
				double bw = measured		   ? gbps(big, big_ns)
					    : hm == GP_HM_PAGEABLE ? GP_ADVICE_PAGEABLE_GBPS
								   : GP_ADVICE_PINNED_GBPS;
				struct gp_fields *o;

				if (!r->small_calls)
					continue;
				f.impact_ns +=
					sub_sat(r->small_ns, (__u64)((double)r->small_bytes / bw));
				S += r->small_ns;
				o = gp_ev_row(rows);
				gp_ev_str(o, "direction", gp_dir_name(dir));
				gp_ev_str(o, "host_memory", gp_hostmem_name(hm));
				gp_ev_bool(o, "sync", sync);
				gp_ev_u64(o, "calls", r->small_calls);
				gp_ev_u64(o, "bytes", r->small_bytes);
				gp_ev_u64(o, "host_ns", r->small_ns);
				gp_ev_real2(o, "reference_gbps", bw);
				gp_ev_str(o, "reference_source", measured ? "measured" : "assumed");
			}
		}
	}
	snprintf(f.title, sizeof(f.title), "%llu copies of at most 64 KiB took %s of host time",
		 (unsigned long long)calls, MS(t1, S));
	snprintf(
		f.method, sizeof(f.method),
		"per direction and memory kind: host time of the small copies − their bytes at the reference "
		"bandwidth (that of the larger copies of the same kind when measured); summed: %s",
		MS(t2, f.impact_ns));
	gp_ev_rows_put(&f.evidence, "rows", rows);
	gp_advice_emit(a, &f);
}
