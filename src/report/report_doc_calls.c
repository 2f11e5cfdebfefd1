/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_doc_calls.c — the per-call sections of a process in the report
 * document: the API table (nsys cuda_api_sum shape, host-observed times),
 * transfers and memsets.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_builders.h"

static int cmp_errcount(const void *a, const void *b)
{
	const struct gp_errcount *x = a, *y = b;

	return (x->code > y->code) - (x->code < y->code);
}

static json_t *error_codes(struct gp_doc *d, const struct gp_api_stats *st, enum gp_family fam)
{
	json_t *arr = gp_doc_arr_new(d);
	struct gp_errcount *codes = st->ncodes ? malloc(st->ncodes * sizeof(*codes)) : NULL;

	if (st->ncodes && !codes) {
		d->failed = true;
		return arr;
	}
	if (st->ncodes) {
		memcpy(codes, st->codes, st->ncodes * sizeof(*codes));
		qsort(codes, st->ncodes, sizeof(*codes), cmp_errcount);
	}
	for (size_t i = 0; i < st->ncodes; i++) {
		json_t *o = gp_doc_obj_new(d);
		const char *name = gp_error_name(fam, codes[i].code);
		char num[16];

		snprintf(num, sizeof(num), "%d", codes[i].code);
		gp_doc_put(d, o, "code", gp_j_s64(codes[i].code));
		gp_doc_put(d, o, "name", gp_j_str(name ? name : num));
		gp_doc_put(d, o, "count", gp_j_u64(codes[i].count));
		gp_doc_push(d, arr, o);
	}
	free(codes);
	return arr;
}

/* [{api, calls}] of a link table, in table order (first seen first). */
static json_t *api_links(struct gp_doc *d, const struct gp_api_link *links)
{
	json_t *arr = gp_doc_arr_new(d);

	for (int i = 0; i < GP_API_LINKS_MAX && links[i].api; i++) {
		json_t *o = gp_doc_obj_new(d);

		gp_doc_put(d, o, "api",
			   gp_j_str(links[i].api < GP_API_MAX ? gp_apis[links[i].api].symbol
							      : "unknown"));
		gp_doc_put(d, o, "calls", gp_j_u64(links[i].calls));
		gp_doc_push(d, arr, o);
	}
	return arr;
}

struct api_ref {
	enum gp_api_id id;
	const struct gp_api_stats *st;
};

/* nsys order: most total time first; then by name */
static int cmp_api(const void *a, const void *b)
{
	const struct api_ref *x = a, *y = b;

	if (x->st->time.sum != y->st->time.sum)
		return x->st->time.sum > y->st->time.sum ? -1 : 1;
	return strcmp(gp_apis[x->id].symbol, gp_apis[y->id].symbol);
}

json_t *gp_doc_api(struct gp_doc *d, const struct gp_process *p)
{
	json_t *arr = gp_doc_arr_new(d);
	struct api_ref refs[GP_API_MAX];
	size_t n = 0;

	for (unsigned i = 1; i < GP_API_MAX; i++)
		if (p->api[i] && p->api[i]->time.count)
			refs[n++] = (struct api_ref){ (enum gp_api_id)i, p->api[i] };
	qsort(refs, n, sizeof(refs[0]), cmp_api);
	for (size_t i = 0; i < n; i++) {
		const struct gp_stats *t = &refs[i].st->time;
		const struct gp_api_info *a = &gp_apis[refs[i].id];
		json_t *o = gp_doc_obj_new(d);

		gp_doc_put(d, o, "name", gp_j_str(a->symbol));
		gp_doc_put(d, o, "family", gp_j_str(gp_family_name(a->family)));
		gp_doc_put(d, o, "calls", gp_j_u64(t->count));
		/* of calls: counted in the kernel (--aggregate): percentiles within a factor of 2 */
		gp_doc_put(d, o, "aggregated_calls", gp_j_u64(refs[i].st->aggregated_calls));
		/* of aggregated_calls: scaled up from the overhead budget's duty cycle, not seen */
		gp_doc_put(d, o, "estimated_calls", gp_j_u64(refs[i].st->estimated_calls));
		gp_doc_put(d, o, "errors", gp_j_u64(refs[i].st->errors));
		gp_doc_put(d, o, "error_codes", error_codes(d, refs[i].st, a->family));
		gp_doc_put(d, o, "time_pct",
			   gp_j_real2(p->api_total_ns
					      ? 100.0 * (double)t->sum / (double)p->api_total_ns
					      : 0));
		gp_doc_put(d, o, "total_ns", gp_j_u64(t->sum));
		gp_doc_put(d, o, "avg_ns", gp_j_u64((t->sum + t->count / 2) / t->count));
		gp_doc_put(d, o, "med_ns", gp_j_u64(gp_stats_percentile(t, 50)));
		gp_doc_put(d, o, "min_ns", gp_j_u64(t->min));
		gp_doc_put(d, o, "max_ns", gp_j_u64(t->max));
		gp_doc_put(d, o, "stddev_ns", gp_j_u64((__u64)llround(gp_stats_stddev(t))));
		gp_doc_put(d, o, "p99_ns", gp_j_u64(gp_stats_percentile(t, 99)));
		/* what happened to the calling threads during these calls */
		gp_doc_put(d, o, "offcpu_ns", gp_j_u64(refs[i].st->inside.offcpu_ns));
		gp_doc_put(d, o, "voluntary_switches", gp_j_u64(refs[i].st->inside.vol_switches));
		gp_doc_put(d, o, "involuntary_switches",
			   gp_j_u64(refs[i].st->inside.invol_switches));
		gp_doc_put(d, o, "minor_faults", gp_j_u64(refs[i].st->inside.minor_faults));
		gp_doc_put(d, o, "major_faults", gp_j_u64(refs[i].st->inside.major_faults));
		gp_doc_put(d, o, "implemented_by", api_links(d, refs[i].st->inner));
		gp_doc_push(d, arr, o);
	}
	return arr;
}

/* Calls made inside another traced call: listed, not counted (see nesting.c). Most calls first. */
static int cmp_nested(const void *a, const void *b)
{
	const struct api_ref *x = a, *y = b;

	if (x->st->nested_calls != y->st->nested_calls)
		return x->st->nested_calls > y->st->nested_calls ? -1 : 1;
	return strcmp(gp_apis[x->id].symbol, gp_apis[y->id].symbol);
}

json_t *gp_doc_nested_api(struct gp_doc *d, const struct gp_process *p)
{
	json_t *arr = gp_doc_arr_new(d);
	struct api_ref refs[GP_API_MAX];
	size_t n = 0;

	for (unsigned i = 1; i < GP_API_MAX; i++)
		if (p->api[i] && p->api[i]->nested_calls)
			refs[n++] = (struct api_ref){ (enum gp_api_id)i, p->api[i] };
	qsort(refs, n, sizeof(refs[0]), cmp_nested);
	for (size_t i = 0; i < n; i++) {
		const struct gp_api_stats *st = refs[i].st;
		json_t *o = gp_doc_obj_new(d);

		gp_doc_put(d, o, "name", gp_j_str(gp_apis[refs[i].id].symbol));
		gp_doc_put(d, o, "family", gp_j_str(gp_family_name(gp_apis[refs[i].id].family)));
		gp_doc_put(d, o, "calls", gp_j_u64(st->nested_calls));
		gp_doc_put(d, o, "errors", gp_j_u64(st->nested_errors));
		gp_doc_put(d, o, "total_ns", gp_j_u64(st->nested_ns));
		gp_doc_put(d, o, "implements", api_links(d, st->outer));
		gp_doc_put(d, o, "links_not_listed", gp_j_u64(st->links_other));
		gp_doc_push(d, arr, o);
	}
	return arr;
}

json_t *gp_doc_size_histogram(struct gp_doc *d, const __u64 *hist)
{
	json_t *arr = gp_doc_arr_new(d);

	for (unsigned b = 0; b < GP_SIZE_BUCKETS; b++) {
		if (!hist[b])
			continue;

		json_t *o = gp_doc_obj_new(d);
		__u64 lo, hi;

		gp_size_bucket_range(b, &lo, &hi);
		gp_doc_put(d, o, "lo_bytes", gp_j_u64(lo));
		gp_doc_put(d, o, "hi_bytes", gp_j_u64(hi));
		gp_doc_put(d, o, "calls", gp_j_u64(hist[b]));
		gp_doc_push(d, arr, o);
	}
	return arr;
}

/* Achieved bandwidth of a synchronous row: bytes per second of host time, exact integer arithmetic. */
static json_t *bandwidth(const struct gp_xfer_row *row, bool sync)
{
	if (!sync || !row->total_ns)
		return json_null();

	unsigned __int128 bps = (unsigned __int128)row->bytes * 1000000000u / row->total_ns;

	return gp_j_u64(bps > UINT64_MAX ? UINT64_MAX : (__u64)bps);
}

/* Rows ordered by direction (HtoD, DtoH, DtoD, HtoH, PtoP, Default), host memory, sync first. */
json_t *gp_doc_transfers(struct gp_doc *d, const struct gp_process *p)
{
	json_t *arr = gp_doc_arr_new(d);

	for (unsigned dir = 0; dir < GP_DIR_MAX; dir++) {
		for (unsigned hm = 0; hm < GP_HM_MAX; hm++) {
			for (int sync = 1; sync >= 0; sync--) {
				const struct gp_xfer_row *row = &p->xfer[dir][hm][sync];

				if (!row->calls)
					continue;

				json_t *o = gp_doc_obj_new(d);

				gp_doc_put(d, o, "direction", gp_j_str(gp_dir_name(dir)));
				gp_doc_put(d, o, "host_memory", gp_j_str(gp_hostmem_name(hm)));
				gp_doc_put(d, o, "sync", json_boolean(sync));
				gp_doc_put(d, o, "calls", gp_j_u64(row->calls));
				gp_doc_put(d, o, "bytes", gp_j_u64(row->bytes));
				gp_doc_put(d, o, "min_bytes", gp_j_u64(row->min_bytes));
				gp_doc_put(d, o, "max_bytes", gp_j_u64(row->max_bytes));
				gp_doc_put(d, o, "total_ns", gp_j_u64(row->total_ns));
				gp_doc_put(d, o, "bandwidth_bytes_per_s", bandwidth(row, sync));
				gp_doc_put(d, o, "size_histogram",
					   gp_doc_size_histogram(d, row->size_hist));
				gp_doc_push(d, arr, o);
			}
		}
	}
	return arr;
}

json_t *gp_doc_memsets(struct gp_doc *d, const struct gp_process *p)
{
	json_t *arr = gp_doc_arr_new(d);

	for (int sync = 1; sync >= 0; sync--) {
		const struct gp_memset_row *row = &p->memsets[sync];

		if (!row->calls)
			continue;

		json_t *o = gp_doc_obj_new(d);

		gp_doc_put(d, o, "sync", json_boolean(sync));
		gp_doc_put(d, o, "calls", gp_j_u64(row->calls));
		gp_doc_put(d, o, "bytes", gp_j_u64(row->bytes));
		gp_doc_put(d, o, "total_ns", gp_j_u64(row->total_ns));
		gp_doc_push(d, arr, o);
	}
	return arr;
}
