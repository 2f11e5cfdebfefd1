/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_doc_memory.c — the memory section of a process in the report
 * document: device totals and per-device rows, pinned host memory, and the
 * allocations still live at the end: leaks when the process exited, "live
 * at end" when it was still running.
 */
#include <stdlib.h>

#include "report/report_builders.h"

static void put_counts(struct gp_doc *d, json_t *o, const struct gp_mem_counts *mc)
{
	gp_doc_put(d, o, "alloc_calls", gp_j_u64(mc->alloc_calls));
	gp_doc_put(d, o, "free_calls", gp_j_u64(mc->free_calls));
	gp_doc_put(d, o, "alloc_bytes", gp_j_u64(mc->alloc_bytes));
	gp_doc_put(d, o, "freed_bytes", gp_j_u64(mc->freed_bytes));
	gp_doc_put(d, o, "peak_bytes", gp_j_u64(mc->peak_bytes));
	gp_doc_put(d, o, "live_bytes", gp_j_u64(mc->live_bytes));
}

static json_t *devices(struct gp_doc *d, const struct gp_memory *mem)
{
	json_t *arr = gp_doc_arr_new(d);

	for (size_t i = 0; i < mem->ndevices; i++) {
		const struct gp_mem_counts *mc = &mem->devices[i];

		if (!mc->alloc_calls && !mc->free_calls)
			continue;

		json_t *o = gp_doc_obj_new(d);

		gp_doc_put(d, o, "device", gp_j_s64((__s64)i - 1));
		put_counts(d, o, mc);
		gp_doc_push(d, arr, o);
	}
	return arr;
}

static json_t *pinned_host(struct gp_doc *d, const struct gp_memory *mem)
{
	json_t *o = gp_doc_obj_new(d);

	put_counts(d, o, &mem->pinned);
	gp_doc_put(d, o, "untracked_frees", gp_j_u64(mem->pinned_untracked_frees));
	gp_doc_put(d, o, "register_calls", gp_j_u64(mem->register_calls));
	gp_doc_put(d, o, "unregister_calls", gp_j_u64(mem->unregister_calls));
	gp_doc_put(d, o, "registered_bytes", gp_j_u64(mem->registered_bytes));
	gp_doc_put(d, o, "unregistered_bytes", gp_j_u64(mem->unregistered_bytes));
	gp_doc_put(d, o, "registered_live_bytes", gp_j_u64(mem->registered_live_bytes));
	gp_doc_put(d, o, "untracked_unregisters", gp_j_u64(mem->untracked_unregisters));
	return o;
}

/* Largest first (so the capped list keeps the biggest), then by address. */
static int cmp_alloc(const void *a, const void *b)
{
	const struct gp_alloc *x = *(const struct gp_alloc *const *)a;
	const struct gp_alloc *y = *(const struct gp_alloc *const *)b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return (x->ptr > y->ptr) - (x->ptr < y->ptr);
}

static json_t *alloc_row(struct gp_doc *d, const struct gp_alloc *a)
{
	json_t *o = gp_doc_obj_new(d);

	gp_doc_put(d, o, "ptr", gp_j_hex(a->ptr));
	gp_doc_put(d, o, "bytes", gp_j_u64(a->bytes));
	gp_doc_put(d, o, "kind", gp_j_str(gp_alloc_kind_name(a->kind)));
	gp_doc_put(d, o, "device", gp_j_s64(a->device));
	gp_doc_put(d, o, "api", gp_j_str(gp_apis[a->api].symbol));
	gp_doc_put(d, o, "tid", gp_j_u64(a->tid));
	gp_doc_put(d, o, "ts_mono_ns", gp_j_u64(a->ts_ns));
	return o;
}

/* Puts <name>[] (capped) and <name>_total {count, bytes}; empty unless listed is true. */
static void put_live(struct gp_doc *d, json_t *mem, const char *name, const char *total_name,
		     const struct gp_alloc **live, size_t n, bool listed)
{
	json_t *arr = gp_doc_arr_new(d), *total = gp_doc_obj_new(d);
	__u64 bytes = 0;

	if (!listed)
		n = 0;
	for (size_t i = 0; i < n; i++) {
		bytes += live[i]->bytes;
		if (i < GP_REPORT_LEAKS_MAX)
			gp_doc_push(d, arr, alloc_row(d, live[i]));
	}
	gp_doc_put(d, total, "count", gp_j_u64(n));
	gp_doc_put(d, total, "bytes", gp_j_u64(bytes));
	gp_doc_put(d, mem, name, arr);
	gp_doc_put(d, mem, total_name, total);
}

/* CUDA virtual memory management: physical allocations (in the totals above) and mappings. */
static json_t *vmm(struct gp_doc *d, const struct gp_memory *mem)
{
	json_t *o = gp_doc_obj_new(d);

	gp_doc_put(d, o, "create_calls", gp_j_u64(mem->vmm.alloc_calls));
	gp_doc_put(d, o, "release_calls", gp_j_u64(mem->vmm.free_calls));
	gp_doc_put(d, o, "created_bytes", gp_j_u64(mem->vmm.alloc_bytes));
	gp_doc_put(d, o, "released_bytes", gp_j_u64(mem->vmm.freed_bytes));
	gp_doc_put(d, o, "peak_bytes", gp_j_u64(mem->vmm.peak_bytes));
	gp_doc_put(d, o, "live_bytes", gp_j_u64(mem->vmm.live_bytes));
	gp_doc_put(d, o, "untracked_releases", gp_j_u64(mem->vmm_untracked_releases));
	gp_doc_put(d, o, "map_calls", gp_j_u64(mem->vmm_map_calls));
	gp_doc_put(d, o, "unmap_calls", gp_j_u64(mem->vmm_unmap_calls));
	gp_doc_put(d, o, "mapped_bytes", gp_j_u64(mem->vmm_mapped_bytes));
	gp_doc_put(d, o, "unmapped_bytes", gp_j_u64(mem->vmm_unmapped_bytes));
	gp_doc_put(d, o, "mapped_live_bytes", gp_j_u64(mem->vmm_mapped_live_bytes));
	return o;
}

json_t *gp_doc_memory(struct gp_doc *d, const struct gp_process *p)
{
	const struct gp_memory *mem = &p->mem;
	json_t *o = gp_doc_obj_new(d);
	const struct gp_alloc **live = NULL;
	size_t nlive = 0;

	put_counts(d, o, &mem->total);
	gp_doc_put(d, o, "untracked_frees", gp_j_u64(mem->untracked_frees));
	gp_doc_put(d, o, "stale_evictions", gp_j_u64(mem->stale_evictions));
	gp_doc_put(d, o, "stale_bytes", gp_j_u64(mem->stale_bytes));
	gp_doc_put(d, o, "managed_alloc_calls", gp_j_u64(mem->managed_alloc_calls));
	gp_doc_put(d, o, "managed_alloc_bytes", gp_j_u64(mem->managed_alloc_bytes));
	gp_doc_put(d, o, "devices", devices(d, mem));
	gp_doc_put(d, o, "pinned_host", pinned_host(d, mem));
	gp_doc_put(d, o, "vmm", vmm(d, mem));

	if (gp_memory_live(p, &live, &nlive))
		d->failed = true;
	if (nlive)
		qsort(live, nlive, sizeof(*live), cmp_alloc);
	put_live(d, o, "leaks", "leaks_total", live, nlive, p->exited);
	put_live(d, o, "live_at_end", "live_at_end_total", live, nlive, !p->exited);
	free(live);
	return o;
}
