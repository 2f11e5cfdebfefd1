/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_doc_memory.c — the memory section of a process in the report
 * document: device totals and per-device rows, pinned host memory, and the
 * allocations still live at the end: leaks when the process exited, "live
 * at end" when it was still running.
 */
#include <stdlib.h>

#include "output/report_doc.h"

static void put_counts(struct doc *d, json_t *o, const struct gp_mem_counts *mc)
{
	put(d, o, "alloc_calls", j_u64(mc->alloc_calls));
	put(d, o, "free_calls", j_u64(mc->free_calls));
	put(d, o, "alloc_bytes", j_u64(mc->alloc_bytes));
	put(d, o, "freed_bytes", j_u64(mc->freed_bytes));
	put(d, o, "peak_bytes", j_u64(mc->peak_bytes));
	put(d, o, "live_bytes", j_u64(mc->live_bytes));
}

static json_t *devices(struct doc *d, const struct gp_memory *mem)
{
	json_t *arr = arr_new(d);

	for (size_t i = 0; i < mem->ndevices; i++) {
		const struct gp_mem_counts *mc = &mem->devices[i];

		if (!mc->alloc_calls && !mc->free_calls)
			continue;

		json_t *o = obj_new(d);

		put(d, o, "device", j_s64((__s64)i - 1));
		put_counts(d, o, mc);
		push(d, arr, o);
	}
	return arr;
}

static json_t *pinned_host(struct doc *d, const struct gp_memory *mem)
{
	json_t *o = obj_new(d);

	put_counts(d, o, &mem->pinned);
	put(d, o, "untracked_frees", j_u64(mem->pinned_untracked_frees));
	put(d, o, "register_calls", j_u64(mem->register_calls));
	put(d, o, "unregister_calls", j_u64(mem->unregister_calls));
	put(d, o, "registered_bytes", j_u64(mem->registered_bytes));
	put(d, o, "unregistered_bytes", j_u64(mem->unregistered_bytes));
	put(d, o, "registered_live_bytes", j_u64(mem->registered_live_bytes));
	put(d, o, "untracked_unregisters", j_u64(mem->untracked_unregisters));
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

static json_t *alloc_row(struct doc *d, const struct gp_alloc *a)
{
	json_t *o = obj_new(d);

	put(d, o, "ptr", j_hex(a->ptr));
	put(d, o, "bytes", j_u64(a->bytes));
	put(d, o, "kind", j_str(gp_alloc_kind_name(a->kind)));
	put(d, o, "device", j_s64(a->device));
	put(d, o, "api", j_str(gp_apis[a->api].symbol));
	put(d, o, "tid", j_u64(a->tid));
	put(d, o, "ts_mono_ns", j_u64(a->ts_ns));
	return o;
}

/* Puts <name>[] (capped) and <name>_total {count, bytes}; empty unless listed is true. */
static void put_live(struct doc *d, json_t *mem, const char *name, const char *total_name,
		     const struct gp_alloc **live, size_t n, bool listed)
{
	json_t *arr = arr_new(d), *total = obj_new(d);
	__u64 bytes = 0;

	if (!listed)
		n = 0;
	for (size_t i = 0; i < n; i++) {
		bytes += live[i]->bytes;
		if (i < GP_REPORT_LEAKS_MAX)
			push(d, arr, alloc_row(d, live[i]));
	}
	put(d, total, "count", j_u64(n));
	put(d, total, "bytes", j_u64(bytes));
	put(d, mem, name, arr);
	put(d, mem, total_name, total);
}

/* CUDA virtual memory management: physical allocations (in the totals above) and mappings. */
static json_t *vmm(struct doc *d, const struct gp_memory *mem)
{
	json_t *o = obj_new(d);

	put(d, o, "create_calls", j_u64(mem->vmm.alloc_calls));
	put(d, o, "release_calls", j_u64(mem->vmm.free_calls));
	put(d, o, "created_bytes", j_u64(mem->vmm.alloc_bytes));
	put(d, o, "released_bytes", j_u64(mem->vmm.freed_bytes));
	put(d, o, "peak_bytes", j_u64(mem->vmm.peak_bytes));
	put(d, o, "live_bytes", j_u64(mem->vmm.live_bytes));
	put(d, o, "untracked_releases", j_u64(mem->vmm_untracked_releases));
	put(d, o, "map_calls", j_u64(mem->vmm_map_calls));
	put(d, o, "unmap_calls", j_u64(mem->vmm_unmap_calls));
	put(d, o, "mapped_bytes", j_u64(mem->vmm_mapped_bytes));
	put(d, o, "unmapped_bytes", j_u64(mem->vmm_unmapped_bytes));
	put(d, o, "mapped_live_bytes", j_u64(mem->vmm_mapped_live_bytes));
	return o;
}

json_t *doc_memory(struct doc *d, const struct gp_process *p)
{
	const struct gp_memory *mem = &p->mem;
	json_t *o = obj_new(d);
	const struct gp_alloc **live = NULL;
	size_t nlive = 0;

	put_counts(d, o, &mem->total);
	put(d, o, "untracked_frees", j_u64(mem->untracked_frees));
	put(d, o, "stale_evictions", j_u64(mem->stale_evictions));
	put(d, o, "stale_bytes", j_u64(mem->stale_bytes));
	put(d, o, "managed_alloc_calls", j_u64(mem->managed_alloc_calls));
	put(d, o, "managed_alloc_bytes", j_u64(mem->managed_alloc_bytes));
	put(d, o, "devices", devices(d, mem));
	put(d, o, "pinned_host", pinned_host(d, mem));
	put(d, o, "vmm", vmm(d, mem));

	if (gp_memory_live(p, &live, &nlive))
		d->failed = true;
	if (nlive)
		qsort(live, nlive, sizeof(*live), cmp_alloc);
	put_live(d, o, "leaks", "leaks_total", live, nlive, p->exited);
	put_live(d, o, "live_at_end", "live_at_end_total", live, nlive, !p->exited);
	free(live);
	return o;
}
