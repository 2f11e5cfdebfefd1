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
 */
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"

static void name_handle(struct gp_process *p, __u64 handle, const char *name)
{
	char *old = gp_u64map_get(&p->fnames, handle);
	char *dup;

	if (!handle || !name || !name[0] || (old && !strcmp(old, name)))
		return;
	dup = strdup(name);
	if (!dup || gp_u64map_put(&p->fnames, handle, dup)) {
		free(dup);
		return;
	}
	free(old); /* a handle value reused after an unload */
	p->functions_named++;
}

const char *gp_driver_function_name(const struct gp_process *p, __u64 handle)
{
	return gp_u64map_get(&p->fnames, handle);
}

void gp_driver_handles(struct gp_model *m, struct gp_process *p, const struct gp_api_call *c, const char *ext,
		       __u32 ext_len)
{
	bool out = !c->ret && (c->hdr.flags & GP_EVF_OUT_VALID);
	char name[GP_EXT_DATA_MAX + 1];

	(void)m;
	if (c->ret)
		return;
	switch (gp_apis[c->api].shape) {
	case GP_SHAPE_MODULE_LOAD:
		if (out)
			p->modules_loaded++;
		return;
	case GP_SHAPE_MODULE_UNLOAD:
		p->modules_unloaded++;
		return;
	case GP_SHAPE_GET_FUNCTION:
		if (!out || !ext || !ext_len)
			return;
		memcpy(name, ext, ext_len);
		name[ext_len] = '\0'; /* the BPF side read it with its NUL, unless cut */
		name_handle(p, c->out, name);
		return;
	case GP_SHAPE_KERNEL_GET_FUNCTION: /* (CUfunction *out, CUkernel kernel) */
		if (out)
			name_handle(p, c->out, gp_u64map_get(&p->fnames, c->args[1]));
		return;
	default:
		return;
	}
}

static void free_str(void *v)
{
	free(v);
}

void gp_driver_release(struct gp_process *p)
{
	gp_u64map_clear(&p->fnames, free_str);
	gp_u64map_clear(&p->mem.vmm_handles, free);
}

/* Physical allocations count as device memory of their device; mapped ranges classify copies. */
void gp_driver_vmm(struct gp_process *p, const struct gp_api_call *c)
{
	struct gp_memory *mem = &p->mem;
	struct gp_vmm_handle *h;

	if (c->ret)
		return;
	switch (gp_apis[c->api].shape) {
	case GP_SHAPE_VMM_CREATE: /* (handle *out, size, prop, flags); slots 6..7 = *prop */
		if (!(c->hdr.flags & GP_EVF_OUT_VALID)) {
			return;
		}
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
		gp_memory_vmm(p, h->bytes, h->device, true);
		return;
	case GP_SHAPE_VMM_RELEASE:
		h = gp_u64map_get(&mem->vmm_handles, c->args[0]);
		if (!h || !h->bytes) {
			mem->vmm_untracked_releases++;
			mem->vmm.free_calls++;
			return;
		}
		gp_memory_vmm(p, h->bytes, h->device, false);
		h->bytes = 0; /* released: the map has no deletion */
		return;
	case GP_SHAPE_VMM_MAP: /* (ptr, size, offset, handle, flags) */
		h = gp_u64map_get(&mem->vmm_handles, c->args[3]);
		mem->vmm_map_calls++;
		mem->vmm_mapped_bytes += c->args[1];
		mem->vmm_mapped_live_bytes += c->args[1];
		gp_memory_alloc(p, c, GP_AK_MAPPED, c->args[0], c->args[1], h ? h->device : -1);
		return;
	case GP_SHAPE_VMM_UNMAP: /* (ptr, size) */
		mem->vmm_unmap_calls++;
		mem->vmm_unmapped_bytes += c->args[1];
		mem->vmm_mapped_live_bytes -= c->args[1] < mem->vmm_mapped_live_bytes ? c->args[1]
											: mem->vmm_mapped_live_bytes;
		gp_memory_free(p, GP_AK_MAPPED, c->args[0]);
		return;
	default:
		return;
	}
}
