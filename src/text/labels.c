/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * labels.c — the names reports give to sizes, kernels, stack rows and
 * frames (labels.h), the same in every sink: folded stacks, flame graph,
 * speedscope, report.json, report.md; and a process's container.
 */
#include <stdio.h>
#include <string.h>

#include "text/labels.h"

/*
 * "4 MiB", "1536 KiB", "1000 B", "1.5 KiB": the largest unit that divides
 * the size exactly; else one decimal in the largest unit it reaches.
 */
void gp_size_label(__u64 bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int top = 0;

	while (top < 4 && bytes >= 1ULL << (10 * (top + 1)))
		top++;
	for (int u = top; u >= 0; u--) {
		if (bytes % (1ULL << (10 * u)) == 0) {
			if (u == 0 && top > 0)
				break; /* no unit divides it: a decimal reads better than the raw count */
			snprintf(buf, len, "%llu %s", (unsigned long long)(bytes >> (10 * u)),
				 units[u]);
			return;
		}
	}
	snprintf(buf, len, "%.1f %s", (double)bytes / (double)(1ULL << (10 * top)), units[top]);
}

void gp_kernel_short_name(const struct gp_model *m, const struct gp_process *p,
			  const struct gp_kernel *k, char *buf, size_t len)
{
	if (!k) {
		snprintf(buf, len, "(unresolved)");
		return;
	}
	if (!k->name) {
		const char *why = gp_kernel_unresolved_reason(p, k);

		snprintf(buf, len, "(%s)", why ? why : "unresolved");
		return;
	}
	if (k->mangled && k->mangled[0] && m->has_resolver && m->resolver.demangle_short)
		m->resolver.demangle_short(k->mangled, buf, len);
	else
		snprintf(buf, len, "%s", k->name);
}

bool gp_in_container(const struct gp_process *p)
{
	return p->place.id || p->place.pod_uid;
}

void gp_container_label(const struct gp_process *p, char *buf, size_t len)
{
	if (p->place.name)
		snprintf(buf, len, "%s", p->place.name);
	else if (p->place.id)
		snprintf(buf, len, "%.12s", p->place.id);
	else if (len)
		buf[0] = '\0';
}

void gp_stack_op_label(const struct gp_model *m, const struct gp_process *p,
		       const struct gp_stack_op *r, char *buf, size_t len)
{
	char size[32], name[GP_NAME_BUF];
	const struct gp_op *op = &r->op;

	gp_size_label(op->bytes, size, sizeof(size));
	switch (op->kind) {
	case GP_OP_KERNEL:
		gp_kernel_short_name(m, p, op->kernel, name, sizeof(name));
		snprintf(buf, len, "[kernel] %s", name);
		break;
	case GP_OP_GRAPH:
		snprintf(buf, len, "[graph launch]");
		break;
	case GP_OP_COPY:
		snprintf(buf, len, "[%s %s %s]", gp_dir_name(op->dir), size,
			 gp_hostmem_name(op->hostmem));
		break;
	case GP_OP_MEMSET:
		snprintf(buf, len, "[memset %s]", size);
		break;
	case GP_OP_ALLOC:
		if (op->alloc_kind == GP_AK_REGISTERED)
			snprintf(buf, len, "[register %s]", size);
		else
			snprintf(buf, len, "[alloc %s %s]", gp_alloc_kind_name(op->alloc_kind),
				 size);
		break;
	case GP_OP_FREE:
		snprintf(buf, len,
			 op->alloc_kind == GP_AK_REGISTERED ? "[unregister]" : "[free %s]",
			 gp_alloc_kind_name(op->alloc_kind));
		break;
	case GP_OP_COLL:
		snprintf(buf, len, "[%s %s %s]", gp_nccl_op_name(op->nccl_op),
			 gp_nccl_dtype_name(op->dtype), size);
		break;
	case GP_OP_SYNC:
		snprintf(buf, len, "[sync]");
		break;
	default:
		snprintf(buf, len, "[%s]", r->errors == r->calls && r->calls ? "failed" : "call");
		break;
	}
	for (char *c = buf; *c; c++)
		if (*c == ';' || *c == '\n')
			*c = *c == ';' ? ':' : ' ';
}

/* "Model.forward (train.py:13)", as py-spy names a frame; "[python 0x7f…]" when it could not be named. */
static void python_frame_label(const struct gp_stack_frame *f, char *buf, size_t len)
{
	const char *base = f->file ? strrchr(f->file, '/') : NULL;

	base = base ? base + 1 : f->file;
	if (!f->function)
		snprintf(buf, len, "[python 0x%llx]", (unsigned long long)f->addr);
	else if (base && f->line > 0)
		snprintf(buf, len, "%s (%s:%d)", f->function, base, f->line);
	else if (base)
		snprintf(buf, len, "%s (%s)", f->function, base);
	else
		snprintf(buf, len, "%s", f->function);
}

void gp_stack_frame_label(const struct gp_stack_frame *f, char *buf, size_t len)
{
	if (f->kind == GP_FRAME_PYTHON) {
		python_frame_label(f, buf, len);
	} else if (f->function) {
		snprintf(buf, len, "%s", f->function);
	} else if (f->file) {
		const char *base = strrchr(f->file, '/');

		snprintf(buf, len, "%s+0x%llx", base ? base + 1 : f->file,
			 (unsigned long long)f->file_offset);
	} else {
		snprintf(buf, len, "[unknown]");
	}
	for (char *c = buf; *c; c++)
		if (*c == ';' || *c == '\n')
			*c = *c == ';' ? ':' : ' ';
}
