/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * model_ops.c — the encoding of model operations (model_ops.h) and the tap
 * that hands each one, as it happens, to whoever records the session.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"
#include "model/model_ops.h"

#define GP_OP_FMT_U32	       "u"
#define GP_OP_FMT_U64	       "U"
#define GP_OP_FMT_S32	       "i"
#define GP_OP_FMT_BOOL	       "b"
#define GP_OP_FMT_STR	       "s"
#define GP_OP_FMT_RAW	       "r"
#define GP_OP_FMT(kind, field) GP_OP_FMT_##kind

static const struct {
	const char *name;
	const char *fmt;
} ops[GP_MOP_MAX] = {
#define GP_OP_ROW(num, NAME, name) [GP_MOP_##NAME] = { #name, "" GP_OPF_##NAME(GP_OP_FMT) },
	GP_MODEL_OP_TABLE(GP_OP_ROW)
#undef GP_OP_ROW
};

/* ---- typed packing and unpacking, one pair per operation of the table ---- */

struct op_writer {
	unsigned char *buf;
	size_t cap, off; /* off always advances: the size needed */
};

static void w_put(struct op_writer *w, const void *src, size_t n)
{
	if (w->off + n <= w->cap && n)
		memcpy(w->buf + w->off, src, n);
	w->off += n;
}

static void w_U32(struct op_writer *w, __u32 v)
{
	w_put(w, &v, 4);
}
static void w_U64(struct op_writer *w, __u64 v)
{
	w_put(w, &v, 8);
}
static void w_S32(struct op_writer *w, __s32 v)
{
	w_U32(w, (__u32)v);
}

static void w_BOOL(struct op_writer *w, bool v)
{
	__u8 b = v ? 1 : 0;

	w_put(w, &b, 1);
}

static void w_STR(struct op_writer *w, const char *s)
{
	__u32 n = s ? (__u32)strlen(s) + 1 : 0;

	w_U32(w, n);
	w_put(w, s, n);
}

static void w_RAW(struct op_writer *w, struct gp_op_raw r)
{
	w_put(w, r.p, r.n);
}

struct op_reader {
	const unsigned char *d;
	size_t len, off;
};

static int r_U32(struct op_reader *r, __u32 *v)
{
	if (r->len - r->off < 4)
		return -EINVAL;
	memcpy(v, r->d + r->off, 4);
	r->off += 4;
	return 0;
}

static int r_U64(struct op_reader *r, __u64 *v)
{
	if (r->len - r->off < 8)
		return -EINVAL;
	memcpy(v, r->d + r->off, 8);
	r->off += 8;
	return 0;
}

static int r_S32(struct op_reader *r, __s32 *v)
{
	return r_U32(r, (__u32 *)v);
}

static int r_BOOL(struct op_reader *r, bool *v)
{
	if (r->len - r->off < 1 || r->d[r->off] > 1)
		return -EINVAL;
	*v = r->d[r->off++];
	return 0;
}

static int r_STR(struct op_reader *r, const char **v)
{
	const unsigned char *d;
	__u32 n;

	if (r_U32(r, &n) || n > r->len - r->off)
		return -EINVAL;
	d = r->d + r->off;
	/* ends with its NUL, and has no other: an inner one would cut it silently */
	if (n && (d[n - 1] || memchr(d, 0, n - 1)))
		return -EINVAL;
	*v = n ? (const char *)d : NULL;
	r->off += n;
	return 0;
}

static int r_RAW(struct op_reader *r, struct gp_op_raw *v)
{
	v->p = r->d + r->off;
	v->n = r->len - r->off;
	r->off = r->len;
	return 0;
}

#define GP_OP_PUT(kind, field) w_##kind(&w, v->field);
#define GP_OP_GET(kind, field)       \
	if (r_##kind(&r, &v->field)) \
		return -EINVAL;
/* A tap packs an operation here: every ring record with its length prefix fits. */
#define GP_TAP_BUF 2560

#define GP_OP_DEFINE(num, NAME, name)                                                                     \
	size_t gp_op_pack_##name(void *buf, size_t cap, const struct gp_op_##name *v)                     \
	{                                                                                                 \
		struct op_writer w = { .buf = buf, .cap = cap };                                          \
                                                                                                          \
		(void)v;                                                                                  \
		GP_OPF_##NAME(GP_OP_PUT) return w.off;                                                    \
	}                                                                                                 \
	int gp_op_unpack_##name(const void *data, size_t len, struct gp_op_##name *v)                     \
	{                                                                                                 \
		struct op_reader r = { .d = data, .len = len };                                           \
                                                                                                          \
		(void)v;                                                                                  \
		GP_OPF_##NAME(GP_OP_GET) return r.off == len ? 0 : -EINVAL;                               \
	}                                                                                                 \
	void gp_model_tap_##name(struct gp_model *m, const struct gp_op_##name *v)                        \
	{                                                                                                 \
		/* every ring record fits (the largest: a 127-frame, 64-Python-frame stack): no malloc */ \
		unsigned char small[GP_TAP_BUF], *buf = small;                                            \
		const struct gp_model_tap *tap = &m->writer->tap;                                         \
		size_t n;                                                                                 \
                                                                                                          \
		if (!tap->record)                                                                         \
			return;                                                                           \
		small[0] = 0; /* an operation without fields writes nothing */                            \
		n = gp_op_pack_##name(small, sizeof(small), v);                                           \
		if (n > sizeof(small) && (buf = malloc(n)))                                               \
			gp_op_pack_##name(buf, n, v);                                                     \
		tap->record(tap->ctx, GP_MOP_##NAME, buf,                                                 \
			    n); /* NULL: the recorder counts it lost */                                   \
		if (buf != small)                                                                         \
			free(buf);                                                                        \
	}
GP_MODEL_OP_TABLE(GP_OP_DEFINE)
#undef GP_OP_DEFINE

_Static_assert(sizeof(struct gp_api_call_ext) + 8 <= GP_TAP_BUF &&
		       GP_STACK_REC_SIZE(GP_STACK_MAX_FRAMES) + 8 <= GP_TAP_BUF &&
		       GP_USTACK_REC_SIZE(GP_USTACK_MAX_FRAMES, GP_PY_MAX_FRAMES) + 8 <= GP_TAP_BUF,
	       "a ring record (and its length) is packed on the stack");

/* ---- format-driven encoding, for readers that do not know an operation's type ---- */

const char *gp_model_op_format(unsigned op)
{
	return op < GP_MOP_MAX ? ops[op].fmt : NULL;
}

const char *gp_model_op_name(unsigned op)
{
	return op < GP_MOP_MAX && ops[op].name ? ops[op].name : "?";
}

/* Appends n bytes at *off when they fit; *off always advances (the size needed). */
static void put(unsigned char *buf, size_t cap, size_t *off, const void *src, size_t n)
{
	if (*off + n <= cap && n)
		memcpy(buf + *off, src, n);
	*off += n;
}

size_t gp_op_vpack(void *buf, size_t cap, const char *fmt, va_list ap)
{
	size_t off = 0;

	for (const char *f = fmt; *f; f++) {
		__u32 u32;
		__u64 u64;
		__u8 u8;
		const char *s;
		const void *p;
		size_t n;

		switch (*f) {
		case 'u':
			u32 = va_arg(ap, unsigned);
			put(buf, cap, &off, &u32, 4);
			break;
		case 'i':
			u32 = (__u32)va_arg(ap, int);
			put(buf, cap, &off, &u32, 4);
			break;
		case 'U':
			u64 = va_arg(ap, __u64);
			put(buf, cap, &off, &u64, 8);
			break;
		case 'b':
			u8 = va_arg(ap, int) ? 1 : 0;
			put(buf, cap, &off, &u8, 1);
			break;
		case 's':
			s = va_arg(ap, const char *);
			u32 = s ? (__u32)strlen(s) + 1 : 0;
			put(buf, cap, &off, &u32, 4);
			put(buf, cap, &off, s, u32);
			break;
		case 'r':
			p = va_arg(ap, const void *);
			n = va_arg(ap, size_t);
			put(buf, cap, &off, p, n);
			break;
		}
	}
	return off;
}

int gp_op_unpack(unsigned op, const void *data, size_t len, union gp_op_val vals[GP_OP_MAX_FIELDS])
{
	const char *fmt = gp_model_op_format(op);
	const unsigned char *d = data;
	size_t off = 0;
	unsigned k = 0;

	if (!fmt)
		return -EINVAL;
	for (const char *f = fmt; *f; f++, k++) {
		__u32 u32;
		__u64 u64;

		switch (*f) {
		case 'u':
		case 'i':
			if (len - off < 4)
				return -EINVAL;
			memcpy(&u32, d + off, 4);
			off += 4;
			if (*f == 'u')
				vals[k].u = u32;
			else
				vals[k].i = (__s32)u32;
			break;
		case 'U':
			if (len - off < 8)
				return -EINVAL;
			memcpy(&u64, d + off, 8);
			off += 8;
			vals[k].u = u64;
			break;
		case 'b':
			if (len - off < 1 || d[off] > 1)
				return -EINVAL;
			vals[k].u = d[off++];
			break;
		case 's':
			if (len - off < 4)
				return -EINVAL;
			memcpy(&u32, d + off, 4);
			off += 4;
			if (u32 > len - off || (u32 && d[off + u32 - 1]))
				return -EINVAL;
			vals[k].s = u32 ? (const char *)d + off : NULL;
			if (u32 &&
			    memchr(d + off, 0, u32 - 1)) /* an inner NUL would cut it silently */
				return -EINVAL;
			off += u32;
			break;
		case 'r':
			vals[k].r.p = d + off;
			vals[k].r.n = len - off;
			off = len;
			break;
		}
	}
	return off == len ? 0 : -EINVAL;
}

void gp_model_set_tap(struct gp_model *m, const struct gp_model_tap *tap)
{
	if (tap)
		m->writer->tap = *tap;
	else
		memset(&m->writer->tap, 0, sizeof(m->writer->tap));
}
