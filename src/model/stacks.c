/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * stacks.c — the call stacks of GPU work, per process: every distinct user
 * stack (deduplicated by hash, compared frame by frame) with one row per
 * (API, operation) made from it — a kernel, a copy of a direction, memory
 * kind and size, an allocation, a collective — holding calls, errors, bytes
 * and host time. Addresses stay raw while records arrive; the resolver is
 * told of each new stack (so the live process's maps can be snapshotted)
 * and names the frames once, at the end (gp_model_symbolize_stacks), once
 * per distinct address.
 *
 * Bounded: at most m->writer->max_stacks distinct stacks, all processes together;
 * a call beyond goes to the process's one "[stack table full]" stack and is
 * counted in drops.stacks_over_limit, so totals stay exact.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "model/model_internal.h"
#include "model/model_ops.h"

const char *gp_op_kind_name(enum gp_op_kind k)
{
	static const char *const names[] = {
		[GP_OP_OTHER] = "other", [GP_OP_KERNEL] = "kernel",   [GP_OP_GRAPH] = "graph",
		[GP_OP_COPY] = "copy",	 [GP_OP_MEMSET] = "memset",   [GP_OP_ALLOC] = "alloc",
		[GP_OP_FREE] = "free",	 [GP_OP_COLL] = "collective", [GP_OP_SYNC] = "sync",
	};

	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "other";
}

const char *gp_stack_trunc_name(enum gp_stack_trunc t)
{
	switch (t) {
	case GP_TRUNC_DEPTH:
		return "depth";
	case GP_TRUNC_UNWIND:
		return "unwind";
	case GP_TRUNC_UNREAD:
		return "unread";
	case GP_TRUNC_NO_MAPPING:
		return "no_mapping";
	case GP_TRUNC_NO_UNWIND_INFO:
		return "no_unwind_info";
	case GP_TRUNC_UNWIND_TABLE:
		return "unwind_table";
	case GP_TRUNC_RBP_UNKNOWN:
		return "rbp_unknown";
	default:
		return NULL;
	}
}

const char *gp_uw_stop_cause_name(unsigned cause)
{
	static const char *const names[] = {
		[GP_UW_STOP_GAP] = "gap",	    [GP_UW_STOP_END] = "end",
		[GP_UW_STOP_EXPR] = "expression",   [GP_UW_STOP_CFAREG] = "cfa_register",
		[GP_UW_STOP_RA] = "return_address", [GP_UW_STOP_SIGNAL] = "signal_frame",
		[GP_UW_STOP_RANGE] = "range",	    [GP_UW_STOP_OTHER] = "other",
	};

	return cause < sizeof(names) / sizeof(names[0]) ? names[cause] : "?";
}

void gp_model_set_stacks(struct gp_model *m, bool captured, size_t max_stacks)
{
	gp_model_tap_stacks(
		m, &(struct gp_op_stacks){ .captured = captured, .max_stacks = max_stacks });
	m->stacks_on = captured;
	m->writer->max_stacks = max_stacks;
}

bool gp_model_stacks_captured(const struct gp_model *m)
{
	return m->stacks_on;
}

static __u64 stack_hash(const __u64 *ips, unsigned n, unsigned npy)
{
	__u64 h = 0x243f6a8885a308d3ULL ^ n ^ (__u64)npy << 32;

	n += 2 * npy;

	for (unsigned i = 0; i < n; i++) {
		h ^= ips[i];
		h *= 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	return h ? h : 1;
}

static struct gp_stack *stack_new(const struct gp_stack_view *v, __u64 hash, __u32 seq)
{
	size_t words = v ? v->nframes + 2 * (size_t)v->npy : 0;
	struct gp_stack *k = calloc(1, sizeof(*k) + words * sizeof(__u64));

	if (!k)
		return NULL;
	if (v && v->npy && !(k->py_ids = calloc(v->npy, sizeof(*k->py_ids)))) {
		free(k);
		return NULL;
	}
	k->hash = hash;
	k->seq = seq;
	if (!v)
		return k;
	k->nframes = (__u16)v->nframes;
	k->npy = (__u16)v->npy;
	memcpy(k->ips, v->ips, v->nframes * sizeof(__u64));
	if (v->npy)
		memcpy(k->ips + v->nframes, v->py, 2 * v->npy * sizeof(__u64));
	return k;
}

static bool same_stack(const struct gp_stack *k, const struct gp_stack_view *v)
{
	return k->nframes == v->nframes && k->npy == v->npy &&
	       !memcmp(k->ips, v->ips, v->nframes * sizeof(__u64)) &&
	       (!v->npy || !memcmp(k->ips + v->nframes, v->py, 2 * v->npy * sizeof(__u64)));
}

/* Why a walk that stopped short stopped, from the record. */
static void set_trunc(struct gp_stack *k, const struct gp_stack_view *v)
{
	static const __u8 by_stop[GP_STOP_MAX] = {
		[GP_STOP_END] = GP_TRUNC_NONE,
		[GP_STOP_DEPTH] = GP_TRUNC_DEPTH,
		[GP_STOP_NO_MAPPING] = GP_TRUNC_NO_MAPPING,
		[GP_STOP_NO_TABLE] = GP_TRUNC_NO_UNWIND_INFO,
		[GP_STOP_TABLE] = GP_TRUNC_UNWIND_TABLE,
		[GP_STOP_RBP_UNKNOWN] = GP_TRUNC_RBP_UNKNOWN,
		[GP_STOP_READ] = GP_TRUNC_UNREAD,
		[GP_STOP_FP_END] = GP_TRUNC_NONE, /* by the last frame */
	};

	k->trunc = v->stop < GP_STOP_MAX ? by_stop[v->stop] : GP_TRUNC_UNWIND;
	k->unwind_detail = v->detail;
	k->py_status = v->py_status;
	k->frames_fp = v->frames_fp;
	k->fp_end = v->stop == GP_STOP_FP_END;
}

static void stack_free(struct gp_stack *k)
{
	if (!k)
		return;
	free(k->ops);
	free(k->frame_ids);
	free(k->py_ids);
	free(k);
}

static void name_python_frames(struct gp_model *m, struct gp_process *p, struct gp_stack *k);

static int push_stack(struct gp_stacks *s, struct gp_stack *k)
{
	if (GP_ARRAY_GROW(s->v, s->cap, s->n + 1, 64))
		return -ENOMEM;
	s->v[s->n++] = k;
	return 0;
}

/* The stack with these frames: found, created, or the overflow stack when the table is full. */
static struct gp_stack *stack_get(struct gp_model *m, struct gp_process *p,
				  const struct gp_stack_view *v, bool *is_new)
{
	struct gp_stacks *s = &p->stacks;
	__u64 h = stack_hash(v->ips, v->nframes, v->npy);
	struct gp_stack *head = gp_u64map_get(&s->by_hash, h), *k;

	*is_new = false;
	for (k = head; k; k = k->next)
		if (same_stack(k, v))
			return k;
	if (m->writer->nstacks >= m->writer->max_stacks) {
		gp_model_drop_add(m, "stacks_over_limit", 1);
		if (!s->overflow)
			s->overflow = stack_new(NULL, 0, UINT32_MAX);
		return s->overflow;
	}
	k = stack_new(v, h, (__u32)s->n);
	if (!k)
		return NULL;
	k->next = head;
	if (push_stack(s, k)) {
		stack_free(k);
		return NULL;
	}
	if (gp_u64map_put(&s->by_hash, h, k)) {
		s->n--;
		stack_free(k);
		return NULL;
	}
	m->writer->nstacks++;
	*is_new = true;
	return k;
}

static bool same_op(const struct gp_stack_op *r, __u16 api, const struct gp_op *op)
{
	if (r->api != api || r->op.kind != op->kind)
		return false;
	switch (op->kind) {
	case GP_OP_KERNEL:
		return r->op.kernel == op->kernel;
	case GP_OP_COPY:
		return r->op.dir == op->dir && r->op.hostmem == op->hostmem &&
		       r->op.bytes == op->bytes;
	case GP_OP_MEMSET:
		return r->op.bytes == op->bytes;
	case GP_OP_ALLOC:
		return r->op.alloc_kind == op->alloc_kind && r->op.bytes == op->bytes;
	case GP_OP_FREE:
		return r->op.alloc_kind == op->alloc_kind;
	case GP_OP_COLL:
		return r->op.nccl_op == op->nccl_op && r->op.dtype == op->dtype &&
		       r->op.bytes == op->bytes;
	default:
		return true;
	}
}

static struct gp_stack_op *op_get(struct gp_stack *k, __u16 api, const struct gp_op *op)
{
	struct gp_stack_op *r;

	for (__u32 i = 0; i < k->nops; i++)
		if (same_op(&k->ops[i], api, op))
			return &k->ops[i];
	if (GP_ARRAY_GROW(k->ops, k->ops_cap, k->nops + 1, 1))
		return NULL;
	r = &k->ops[k->nops++];
	memset(r, 0, sizeof(*r));
	r->api = api;
	r->op = *op;
	return r;
}

const struct gp_stack *gp_stacks_add(struct gp_model *m, struct gp_process *p,
				     const struct gp_api_call *c, const struct gp_op *op,
				     const struct gp_stack_view *v)
{
	struct gp_stack *k;
	struct gp_stack_op *r;
	bool is_new;
	/* bytes a call moved: a failed call moved none */
	__u64 bytes = c->ret || op->kind == GP_OP_FREE ? 0 : op->bytes;

	k = stack_get(m, p, v, &is_new);
	if (!k)
		return NULL;
	if (is_new) {
		set_trunc(k, v);
		if (m->has_resolver && m->resolver.stack_seen)
			m->resolver.stack_seen(m->resolver.ctx, p->pid, k->ips, k->nframes);
		if (k->npy)
			name_python_frames(m, p, k);
	}
	p->stacks.calls++;
	k->calls++;
	k->bytes += bytes;
	k->host_ns += c->dur_ns;
	r = op_get(k, c->api, op);
	if (!r)
		return k;
	r->calls++;
	r->errors += c->ret != 0;
	r->bytes += bytes;
	r->host_ns += c->dur_ns;
	return k;
}

/* ---- symbolization --------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* Where threads start: a stack that reaches one of these was walked to its end. */
static bool is_thread_root(const struct gp_frame_sym *fs)
{
	static const char *const roots[] = { "_start",
					     "__libc_start_main",
					     "__libc_start_call_main",
					     "start_thread",
					     "clone",
					     "clone3",
					     "__clone",
					     "__clone3",
					     "thread_start" };
	const char *base;

	if (fs->symbol)
		for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
			if (!strcmp(fs->symbol, roots[i]))
				return true;
	/* The C library's own starts are local symbols, stripped from Debian's libc.so.6 */
	if (!fs->file)
		return false;
	base = strrchr(fs->file, '/');
	base = base ? base + 1 : fs->file;
	return !strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5) ||
	       !strncmp(base, "libpthread", 10);
}

/* CPython's eval loop (3.10 to 3.13; a compiler's split part "….cold" too): its activations run Python frames. */
static bool is_python_eval(const char *symbol)
{
	static const char eval[] = "_PyEval_EvalFrameDefault";

	return symbol && !strncmp(symbol, eval, sizeof(eval) - 1) &&
	       (symbol[sizeof(eval) - 1] == '\0' || symbol[sizeof(eval) - 1] == '.');
}

static void frame_release(struct gp_stack_frame *f)
{
	free(f->function);
	free(f->symbol);
	free(f->file);
	free(f->build_id);
}

/* Appends f (its strings now the table's) and indexes it under key in map (linear probing). -ENOMEM: f released. */
static long frame_push(struct gp_stacks *s, struct gp_stack_frame *f, struct gp_u64map *map,
		       __u64 key)
{
	if (!f->build_id || GP_ARRAY_GROW(s->frames, s->frames_cap, s->nframes + 1, 256))
		goto fail;
	while (gp_u64map_get(map, key))
		key++;
	if (gp_u64map_put(map, key, (void *)(uintptr_t)(s->nframes + 1)))
		goto fail;
	s->frames[s->nframes] = *f;
	return (long)s->nframes++;
fail:
	frame_release(f);
	return -ENOMEM;
}

static long frame_of(struct gp_model *m, struct gp_stacks *s, __u32 pid, __u64 addr)
{
	void *hit = gp_u64map_get(&s->frame_by_addr, addr);
	struct gp_frame_sym fs = { 0 };
	struct gp_stack_frame f;

	if (hit)
		return (long)(uintptr_t)hit - 1;
	/*
	 * Every address of a stack is a return address: the call that made the
	 * frame is the instruction before it (a call ending a function would
	 * otherwise be named after the next one). Offsets stay those of addr.
	 */
	if (m->resolver.symbolize && addr &&
	    m->resolver.symbolize(m->resolver.ctx, pid, addr - 1, &fs) == 0) {
		fs.sym_offset += 1;
		fs.file_offset += 1;
	} else if (!fs.file) {
		fs = (struct gp_frame_sym){ 0 };
	}
	f = (struct gp_stack_frame){
		.addr = addr,
		.function = dup_or_null(fs.function),
		.symbol = dup_or_null(fs.symbol),
		.file = dup_or_null(fs.file),
		.build_id = strdup(fs.build_id ? fs.build_id : ""),
		.sym_offset = fs.symbol ? fs.sym_offset : 0,
		.file_offset = fs.file ? fs.file_offset : 0,
		.kind = GP_FRAME_NATIVE,
		.source = fs.source,
		.thread_root = is_thread_root(&fs),
		.python_eval = is_python_eval(fs.symbol),
	};
	/* native addresses are user space: below 2^47, so no key of this map is ever probed past */
	return frame_push(s, &f, &s->frame_by_addr, addr);
}

static __u64 mix2(__u64 a, __u64 b)
{
	__u64 h = a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL) * 0xbf58476d1ce4e5b9ULL;

	h ^= h >> 31;
	return h ? h : 1;
}

/* The frame of (code, line), found or made from the resolver's answer ps (NULL: not named). */
static long py_frame_for(struct gp_stacks *s, __u64 code, const struct gp_py_frame_sym *ps)
{
	int line = ps ? ps->line : -1; /* an unnamed code object is one frame */
	__u64 key = mix2(code, (__u64)(__s64)line);
	struct gp_stack_frame f;
	void *hit;

	for (; (hit = gp_u64map_get(&s->py_by_key, key)); key++) {
		const struct gp_stack_frame *e = &s->frames[(uintptr_t)hit - 1];

		if (e->addr == code && e->line == line)
			return (long)(uintptr_t)hit - 1;
	}
	f = (struct gp_stack_frame){ .addr = code,
				     .line = line,
				     .kind = GP_FRAME_PYTHON,
				     .build_id = strdup(""),
				     .source = ps ? GP_SYM_PYTHON : GP_SYM_NONE };
	if (ps && ((ps->qualname && !(f.function = strdup(ps->qualname))) ||
		   (ps->file && !(f.file = strdup(ps->file))))) {
		frame_release(&f);
		return -ENOMEM;
	}
	return frame_push(s, &f, &s->py_by_key, key);
}

/*
 * A recorded Python frame (code object, second word) to its frame. Named at
 * first sight, while the process may still live: its code objects are read
 * from its memory. Each distinct (code, word) asks the resolver once.
 */
static long py_frame_of(struct gp_model *m, struct gp_stacks *s, __u32 pid, __u64 code, __u64 word)
{
	__u64 key = mix2(code, word);
	struct gp_py_frame_sym ps = { 0 };
	bool named;
	long id;
	void *hit;

	for (; (hit = gp_u64map_get(&s->py_seen_by_key, key)); key++) {
		const struct gp_py_seen *e = &s->py_seen[(uintptr_t)hit - 1];

		if (e->code == code && e->word == word)
			return e->id;
	}
	named = m->resolver.py_frame &&
		m->resolver.py_frame(m->resolver.ctx, pid, code, word, &ps) == 0;
	s->py_unnamed += !named;
	id = py_frame_for(s, code, named ? &ps : NULL);
	if (id < 0 || GP_ARRAY_GROW(s->py_seen, s->py_seen_cap, s->npy_seen + 1, 64))
		return id < 0 ? id : -ENOMEM;
	if (gp_u64map_put(&s->py_seen_by_key, key, (void *)(uintptr_t)(s->npy_seen + 1)))
		return id; /* not remembered: asked again next time */
	s->py_seen[s->npy_seen++] =
		(struct gp_py_seen){ .code = code, .word = word, .id = (__u32)id };
	return id;
}

/* A new stack's Python frames, named now. Out of memory: the stack is shown without them. */
static void name_python_frames(struct gp_model *m, struct gp_process *p, struct gp_stack *k)
{
	const __u64 *py = k->ips + k->nframes;

	for (unsigned i = 0; i < k->npy; i++) {
		long id = py_frame_of(m, &p->stacks, p->pid, py[2 * i], py[2 * i + 1]);

		if (id < 0) {
			free(k->py_ids);
			k->py_ids = NULL;
			return;
		}
		k->py_ids[i] = (__u32)id;
	}
}

/*
 * The stack as it is read, innermost first: each native frame in the eval
 * loop is replaced by the Python frames its activation ran — the next
 * recorded ones up to and including the one entered from C (GP_PYF_ENTRY);
 * an eval frame with none left stays. Python frames left over (the native
 * walk stopped before their eval frames) go at the outer end.
 */
static void merge_frames(const struct gp_stacks *s, struct gp_stack *k, const __u32 *native)
{
	const __u64 *py = k->ips + k->nframes;
	unsigned at = 0, next = 0, npy = k->py_ids ? k->npy : 0;

	for (unsigned f = 0; f < k->nframes; f++) {
		if (!s->frames[native[f]].python_eval || next == npy) {
			k->frame_ids[at++] = native[f];
			continue;
		}
		while (next < npy) {
			bool entry = GP_PYF_FLAGS(py[2 * next + 1]) & GP_PYF_ENTRY;

			k->frame_ids[at++] = k->py_ids[next++];
			if (entry)
				break;
		}
	}
	k->py_unanchored = (__u16)(npy - next);
	while (next < npy)
		k->frame_ids[at++] = k->py_ids[next++];
	k->nsym = (__u16)at;
}

static int symbolize_stack(struct gp_model *m, struct gp_process *p, struct gp_stack *k)
{
	struct gp_stacks *s = &p->stacks;
	__u32 *native = calloc(k->nframes ? k->nframes : 1, sizeof(*native));
	long id = 0;

	if (!native ||
	    !(k->frame_ids = calloc((size_t)k->nframes + k->npy + 1, sizeof(*k->frame_ids)))) {
		free(native);
		return -ENOMEM;
	}
	for (unsigned f = 0; f < k->nframes && id >= 0; f++) {
		id = frame_of(m, s, p->pid, k->ips[f]);
		native[f] = id >= 0 ? (__u32)id : 0;
	}
	if (id < 0) { /* out of memory: raw addresses only */
		free(k->frame_ids);
		k->frame_ids = NULL;
		free(native);
		return (int)id;
	}
	/*
	 * A frame-pointer chain ends at a null frame pointer: at the thread's
	 * start, or where code without frame pointers clobbered it (stopped
	 * short). A table's end row is the outermost frame itself.
	 */
	if (k->trunc == GP_TRUNC_NONE && k->fp_end && k->nframes &&
	    !s->frames[native[k->nframes - 1]].thread_root)
		k->trunc = GP_TRUNC_UNWIND;
	merge_frames(s, k, native);
	free(native);
	return 0;
}

static size_t symbolize_stacks(struct gp_model *m, size_t *nstacks)
{
	size_t frames = 0, stacks = 0;

	for (size_t i = 0; i < m->nprocs; i++) {
		struct gp_process *p = m->procs[i];
		struct gp_stacks *s = &p->stacks;

		for (size_t j = 0; j < s->n; j++)
			if (!s->v[j]->frame_ids && !symbolize_stack(m, p, s->v[j]))
				stacks++; /* out of memory: that stack's addresses stay raw */
		s->symbolized = true;
		frames += s->nframes;
	}
	if (nstacks)
		*nstacks = stacks;
	return frames;
}

void gp_stacks_release(struct gp_stacks *s)
{
	for (size_t i = 0; i < s->n; i++)
		stack_free(s->v[i]);
	stack_free(s->overflow);
	free(s->v);
	gp_u64map_clear(&s->by_hash, NULL);
	for (size_t i = 0; i < s->nframes; i++)
		frame_release(&s->frames[i]);
	free(s->frames);
	gp_u64map_clear(&s->frame_by_addr, NULL);
	gp_u64map_clear(&s->py_by_key, NULL);
	gp_u64map_clear(&s->py_seen_by_key, NULL);
	free(s->py_seen);
	memset(s, 0, sizeof(*s));
}

size_t gp_model_symbolize_stacks(struct gp_model *m, size_t *nstacks)
{
	size_t frames = symbolize_stacks(m, nstacks);

	/* after the resolver's answers, which a capture records as they are given */
	gp_model_tap_symbolize(m, &(struct gp_op_symbolize){});
	return frames;
}
