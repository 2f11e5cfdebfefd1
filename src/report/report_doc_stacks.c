/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_doc_stacks.c — the "stacks" section of a process: its symbolized
 * frames (one per distinct address) and every distinct stack with its
 * (API, operation) rows. docs/report-format.md "stacks" defines each field.
 */
#include <stdlib.h>

#include "report/report_builders.h"
#include "stack_formats/stack_paths.h"
#include "text/labels.h"

static json_t *gp_doc_frame(struct gp_doc *d, const struct gp_stack_frame *f)
{
	static const char *const sources[] = { [GP_SYM_NONE] = NULL,
					       [GP_SYM_ELF] = "elf",
					       [GP_SYM_PERF_MAP] = "perf_map",
					       [GP_SYM_PYTHON] = "python" };
	bool py = f->kind == GP_FRAME_PYTHON;
	json_t *o = gp_doc_obj_new(d);

	gp_doc_put(d, o, "kind", gp_j_str(py ? "python" : "native"));
	gp_doc_put(d, o, "address", gp_j_hex(f->addr));
	gp_doc_put(d, o, "function", f->function ? gp_j_str(f->function) : json_null());
	gp_doc_put(d, o, "symbol", f->symbol ? gp_j_str(f->symbol) : json_null());
	gp_doc_put(d, o, "offset", f->symbol ? gp_j_u64(f->sym_offset) : json_null());
	gp_doc_put(d, o, "file", f->file ? gp_j_str(f->file) : json_null());
	/* a Python frame's file is its source, not a mapping: no offset in it */
	gp_doc_put(d, o, "file_offset", f->file && !py ? gp_j_u64(f->file_offset) : json_null());
	gp_doc_put(d, o, "build_id", gp_j_str(f->build_id));
	gp_doc_put(d, o, "line", py && f->line > 0 ? json_integer(f->line) : json_null());
	gp_doc_put(d, o, "source",
		   f->source < sizeof(sources) / sizeof(sources[0]) && sources[f->source]
			   ? gp_j_str(sources[f->source])
			   : json_null());
	return o;
}

static json_t *gp_doc_op(struct gp_doc *d, const struct gp_process *p, const struct gp_stack_op *r)
{
	char label[GP_NAME_BUF + 64];
	json_t *o = gp_doc_obj_new(d);

	gp_stack_op_label(d->m, p, r, label, sizeof(label));
	gp_doc_put(d, o, "api", gp_j_str(gp_apis[r->api].symbol));
	gp_doc_put(d, o, "kind", gp_j_str(gp_op_kind_name(r->op.kind)));
	gp_doc_put(d, o, "op", gp_j_str(label));
	if (r->op.kind == GP_OP_KERNEL && r->op.kernel && r->op.kernel->name) {
		gp_doc_put(d, o, "kernel",
			   gp_j_str(r->op.kernel->name)); /* as in kernels[], to join them */
	} else {
		gp_doc_put(d, o, "kernel", json_null());
	}
	if (r->op.kind == GP_OP_COPY) {
		gp_doc_put(d, o, "direction", gp_j_str(gp_dir_name(r->op.dir)));
		gp_doc_put(d, o, "host_memory", gp_j_str(gp_hostmem_name(r->op.hostmem)));
	}
	if (r->op.kind == GP_OP_COPY || r->op.kind == GP_OP_MEMSET || r->op.kind == GP_OP_ALLOC ||
	    r->op.kind == GP_OP_COLL)
		gp_doc_put(d, o, "size_bytes", gp_j_u64(r->op.bytes));
	gp_doc_put(d, o, "calls", gp_j_u64(r->calls));
	gp_doc_put(d, o, "errors", gp_j_u64(r->errors));
	gp_doc_put(d, o, "bytes", gp_j_u64(r->bytes));
	gp_doc_put(d, o, "host_ns", gp_j_u64(r->host_ns));
	return o;
}

static const char *py_status_name(unsigned st)
{
	static const char *const names[] = { [GP_PY_NO] = NULL,
					     [GP_PY_OK] = "ok",
					     [GP_PY_NO_THREAD] = "no_thread",
					     [GP_PY_READ] = "unread",
					     [GP_PY_DEPTH] = "depth" };

	return st < sizeof(names) / sizeof(names[0]) ? names[st] : "?";
}

static json_t *gp_doc_stack(struct gp_doc *d, const struct gp_process *p, const struct gp_stack *k)
{
	json_t *o = gp_doc_obj_new(d), *frames = gp_doc_arr_new(d), *ops = gp_doc_arr_new(d);
	const char *trunc = k == p->stacks.overflow ? "table_full" : gp_stack_trunc_name(k->trunc);
	const char *py = py_status_name(k->py_status);

	if (k->frame_ids)
		for (unsigned i = 0; i < k->nsym; i++)
			gp_doc_push(d, frames, gp_j_u64(k->frame_ids[i]));
	else /* not symbolized: the native return addresses */
		for (unsigned i = 0; i < k->nframes; i++)
			gp_doc_push(d, frames, gp_j_hex(k->ips[i]));
	gp_doc_put(d, o, "frames", frames);
	gp_doc_put(d, o, "truncated", trunc ? gp_j_str(trunc) : json_null());
	gp_doc_put(d, o, "unwind_stop",
		   k->trunc == GP_TRUNC_UNWIND_TABLE
			   ? gp_j_str(gp_uw_stop_cause_name(k->unwind_detail))
			   : json_null());
	gp_doc_put(d, o, "native_frames", gp_j_u64(k->nframes));
	gp_doc_put(d, o, "frame_pointer_frames", gp_j_u64(k->frames_fp));
	gp_doc_put(d, o, "python_frames", gp_j_u64(k->npy));
	gp_doc_put(d, o, "python", py ? gp_j_str(py) : json_null());
	gp_doc_put(d, o, "python_unanchored", gp_j_u64(k->py_unanchored));
	gp_doc_put(d, o, "calls", gp_j_u64(k->calls));
	gp_doc_put(d, o, "bytes", gp_j_u64(k->bytes));
	gp_doc_put(d, o, "host_ns", gp_j_u64(k->host_ns));
	for (__u32 i = 0; i < k->nops; i++)
		gp_doc_push(d, ops, gp_doc_op(d, p, &k->ops[i]));
	gp_doc_put(d, o, "ops", ops);
	return o;
}

/* {"no_unwind_info": {"stacks": 2, "calls": 40}, ...}: the stacks that end short, by why, and their calls. */
static json_t *truncated_by(struct gp_doc *d, const struct gp_stacks *s)
{
	json_t *o = gp_doc_obj_new(d);

	for (unsigned t = GP_TRUNC_NONE + 1; t < GP_TRUNC_MAX; t++) {
		__u64 stacks = 0, calls = 0;
		json_t *c;

		for (size_t i = 0; i < s->n; i++)
			if (s->v[i]->trunc == t) {
				stacks++;
				calls += s->v[i]->calls;
			}
		if (!stacks)
			continue;
		c = gp_doc_obj_new(d);
		gp_doc_put(d, c, "stacks", gp_j_u64(stacks));
		gp_doc_put(d, c, "calls", gp_j_u64(calls));
		gp_doc_put(d, o, gp_stack_trunc_name((enum gp_stack_trunc)t), c);
	}
	return o;
}

json_t *gp_doc_stacks(struct gp_doc *d, const struct gp_process *p)
{
	const struct gp_stacks *s = &p->stacks;
	json_t *o = gp_doc_obj_new(d), *frames = gp_doc_arr_new(d), *stacks = gp_doc_arr_new(d);
	const struct gp_stack **v;
	size_t n, truncated = 0;

	v = gp_sorted_stacks(p, &n);
	if (n && !v)
		d->failed = true;
	for (size_t i = 0; i < s->n; i++)
		truncated += s->v[i]->trunc != GP_TRUNC_NONE;
	gp_doc_put(d, o, "captured", json_boolean(d->m->stacks_on));
	gp_doc_put(d, o, "distinct", gp_j_u64(s->n));
	gp_doc_put(d, o, "calls", gp_j_u64(s->calls));
	gp_doc_put(d, o, "truncated_stacks", gp_j_u64(truncated));
	gp_doc_put(d, o, "truncated_by", truncated_by(d, s));
	gp_doc_put(d, o, "python_unnamed", gp_j_u64(s->py_unnamed));
	for (size_t i = 0; i < s->nframes; i++)
		gp_doc_push(d, frames, gp_doc_frame(d, &s->frames[i]));
	gp_doc_put(d, o, "frames", frames);
	for (size_t i = 0; v && i < n; i++)
		gp_doc_push(d, stacks, gp_doc_stack(d, p, v[i]));
	gp_doc_put(d, o, "stacks", stacks);
	free(v);
	return o;
}
