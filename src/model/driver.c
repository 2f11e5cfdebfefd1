/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * driver.c — what only the CUDA driver API has: module and library loads,
 * the names of CUfunction / CUkernel handles (so that cuLaunchKernel of a
 * handle names its kernel), and virtual memory management (cuMemCreate /
 * cuMemRelease physical allocations, cuMemMap / cuMemUnmap address ranges).
 *
 * Names come from the calls that create handles, read at return: the name
 * argument of cuModuleGetFunction / cuLibraryGetKernel (in the record's
 * extension), and cuKernelGetFunction, which gives a CUkernel's CUfunction.
 * A handle created before gpuprobed attached has no name: kernels.c says so.
 * The handlers of these shapes (shapes.h) are here; those of handles see
 * the calls made inside another traced call too (the runtime's own).
 */
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"

static void name_handle(struct gp_process *p, __u64 handle, const char *name)
{
	char *old = gp_u64map_get(&p->writer->fnames, handle);
	char *dup;

	if (!handle || !name || !name[0] || (old && !strcmp(old, name)))
		return;
	dup = strdup(name);
	if (!dup || gp_u64map_put(&p->writer->fnames, handle, dup)) {
		free(dup);
		return;
	}
	free(old); /* a handle value reused after an unload */
	p->functions_named++;
}

const char *gp_driver_function_name(const struct gp_process *p, __u64 handle)
{
	return gp_u64map_get(&p->writer->fnames, handle);
}

/* Whether the out pointer of a successful call was read. */
static bool out_read(const struct gp_api_call *c)
{
	return !c->ret && (c->hdr.flags & GP_EVF_OUT_VALID);
}

void gp_shape_module_load(struct gp_shape_call *x)
{
	if (out_read(x->c))
		x->p->modules_loaded++;
}

void gp_shape_module_unload(struct gp_shape_call *x)
{
	if (!x->c->ret)
		x->p->modules_unloaded++;
}

void gp_shape_get_function(struct gp_shape_call *x)
{
	char name[GP_EXT_DATA_MAX + 1];

	if (!out_read(x->c) || !x->ext || !x->ext_len)
		return;
	memcpy(name, x->ext, x->ext_len);
	name[x->ext_len] = '\0'; /* the BPF side read it with its NUL, unless cut */
	name_handle(x->p, x->c->out, name);
}

/* (CUfunction *out, CUkernel kernel) */
void gp_shape_kernel_get_function(struct gp_shape_call *x)
{
	if (out_read(x->c))
		name_handle(x->p, x->c->out, gp_u64map_get(&x->p->writer->fnames, x->c->args[1]));
}

static void free_str(void *v)
{
	free(v);
}

void gp_driver_release(struct gp_process *p)
{
	gp_u64map_clear(&p->writer->fnames, free_str);
	gp_u64map_clear(&p->mem.vmm_handles, free);
}

/*
 * The VMM shapes: physical allocations count as device memory of their
 * device (and as an allocation or a free in the call's op); mapped ranges
 * classify copies.
 */

/* (handle *out, size, prop, flags); slots 6..7 = *prop */
void gp_shape_vmm_create(struct gp_shape_call *x)
{
	const struct gp_api_call *c = x->c;
	struct gp_memory *mem = &x->p->mem;
	struct gp_vmm_handle *h;

	*x->op = (struct gp_op){ .kind = GP_OP_ALLOC,
				 .alloc_kind = GP_AK_DEVICE,
				 .bytes = c->args[1] };
	if (c->ret || !(c->hdr.flags & GP_EVF_OUT_VALID))
		return;
	h = calloc(1, sizeof(*h));
	if (!h)
		return;
	h->bytes = c->args[1];
	/* CUmemAllocationProp: type, requestedHandleTypes, location.type, location.id (bytes 12..15) */
	h->device = (c->hdr.flags & GP_EVF_ARGS_PARTIAL) ? -1 : (__s32)(c->args[7] >> 32);
	if (gp_u64map_put(&mem->vmm_handles, c->out, h)) {
		free(h);
		return;
	}
	gp_memory_vmm(x->p, h->bytes, h->device, true);
}

void gp_shape_vmm_release(struct gp_shape_call *x)
{
	struct gp_memory *mem = &x->p->mem;
	struct gp_vmm_handle *h;

	*x->op = (struct gp_op){ .kind = GP_OP_FREE, .alloc_kind = GP_AK_DEVICE };
	if (x->c->ret)
		return;
	h = gp_u64map_get(&mem->vmm_handles, x->c->args[0]);
	if (!h || !h->bytes) {
		mem->vmm_untracked_releases++;
		mem->vmm.free_calls++;
		return;
	}
	gp_memory_vmm(x->p, h->bytes, h->device, false);
	h->bytes = 0; /* released: the map has no deletion */
}

/* (ptr, size, offset, handle, flags) */
void gp_shape_vmm_map(struct gp_shape_call *x)
{
	const struct gp_api_call *c = x->c;
	struct gp_memory *mem = &x->p->mem;
	struct gp_vmm_handle *h;

	if (c->ret)
		return;
	h = gp_u64map_get(&mem->vmm_handles, c->args[3]);
	mem->vmm_map_calls++;
	mem->vmm_mapped_bytes += c->args[1];
	mem->vmm_mapped_live_bytes += c->args[1];
	gp_memory_alloc(x->p, c, GP_AK_MAPPED, c->args[0], c->args[1], h ? h->device : -1);
}

/* (ptr, size) */
void gp_shape_vmm_unmap(struct gp_shape_call *x)
{
	const struct gp_api_call *c = x->c;
	struct gp_memory *mem = &x->p->mem;

	if (c->ret)
		return;
	mem->vmm_unmap_calls++;
	mem->vmm_unmapped_bytes += c->args[1];
	mem->vmm_mapped_live_bytes -=
		c->args[1] < mem->vmm_mapped_live_bytes ? c->args[1] : mem->vmm_mapped_live_bytes;
	gp_memory_free(x->p, GP_AK_MAPPED, c->args[0]);
}
