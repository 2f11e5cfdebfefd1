/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * memory.c — device, managed and pinned host allocations of one process:
 * live ranges by address (for frees, transfer classification and leaks),
 * alloc/free counters and live/peak bytes per device and in total, and the
 * handlers of the shapes that allocate, free and register (shapes.h). CUDA
 * VMM physical allocations (cuMemCreate) count as device memory of their
 * device; the ranges they are mapped at (cuMemMap) classify copies.
 */
#include <errno.h>
#include <stdlib.h>

#include "model/model_internal.h"

const char *gp_alloc_kind_name(enum gp_alloc_kind k)
{
	switch (k) {
	case GP_AK_DEVICE:
		return "device";
	case GP_AK_MANAGED:
		return "managed";
	case GP_AK_PINNED:
		return "pinned";
	case GP_AK_REGISTERED:
		return "registered";
	case GP_AK_MAPPED:
		return "vmm_mapped";
	}
	return "unknown";
}

static void free_alloc(struct gp_range *r)
{
	free(r); /* struct gp_alloc begins with its struct gp_range */
}

void gp_memory_release(struct gp_memory *mem)
{
	gp_ranges_clear(&mem->device_ranges, free_alloc);
	gp_ranges_clear(&mem->host_ranges, free_alloc);
	free(mem->devices);
	mem->devices = NULL;
	mem->ndevices = 0;
}

const struct gp_mem_counts *gp_memory_device(const struct gp_memory *mem, int device)
{
	size_t i = (size_t)(device + 1);

	return device >= -1 && i < mem->ndevices ? &mem->devices[i] : NULL;
}

/* Counters of a device, created on first use; devices past GP_DEVICE_MAX share "not observed". */
static struct gp_mem_counts *device_counts(struct gp_memory *mem, __s32 device)
{
	if (device < -1 || device >= GP_DEVICE_MAX)
		device = -1;

	size_t want = (size_t)device + 2;

	if (want > mem->ndevices) {
		struct gp_mem_counts *d = realloc(mem->devices, want * sizeof(*d));

		if (!d)
			return NULL;
		for (size_t i = mem->ndevices; i < want; i++)
			d[i] = (struct gp_mem_counts){ 0 };
		mem->devices = d;
		mem->ndevices = want;
	}
	return &mem->devices[device + 1];
}

static void counts_alloc(struct gp_mem_counts *mc, __u64 bytes)
{
	if (!mc)
		return;
	mc->alloc_calls++;
	mc->alloc_bytes += bytes;
	mc->live_bytes += bytes;
	if (mc->live_bytes > mc->peak_bytes)
		mc->peak_bytes = mc->live_bytes;
}

/* by_call: released by a free call we saw (else found stale: its free was missed). */
static void counts_release(struct gp_mem_counts *mc, __u64 bytes, bool by_call)
{
	if (!mc)
		return;
	if (by_call) {
		mc->free_calls++;
		mc->freed_bytes += bytes;
	}
	mc->live_bytes -= bytes < mc->live_bytes ? bytes : mc->live_bytes;
}

/* Device, managed and pinned memory allocated by a call that is not stream-ordered (a pool's). */
static bool blocking_alloc(enum gp_alloc_kind kind, enum gp_api_id api)
{
	return (kind == GP_AK_DEVICE || kind == GP_AK_MANAGED || kind == GP_AK_PINNED) &&
	       !(gp_apis[api].attr & GP_A_ASYNC);
}

/* Takes a live allocation out of the counters. */
static void account_release(struct gp_memory *mem, const struct gp_alloc *a, bool by_call)
{
	if (blocking_alloc(a->kind, a->api) && mem->blocking_live_allocs)
		mem->blocking_live_allocs--;
	switch (a->kind) {
	case GP_AK_DEVICE:
	case GP_AK_MANAGED:
		counts_release(&mem->total, a->bytes, by_call);
		counts_release(device_counts(mem, a->device), a->bytes, by_call);
		break;
	case GP_AK_PINNED:
		counts_release(&mem->pinned, a->bytes, by_call);
		break;
	case GP_AK_REGISTERED:
		if (by_call) {
			mem->unregister_calls++;
			mem->unregistered_bytes += a->bytes;
		}
		mem->registered_live_bytes -= a->bytes;
		break;
	case GP_AK_MAPPED: /* the memory is its handle's: counted by gp_memory_vmm() */
		break;
	}
}

void gp_memory_vmm(struct gp_process *p, __u64 bytes, __s32 device, bool create)
{
	struct gp_memory *mem = &p->mem;

	if (create) {
		counts_alloc(&mem->vmm, bytes);
		counts_alloc(&mem->total, bytes);
		counts_alloc(device_counts(mem, device), bytes);
	} else {
		counts_release(&mem->vmm, bytes, true);
		counts_release(&mem->total, bytes, true);
		counts_release(device_counts(mem, device), bytes, true);
	}
}

static void evict_stale(struct gp_range *r, void *ctx)
{
	struct gp_memory *mem = ctx;

	/* released so that live bytes do not grow with every missed free */
	account_release(mem, (const struct gp_alloc *)r, false);
	mem->stale_evictions++;
	mem->stale_bytes += ((const struct gp_alloc *)r)->bytes;
	free_alloc(r);
}

int gp_memory_alloc(struct gp_process *p, const struct gp_api_call *c, enum gp_alloc_kind kind,
		    __u64 ptr, __u64 bytes, __s32 device)
{
	struct gp_memory *mem = &p->mem;
	struct gp_alloc *a = calloc(1, sizeof(*a));
	bool host = kind == GP_AK_PINNED || kind == GP_AK_REGISTERED;

	if (!a)
		return -ENOMEM;
	a->ptr = ptr;
	a->bytes = bytes;
	a->ts_ns = c->hdr.ts_ns;
	a->device = device;
	a->tid = c->hdr.tid;
	a->api = c->api;
	a->kind = kind;

	int err = gp_ranges_insert(host ? &mem->host_ranges : &mem->device_ranges, &a->r, ptr,
				   bytes, evict_stale, mem);

	if (err) {
		free(a);
		return err;
	}
	if (blocking_alloc(kind, c->api) && ++mem->blocking_live_allocs > mem->blocking_peak_allocs)
		mem->blocking_peak_allocs = mem->blocking_live_allocs;
	switch (kind) {
	case GP_AK_MANAGED:
		mem->managed_alloc_calls++;
		mem->managed_alloc_bytes += bytes;
		/* managed memory counts as device memory */
		__attribute__((fallthrough));
	case GP_AK_DEVICE:
		counts_alloc(&mem->total, bytes);
		counts_alloc(device_counts(mem, device), bytes);
		break;
	case GP_AK_PINNED:
		counts_alloc(&mem->pinned, bytes);
		break;
	case GP_AK_REGISTERED:
		mem->register_calls++;
		mem->registered_bytes += bytes;
		mem->registered_live_bytes += bytes;
		break;
	case GP_AK_MAPPED:
		break;
	}
	return 0;
}

void gp_memory_free(struct gp_process *p, enum gp_alloc_kind kind, __u64 ptr)
{
	struct gp_memory *mem = &p->mem;
	bool host = kind == GP_AK_PINNED || kind == GP_AK_REGISTERED;
	struct gp_range_set *set = host ? &mem->host_ranges : &mem->device_ranges;
	struct gp_range *r = gp_ranges_find(set, ptr);
	struct gp_alloc *a = (struct gp_alloc *)r;

	/* cudaFreeHost frees only allocations, cudaHostUnregister only registrations, cuMemUnmap mappings */
	if (a && a->r.start == ptr && (a->kind == GP_AK_REGISTERED) == (kind == GP_AK_REGISTERED) &&
	    (a->kind == GP_AK_MAPPED) == (kind == GP_AK_MAPPED)) {
		gp_ranges_remove(set, ptr);
		account_release(mem, a, true);
		free_alloc(r);
		return;
	}
	switch (kind) {
	case GP_AK_DEVICE:
	case GP_AK_MANAGED:
		mem->untracked_frees++;
		mem->total.free_calls++;
		break;
	case GP_AK_PINNED:
		mem->pinned_untracked_frees++;
		mem->pinned.free_calls++;
		break;
	case GP_AK_REGISTERED:
		mem->untracked_unregisters++;
		mem->unregister_calls++;
		break;
	case GP_AK_MAPPED:
		break;
	}
}

/* The device cudaSetDevice made current on tid (-1: none seen). */
static __s32 thread_device(struct gp_process *p, __u32 tid)
{
	const struct gp_thread *t = gp_u64map_get(&p->threads, tid);

	return t ? t->device : -1;
}

/* What an API allocates or frees, by its attributes. */
static enum gp_alloc_kind api_alloc_kind(unsigned attr)
{
	if (attr & GP_A_UNREGISTER)
		return GP_AK_REGISTERED;
	if (attr & GP_A_MEM_PINNED)
		return GP_AK_PINNED;
	return (attr & GP_A_MEM_MANAGED) ? GP_AK_MANAGED : GP_AK_DEVICE;
}

void gp_shape_alloc(struct gp_shape_call *x)
{
	const struct gp_api_call *c = x->c;
	enum gp_alloc_kind kind = api_alloc_kind(gp_apis[c->api].attr);

	*x->op = (struct gp_op){ .kind = GP_OP_ALLOC, .alloc_kind = kind, .bytes = c->args[1] };
	if (c->ret) /* a failed allocation changes nothing */
		return;
	if (!(c->hdr.flags & GP_EVF_OUT_VALID)) {
		gp_model_drop_add(x->m, "alloc_out_unread", 1);
		return;
	}
	if (!c->out) /* size 0 may return NULL: nothing to track */
		return;
	gp_memory_alloc(x->p, c, kind, c->out, c->args[1], thread_device(x->p, c->hdr.tid));
}

void gp_shape_host_register(struct gp_shape_call *x)
{
	const struct gp_api_call *c = x->c;

	*x->op = (struct gp_op){ .kind = GP_OP_ALLOC,
				 .alloc_kind = GP_AK_REGISTERED,
				 .bytes = c->args[1] };
	if (c->ret)
		return;
	gp_memory_alloc(x->p, c, GP_AK_REGISTERED, c->args[0], c->args[1],
			thread_device(x->p, c->hdr.tid));
}

void gp_shape_free(struct gp_shape_call *x)
{
	const struct gp_api_call *c = x->c;
	unsigned attr = gp_apis[c->api].attr;
	enum gp_alloc_kind kind = api_alloc_kind(attr);
	/* cudaFree frees device and managed memory alike: "device" names both */
	bool device = kind == GP_AK_MANAGED && (attr & GP_A_MEM_DEVICE);

	*x->op = (struct gp_op){ .kind = GP_OP_FREE, .alloc_kind = device ? GP_AK_DEVICE : kind };
	if (c->ret) /* a failed free changes nothing */
		return;
	if (!c->args[0]) /* cudaFree(NULL) is a no-op (often used to create the context) */
		return;
	gp_memory_free(x->p, kind, c->args[0]);
}

struct live_ctx {
	const struct gp_alloc **out;
	size_t n;
};

static void collect_live(const struct gp_range *r, void *ctx)
{
	struct live_ctx *lc = ctx;
	const struct gp_alloc *a = (const struct gp_alloc *)r;

	/* a registration is not memory the process owns; a mapped range is its handle's */
	if (a->kind != GP_AK_REGISTERED && a->kind != GP_AK_MAPPED)
		lc->out[lc->n++] = a;
}

int gp_memory_live(const struct gp_process *p, const struct gp_alloc ***out, size_t *n)
{
	size_t cap = p->mem.device_ranges.count + p->mem.host_ranges.count;
	struct live_ctx lc = { NULL, 0 };

	*out = NULL;
	*n = 0;
	if (!cap)
		return 0;
	lc.out = malloc(cap * sizeof(*lc.out));
	if (!lc.out)
		return -ENOMEM;
	gp_ranges_walk(&p->mem.device_ranges, collect_live, &lc);
	gp_ranges_walk(&p->mem.host_ranges, collect_live, &lc);
	if (!lc.n) { /* only registrations and mappings: nothing for the caller to free */
		free(lc.out);
		return 0;
	}
	*out = lc.out;
	*n = lc.n;
	return 0;
}
