/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* capture_resolver.c — recording and answering resolvers (capture_resolver.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture_resolver.h"
#include "model/model_ops.h"
#include "model/u64map.h"
#include "symbolize/symbolizer.h"

/* ---- live ---------------------------------------------------------------- */

/* The answer as an operation of the capture (model_ops.h); a payload that cannot be made is counted lost. */
#define RECORD(rr, NAME, name, ...)                                                               \
	do {                                                                                      \
		const struct gp_op_##name v_ = { __VA_ARGS__ };                                   \
		unsigned char small_[1024], *buf_ = small_;                                       \
		size_t n_ = gp_op_pack_##name(small_, sizeof(small_), &v_);                       \
                                                                                                  \
		if (n_ > sizeof(small_) && (buf_ = malloc(n_)))                                   \
			gp_op_pack_##name(buf_, n_, &v_);                                         \
		(rr)->record((rr)->record_ctx, GP_MOP_##NAME, buf_, n_); /* NULL: counted lost */ \
		if (buf_ != small_)                                                               \
			free(buf_);                                                               \
	} while (0)

static int rec_kernel_name(void *ctx, __u32 tgid, __u64 func, __u64 ret_addr, const __u64 *stack,
			   unsigned nstack, char *name, size_t name_len, char *mangled,
			   size_t mangled_len)
{
	struct gp_recording_resolver *rr = ctx;
	int rc = rr->inner.kernel_name(rr->inner.ctx, tgid, func, ret_addr, stack, nstack, name,
				       name_len, mangled, mangled_len);

	name[name_len - 1] = mangled[mangled_len - 1] = '\0';
	RECORD(rr, KERNEL_NAME, kernel_name, .tgid = tgid, .func = func, .ret_addr = ret_addr,
	       .rc = rc, .name = name, .mangled = mangled);
	return rc;
}

static void rec_stack_seen(void *ctx, __u32 tgid, const __u64 *ips, unsigned n)
{
	struct gp_recording_resolver *rr = ctx;

	if (rr->inner.stack_seen)
		rr->inner.stack_seen(rr->inner.ctx, tgid, ips, n);
}

static int rec_symbolize(void *ctx, __u32 tgid, __u64 addr, struct gp_frame_sym *out)
{
	struct gp_recording_resolver *rr = ctx;
	int rc = rr->inner.symbolize(rr->inner.ctx, tgid, addr, out);

	RECORD(rr, SYMBOL, symbol, .tgid = tgid, .addr = addr, .rc = rc, .function = out->function,
	       .symbol = out->symbol, .file = out->file, .build_id = out->build_id,
	       .sym_offset = out->sym_offset, .file_offset = out->file_offset,
	       .source = out->source);
	return rc;
}

static int rec_py_frame(void *ctx, __u32 tgid, __u64 code, __u64 word, struct gp_py_frame_sym *out)
{
	struct gp_recording_resolver *rr = ctx;
	int rc = rr->inner.py_frame(rr->inner.ctx, tgid, code, word, out);

	RECORD(rr, PY_FRAME, py_frame, .tgid = tgid, .code = code, .word = word, .rc = rc,
	       .qualname = rc ? NULL : out->qualname, .file = rc ? NULL : out->file,
	       .line = rc ? 0 : out->line);
	return rc;
}

struct gp_resolver gp_recording_resolver(struct gp_recording_resolver *rr)
{
	return (struct gp_resolver){
		.ctx = rr,
		.kernel_name = rr->inner.kernel_name ? rec_kernel_name : NULL,
		.demangle = rr->inner.demangle,
		.demangle_short = rr->inner.demangle_short,
		.stack_seen = rec_stack_seen,
		.symbolize = rr->inner.symbolize ? rec_symbolize : NULL,
		.py_frame = rr->inner.py_frame ? rec_py_frame : NULL,
	};
}

/* ---- loading ------------------------------------------------------------- */

/* One recorded answer: the payload kept whole, decoded (its strings point into it). */
struct answer {
	unsigned op;
	void *payload;
	union {
		struct gp_op_kernel_name kernel_name;
		struct gp_op_symbol symbol;
		struct gp_op_py_frame py_frame;
	};
	struct answer *next; /* same hash */
};

/*
 * The question an answer answers: (tgid, a, b) — a kernel's (func, return
 * address), a symbol's address, a Python frame's (code, word).
 */
static void question(const struct answer *x, __u64 *tgid, __u64 *a, __u64 *b)
{
	if (x->op == GP_MOP_SYMBOL) {
		*tgid = x->symbol.tgid;
		*a = x->symbol.addr;
		*b = 0;
	} else if (x->op == GP_MOP_PY_FRAME) {
		*tgid = x->py_frame.tgid;
		*a = x->py_frame.code;
		*b = x->py_frame.word;
	} else {
		*tgid = x->kernel_name.tgid;
		*a = x->kernel_name.func;
		*b = x->kernel_name.ret_addr;
	}
}

struct gp_answers {
	struct gp_u64map by_key; /* hash of (op, tgid, a, b) -> struct answer chain */
};

static __u64 key_of(unsigned op, __u64 tgid, __u64 a, __u64 b)
{
	__u64 h = 0x9e3779b97f4a7c15ULL * (op + 1);

	h = (h ^ tgid) * 0xff51afd7ed558ccdULL;
	h = (h ^ a) * 0xc4ceb9fe1a85ec53ULL;
	h = (h ^ b) * 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

static bool same(const struct answer *x, unsigned op, __u64 tgid, __u64 a, __u64 b)
{
	__u64 t, xa, xb;

	question(x, &t, &xa, &xb);
	return x->op == op && t == tgid && xa == a && xb == b;
}

static struct answer *find(struct gp_answers *as, unsigned op, __u64 tgid, __u64 a, __u64 b)
{
	for (struct answer *x = gp_u64map_get(&as->by_key, key_of(op, tgid, a, b)); x; x = x->next)
		if (same(x, op, tgid, a, b))
			return x;
	return NULL;
}

struct gp_answers *gp_answers_new(void)
{
	return calloc(1, sizeof(struct gp_answers));
}

static void chain_free(void *v)
{
	for (struct answer *x = v, *next; x; x = next) {
		next = x->next;
		free(x->payload);
		free(x);
	}
}

void gp_answers_free(struct gp_answers *as)
{
	if (!as)
		return;
	gp_u64map_clear(&as->by_key, chain_free);
	free(as);
}

int gp_answers_add(struct gp_answers *as, unsigned op, const void *data, size_t len)
{
	struct answer *x = calloc(1, sizeof(*x));
	__u64 t, a, b, key;
	int err = -ENOMEM;

	if (!x || !(x->payload = malloc(len ? len : 1)))
		goto err;
	memcpy(x->payload, data, len);
	x->op = op;
	err = -EINVAL;
	if (op == GP_MOP_KERNEL_NAME ? gp_op_unpack_kernel_name(x->payload, len, &x->kernel_name)
	    : op == GP_MOP_PY_FRAME
		    ? gp_op_unpack_py_frame(x->payload, len, &x->py_frame)
		    : op != GP_MOP_SYMBOL || gp_op_unpack_symbol(x->payload, len, &x->symbol))
		goto err;
	question(x, &t, &a, &b);
	key = key_of(op, t, a, b);

	/* a later answer to the same question (a pid reused) replaces the earlier one */
	struct answer *head = gp_u64map_get(&as->by_key, key), **pp = &head;

	while (*pp && !same(*pp, op, t, a, b))
		pp = &(*pp)->next;
	if (*pp) {
		struct answer *old = *pp;

		x->next = old->next;
		*pp = x; /* head itself, or a link inside the chain the map holds */
		old->next = NULL;
		chain_free(old);
		return head == x ? gp_u64map_put(&as->by_key, key, head)
				 : 0; /* replacing a value: no growth */
	}
	x->next = head;
	err = gp_u64map_put(&as->by_key, key, x);
	if (!err)
		return 0;
err:
	if (x)
		free(x->payload);
	free(x);
	return err;
}

static void copy_str(char *dst, size_t len, const char *s)
{
	snprintf(dst, len, "%s", s ? s : "");
}

static int ans_kernel_name(void *ctx, __u32 tgid, __u64 func, __u64 ret_addr, const __u64 *stack,
			   unsigned nstack, char *name, size_t name_len, char *mangled,
			   size_t mangled_len)
{
	struct answer *x = find(ctx, GP_MOP_KERNEL_NAME, tgid, func, ret_addr);

	if (!x)
		return -ENOENT;
	copy_str(name, name_len, x->kernel_name.name);
	copy_str(mangled, mangled_len, x->kernel_name.mangled);
	return x->kernel_name.rc;
}

static int ans_symbolize(void *ctx, __u32 tgid, __u64 addr, struct gp_frame_sym *out)
{
	struct answer *x = find(ctx, GP_MOP_SYMBOL, tgid, addr, 0);

	if (!x)
		return -ENOENT;
	*out = (struct gp_frame_sym){
		.function = x->symbol.function,
		.symbol = x->symbol.symbol,
		.file = x->symbol.file,
		.build_id = x->symbol.build_id,
		.sym_offset = x->symbol.sym_offset,
		.file_offset = x->symbol.file_offset,
		.source = x->symbol.source <= GP_SYM_PERF_MAP ? (enum gp_sym_source)x->symbol.source
							      : GP_SYM_NONE,
	};
	return x->symbol.rc;
}

static int ans_py_frame(void *ctx, __u32 tgid, __u64 code, __u64 word, struct gp_py_frame_sym *out)
{
	struct answer *x = find(ctx, GP_MOP_PY_FRAME, tgid, code, word);

	if (!x)
		return -ENOENT;
	*out = (struct gp_py_frame_sym){ .qualname = x->py_frame.qualname,
					 .file = x->py_frame.file,
					 .line = x->py_frame.line };
	return x->py_frame.rc;
}

struct gp_resolver gp_answers_resolver(struct gp_answers *as)
{
	return (struct gp_resolver){
		.ctx = as,
		.kernel_name = ans_kernel_name,
		.demangle = gp_demangle,
		.demangle_short = gp_demangle_short,
		.symbolize = ans_symbolize,
		.py_frame = ans_py_frame,
	};
}
