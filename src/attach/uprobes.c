/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* uprobes.c — attach/detach the generic API probe pairs (see uprobes.h). */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach/uprobe_multi.h"
#include "attach/uprobes.h"
#include "log.h"

void gp_uprobes_init(struct gp_uprobes *u, struct bpf_program *enter_prog,
		     struct bpf_program *exit_prog, bool multi)
{
	memset(u, 0, sizeof(*u));
	u->enter_prog = enter_prog;
	u->exit_prog = exit_prog;
	u->multi = multi;
}

static bool offset_probed(const struct gp_uprobes *u, size_t from, __u64 offset)
{
	for (size_t i = from; i < u->n; i++)
		if (u->v[i].offset == offset)
			return true;
	return false;
}

static int reserve(void **v, size_t *cap, size_t need, size_t size)
{
	size_t nc;
	void *nv;

	if (need <= *cap)
		return 0;
	nc = *cap ? *cap : 64;
	while (nc < need)
		nc *= 2;
	nv = realloc(*v, nc * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = nc;
	return 0;
}

bool gp_uprobes_aggregatable(enum gp_api_id api)
{
	if (api <= GP_API_INVALID || api >= GP_API_MAX || gp_apis[api].family == GP_FAM_NCCL)
		return false; /* NCCL: communicators and bytes per collective need each call */
	if (api == GP_API_CUDA_STREAM_DESTROY || api == GP_API_CUDA_EVENT_DESTROY)
		return false; /* rare, and they close what a per-call create opened */
	switch (gp_apis[api].shape) {
	case GP_SHAPE_NONE:
	case GP_SHAPE_LAUNCH:
	case GP_SHAPE_LAUNCH_EXC:
	case GP_SHAPE_CU_LAUNCH:
	case GP_SHAPE_CU_LAUNCH_EX:
	case GP_SHAPE_GRAPH_LAUNCH:
	case GP_SHAPE_STREAM:
	case GP_SHAPE_STREAM_WAIT_EVENT:
	case GP_SHAPE_EVENT_RECORD:
	case GP_SHAPE_EVENT:
		return true;
	default:
		return false;
	}
}

static __u64 probe_cookie(const struct gp_uprobes *u, const struct gp_probe *p)
{
	unsigned flags = gp_api_cookie_flags(p->api);
	__u64 agg = 0;

	if (u->stacks && gp_api_wants_stack(p->api))
		flags |= GP_CK_USTACK;
	/* the session never asks for both: a stack is a per-call record */
	if (u->aggregate && !(flags & GP_CK_USTACK) && gp_uprobes_aggregatable(p->api))
		agg = GP_COOKIE_AGG;
	return GP_COOKIE(p->api, p->idx, flags) | agg;
}

/* Records a probe for every traced function of family in elf (nothing attached yet). */
static int collect_probes(struct gp_uprobes *u, pid_t pid, const char *display_path,
			  const struct gp_elf_syms *elf, enum gp_family family)
{
	size_t first = u->n;

	for (int api = GP_API_INVALID + 1; api < GP_API_MAX; api++) {
		const struct gp_api_info *info = &gp_apis[api];
		const struct gp_elf_sym *sym;
		struct gp_probe *p;
		__u64 offset;

		if (info->family != family || !(sym = gp_elf_syms_find(elf, info->symbol)))
			continue;
		if (gp_elf_vaddr_to_offset(elf, sym->addr, &offset)) {
			gp_warn("attach %s:%s: address 0x%llx is in no loadable segment", display_path,
				info->symbol, (unsigned long long)sym->addr);
			continue;
		}
		if (offset_probed(u, first, offset))
			continue; /* an alias of a function already probed in this file */
		if (u->n >= GP_MAX_PROBES) {
			gp_err("attach %s:%s: more than %d probes", display_path, info->symbol,
			       GP_MAX_PROBES);
			return -E2BIG;
		}
		if (reserve((void **)&u->v, &u->cap, u->n + 1, sizeof(*u->v)))
			return -ENOMEM;
		p = &u->v[u->n];
		memset(p, 0, sizeof(*p));
		p->idx = (unsigned)u->n;
		p->api = api;
		p->pid = pid;
		p->offset = offset;
		p->multi_fd[0] = p->multi_fd[1] = -1;
		if (!(p->target = strdup(display_path)))
			return -ENOMEM;
		u->n++;
	}
	return 0;
}

static void forget_probes(struct gp_uprobes *u, size_t first)
{
	while (u->n > first)
		free(u->v[--u->n].target);
}

static int attach_multi(struct gp_uprobes *u, size_t first, pid_t pid, const char *attach_path)
{
	size_t cnt = u->n - first;
	__u64 *offsets = calloc(cnt, sizeof(*offsets)), *cookies = calloc(cnt, sizeof(*cookies));
	int fds[2] = { -1, -1 }, err = 0;

	if (!offsets || !cookies) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < cnt; i++) {
		offsets[i] = u->v[first + i].offset;
		cookies[i] = probe_cookie(u, &u->v[first + i]);
	}
	/* Return probes first: an entry never waits for a return that cannot come. */
	fds[1] = gp_uprobe_multi_attach(bpf_program__fd(u->exit_prog), attach_path, offsets,
					cookies, (__u32)cnt, pid, true);
	if (fds[1] < 0) {
		err = fds[1];
		goto out;
	}
	fds[0] = gp_uprobe_multi_attach(bpf_program__fd(u->enter_prog), attach_path, offsets,
					cookies, (__u32)cnt, pid, false);
	if (fds[0] < 0) {
		err = fds[0];
		close(fds[1]);
		goto out;
	}
	u->v[first].multi_fd[0] = fds[0];
	u->v[first].multi_fd[1] = fds[1];
out:
	free(offsets);
	free(cookies);
	return err;
}

static int attach_perf(struct gp_uprobes *u, size_t first, pid_t pid, const char *attach_path)
{
	for (size_t i = first; i < u->n; i++) {
		struct gp_probe *p = &u->v[i];
		LIBBPF_OPTS(bpf_uprobe_opts, ropts, .retprobe = true, .bpf_cookie = probe_cookie(u, p));
		LIBBPF_OPTS(bpf_uprobe_opts, eopts, .retprobe = false, .bpf_cookie = probe_cookie(u, p));

		p->exit = bpf_program__attach_uprobe_opts(u->exit_prog, pid ? pid : -1, attach_path,
							  (size_t)p->offset, &ropts);
		if (!p->exit)
			return -errno;
		p->enter = bpf_program__attach_uprobe_opts(u->enter_prog, pid ? pid : -1, attach_path,
							   (size_t)p->offset, &eopts);
		if (!p->enter)
			return -errno;
	}
	return 0;
}

int gp_uprobes_attach_file(struct gp_uprobes *u, pid_t pid, const char *attach_path,
			   const char *display_path, const struct gp_elf_syms *elf,
			   enum gp_family family, size_t *first_out)
{
	size_t first = u->n;
	int err = collect_probes(u, pid, display_path, elf, family);

	*first_out = first;
	if (!err && u->n > first)
		err = u->multi ? attach_multi(u, first, pid, attach_path)
			       : attach_perf(u, first, pid, attach_path);
	if (err) {
		if (pid)
			gp_err("attach %s (pid %d): %s", display_path, (int)pid, strerror(-err));
		else
			gp_err("attach %s: %s", display_path, strerror(-err));
		for (size_t i = first; i < u->n; i++) {
			bpf_link__destroy(u->v[i].enter);
			bpf_link__destroy(u->v[i].exit);
		}
		forget_probes(u, first);
		return err;
	}
	for (size_t i = first; i < u->n; i++)
		u->v[i].attached = true;
	u->nattached += u->n - first;
	return (int)(u->n - first);
}

void gp_uprobes_detach(struct gp_uprobes *u, size_t first, size_t n)
{
	for (size_t i = first; i < first + n && i < u->n; i++) {
		struct gp_probe *p = &u->v[i];

		for (int k = 0; k < 2; k++) {
			if (p->multi_fd[k] >= 0)
				close(p->multi_fd[k]);
			p->multi_fd[k] = -1;
		}
		bpf_link__destroy(p->enter);
		bpf_link__destroy(p->exit);
		p->enter = p->exit = NULL;
		if (p->attached)
			u->nattached--;
		p->attached = false;
	}
}

void gp_uprobes_detach_all(struct gp_uprobes *u)
{
	gp_uprobes_detach(u, 0, u->n);
}

void gp_uprobes_free(struct gp_uprobes *u)
{
	gp_uprobes_detach_all(u);
	forget_probes(u, 0);
	free(u->v);
	memset(u, 0, sizeof(*u));
}
