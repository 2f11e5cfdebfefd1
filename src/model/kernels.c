/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kernels.c — kernel and graph launches of one process. A launch site is a
 * distinct (func, ret_addr); the resolver names each site once, and sites
 * that resolve to the same demangled name share one kernel row. An nvcc 13
 * kernel handle seen in __cudaGetKernel is named by its host function. Unresolved sites
 * each get their own row with no name (never an address posing as a name).
 * Grid/block/smem come from the x86-64 ABI layout documented in api.h.
 * Driver launches (cuLaunchKernel & co.) pass a CUfunction / CUkernel
 * handle instead, named by the call that created it (driver.c). Each
 * launch shape has its handler here (shapes.h), which decodes its layout.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "model/model_internal.h"

static __u64 site_hash(__u64 func, __u64 ret_addr)
{
	return func * 0x9e3779b97f4a7c15ULL ^ ret_addr;
}

static void site_chain_free(void *v)
{
	for (struct gp_ksite *s = v, *next; s; s = next) {
		next = s->next;
		free(s);
	}
}

void gp_kernels_release(struct gp_process *p)
{
	for (size_t i = 0; i < p->nkernels; i++) {
		free(p->kernels[i]->name);
		free(p->kernels[i]->mangled);
		free(p->kernels[i]);
	}
	free(p->kernels);
	p->kernels = NULL;
	p->nkernels = p->kernels_cap = 0;
	gp_u64map_clear(&p->writer->ksites, site_chain_free);
	gp_u64map_clear(&p->writer->khandles, NULL);
	gp_u64map_clear(&p->writer->kregs, free);
	gp_u64map_clear(&p->graphs, free);
}

static struct gp_kernel *kernel_new(struct gp_process *p, __u64 func, __u64 ret_addr,
				    const char *name, const char *mangled)
{
	struct gp_kernel *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->func = func;
	k->ret_addr = ret_addr;
	if (name) {
		k->name = strdup(name);
		k->mangled = strdup(mangled);
		if (!k->name || !k->mangled)
			goto err;
	}
	if (GP_ARRAY_GROW(p->kernels, p->kernels_cap, p->nkernels + 1, 16))
		goto err;
	p->kernels[p->nkernels++] = k;
	return k;
err:
	free(k->name);
	free(k->mangled);
	free(k);
	return NULL;
}

void gp_shape_get_kernel(struct gp_shape_call *x)
{
	const struct gp_api_call *c = x->c;

	/* __cudaGetKernel(&handle, hostFun): from now on launches pass handle */
	if (!c->ret && (c->hdr.flags & GP_EVF_OUT_VALID) && c->out && c->args[1])
		gp_u64map_put(&x->p->writer->khandles, c->out, (void *)(uintptr_t)c->args[1]);
}

void gp_shape_register_function(struct gp_shape_call *x)
{
	struct gp_process *p = x->p;
	const struct gp_api_call *c = x->c;
	const char *ext = x->ext;
	__u32 ext_len = x->ext_len;
	char *name, *old;

	/* __cudaRegisterFunction(handle, hostFun, deviceFun, deviceName, ...): a NUL-ended name */
	if (!ext || !ext_len || ext[ext_len - 1] || !ext[0] || !c->args[1])
		return;
	name = strdup(ext);
	if (!name)
		return;
	old = gp_u64map_get(&p->writer->kregs, c->args[1]);
	if (gp_u64map_put(&p->writer->kregs, c->args[1], name)) {
		free(name);
		return;
	}
	free(old);
}

/* The row of a demangled name, or a new one. */
static struct gp_kernel *kernel_named(struct gp_process *p, __u64 func, __u64 ret_addr,
				      const char *name, const char *mangled)
{
	for (size_t i = 0; i < p->nkernels; i++) {
		struct gp_kernel *k = p->kernels[i];

		if (k->name && !strcmp(k->name, name))
			return k;
	}
	return kernel_new(p, func, ret_addr, name, mangled);
}

/* The kernel of a site the model has not seen: ask the resolver, merge by symbol. */
static struct gp_kernel *kernel_for_new_site(struct gp_model *m, struct gp_process *p, __u64 func,
					     __u64 ret_addr)
{
	const struct gp_model_writer *mw = m->writer;
	char *name = mw->name_buf, *mangled = mw->mangled_buf;
	void *host_fun = gp_u64map_get(&p->writer->khandles, func);
	__u64 fn = host_fun ? (__u64)(uintptr_t)host_fun : func;
	int rc = -ENOENT;

	if (m->has_resolver) {
		name[0] = mangled[0] = '\0';
		/* a known nvcc handle: name the host function it stands for */
		rc = m->resolver.kernel_name(m->resolver.ctx, p->pid, fn, ret_addr, mw->cur_ips,
					     mw->cur_nips, name, GP_NAME_BUF, mangled, GP_NAME_BUF);
		name[GP_NAME_BUF - 1] = mangled[GP_NAME_BUF - 1] = '\0';
		if (!rc && !name[0]) /* a name must be something */
			rc = -ENOENT;
	}
	if (rc) {
		/* no symbol (a stripped program): the name it registered at start-up */
		const char *reg = gp_u64map_get(&p->writer->kregs, fn);

		if (!reg)
			return kernel_new(p, func, ret_addr, NULL, NULL);
		snprintf(mangled, GP_NAME_BUF, "%s", reg[0] == '_' && reg[1] == 'Z' ? reg : "");
		if (m->has_resolver && m->resolver.demangle)
			m->resolver.demangle(reg, name, GP_NAME_BUF);
		else
			snprintf(name, GP_NAME_BUF, "%s", reg);
	}

	/*
	 * One row per demangled name: the stub path and the host-function path
	 * can spell one kernel's symbol differently (internal linkage adds an
	 * 'L': _ZN2mlL5scale... vs _ZN2ml5scale...); a driver launch of the
	 * same kernel joins the row too.
	 */
	return kernel_named(p, func, ret_addr, name, mangled);
}

/*
 * A driver launch names a CUfunction or CUkernel handle: the name recorded
 * when the handle was created (driver.c), or the one row of handles the
 * session never saw created.
 */
static struct gp_kernel *kernel_of_handle(struct gp_model *m, struct gp_process *p, __u64 func,
					  __u64 ret_addr)
{
	const char *mangled = gp_driver_function_name(p, func);

	if (mangled) {
		char *name = m->writer->name_buf;

		if (m->resolver.demangle)
			m->resolver.demangle(mangled, name, GP_NAME_BUF);
		else
			snprintf(name, GP_NAME_BUF, "%s", mangled);
		return kernel_named(p, func, ret_addr, name, strcmp(name, mangled) ? mangled : "");
	}
	if (!p->unknown_handles) {
		p->unknown_handles = kernel_new(p, func, ret_addr, NULL, NULL);
		if (p->unknown_handles)
			p->unknown_handles->handle_before_attach = true;
	}
	return p->unknown_handles;
}

static struct gp_kernel *kernel_of_site(struct gp_model *m, struct gp_process *p, __u64 func,
					__u64 ret_addr)
{
	__u64 h = site_hash(func, ret_addr);
	struct gp_ksite *head = gp_u64map_get(&p->writer->ksites, h);

	for (struct gp_ksite *s = head; s; s = s->next)
		if (s->func == func && s->ret_addr == ret_addr)
			return s->kernel;

	struct gp_ksite *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->func = func;
	s->ret_addr = ret_addr;
	s->kernel = kernel_for_new_site(m, p, func, ret_addr);
	s->next = head;
	if (!s->kernel || gp_u64map_put(&p->writer->ksites, h, s)) {
		free(s);
		return NULL;
	}
	s->kernel->sites++;
	return s->kernel;
}

static void count_config(struct gp_kernel *k, const struct gp_kconfig *cfg)
{
	for (unsigned i = 0; i < k->nconfigs; i++) {
		struct gp_kconfig *c = &k->configs[i];

		if (!memcmp(c->grid, cfg->grid, sizeof(c->grid)) &&
		    !memcmp(c->block, cfg->block, sizeof(c->block)) && c->smem == cfg->smem) {
			c->launches++;
			return;
		}
	}
	if (k->nconfigs == GP_KERNEL_CONFIGS_MAX) {
		k->config_other_launches++;
		return;
	}
	k->configs[k->nconfigs] = *cfg;
	k->configs[k->nconfigs++].launches = 1;
}

/* dim3 packed two per register: low 32 bits first. */
static __u32 lo32(__u64 v)
{
	return (__u32)v;
}

static __u32 hi32(__u64 v)
{
	return (__u32)(v >> 32);
}

void gp_shape_graph_launch(struct gp_shape_call *x)
{
	struct gp_process *p = x->p;
	const struct gp_api_call *c = x->c;
	struct gp_graph *g = gp_u64map_get(&p->graphs, c->args[0]);

	x->op->kind = GP_OP_GRAPH;
	if (!g) {
		g = calloc(1, sizeof(*g));
		if (!g)
			return;
		g->exec = c->args[0];
		if (gp_u64map_put(&p->graphs, g->exec, g)) {
			free(g);
			return;
		}
	}
	g->calls++;
	g->host_ns += c->dur_ns;
	if (c->ret)
		g->errors++;
	else
		g->launches++;
}

/* A launch of func with cfg, as its shape's handler decoded them: its kernel row, for the call's op. */
static void launch(struct gp_shape_call *x, __u64 func, struct gp_kconfig cfg, bool driver)
{
	const struct gp_api_call *c = x->c;
	struct gp_kernel *k = driver ? kernel_of_handle(x->m, x->p, func, c->ret_addr)
				     : kernel_of_site(x->m, x->p, func, c->ret_addr);

	x->op->kind = GP_OP_KERNEL;
	x->op->kernel = k;
	if (!k)
		return;
	k->calls++;
	k->host_ns += c->dur_ns;
	if (c->ret) { /* nothing was enqueued: no launch, no configuration */
		k->errors++;
		return;
	}
	k->launches++;
	if (driver)
		k->driver_launches++;
	/* LAUNCH and CU_LAUNCH read part of the config from the stack, the _EX shapes all of it from memory */
	if (c->hdr.flags & GP_EVF_ARGS_PARTIAL)
		k->config_unread_launches++;
	else
		count_config(k, &cfg);
}

/* A cudaLaunchConfig_t or CUlaunchConfig in slots 3..7: gridDim, blockDim, 3 x u32 each, then smem. */
static struct gp_kconfig config_struct(const __u64 *a, __u64 smem)
{
	return (struct gp_kconfig){ .grid = { lo32(a[3]), hi32(a[3]), lo32(a[4]) },
				    .block = { hi32(a[4]), lo32(a[5]), hi32(a[5]) },
				    .smem = smem };
}

/* (func, grid.xy, grid.z, block.xy, block.z, args, [sp+8] smem) */
void gp_shape_launch(struct gp_shape_call *x)
{
	const __u64 *a = x->c->args;
	struct gp_kconfig cfg = { .grid = { lo32(a[1]), hi32(a[1]), lo32(a[2]) },
				  .block = { lo32(a[3]), hi32(a[3]), lo32(a[4]) },
				  .smem = a[6] };

	launch(x, a[0], cfg, false);
}

/* (cfg, func, args) */
void gp_shape_launch_exc(struct gp_shape_call *x)
{
	launch(x, x->c->args[1], config_struct(x->c->args, x->c->args[6]), false);
}

/* (f, gx, gy, gz, bx, by|bz<<32, smem, stream): see api.h */
void gp_shape_cu_launch(struct gp_shape_call *x)
{
	const __u64 *a = x->c->args;
	struct gp_kconfig cfg = { .grid = { lo32(a[1]), lo32(a[2]), lo32(a[3]) },
				  .block = { lo32(a[4]), lo32(a[5]), hi32(a[5]) },
				  .smem = lo32(a[6]) };

	launch(x, a[0], cfg, true);
}

/* (cfg, f, ...): smem an unsigned int */
void gp_shape_cu_launch_ex(struct gp_shape_call *x)
{
	launch(x, x->c->args[1], config_struct(x->c->args, lo32(x->c->args[6])), true);
}

const char *gp_kernel_unresolved_reason(const struct gp_process *p, const struct gp_kernel *k)
{
	if (k->name)
		return NULL;
	if (k->handle_before_attach) /* a driver launch of a handle no traced call created */
		return p->traced_from_start ? "unknown (handle not created by a traced call)"
					    : "unknown (created before attach)";
	return "unknown (no symbol at the launch site)";
}
