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

static const struct {
	const char *name;
	const char *fmt;
} ops[GP_MOP_MAX] = {
	[GP_MOP_SESSION] = { "session", "sssssUU" },
	[GP_MOP_SESSION_END] = { "session_end", "U" },
	[GP_MOP_PROCESS_ADD] = { "process_add", "ussUb" },
	[GP_MOP_PROCESS_EXITED] = { "process_exited", "uU" },
	[GP_MOP_PROCESS_ORIGIN] = { "process_origin", "usu" },
	[GP_MOP_PROCESS_EXEC] = { "process_exec", "uss" },
	[GP_MOP_SKIPPED] = { "skipped", "uss" },
	[GP_MOP_LAUNCH] = { "launch", "sbii" },
	[GP_MOP_LIBRARY] = { "library", "usubs" },
	[GP_MOP_THREAD_NAME] = { "thread_name", "uus" },
	[GP_MOP_PROBE_ADD] = { "probe_add", "ususUu" },
	[GP_MOP_PROBE_HITS] = { "probe_hits", "uUU" },
	[GP_MOP_DROP_SET] = { "drop_set", "sU" },
	[GP_MOP_STACKS] = { "stacks", "bU" },
	[GP_MOP_INGEST] = { "ingest", "r" },
	[GP_MOP_SYMBOLIZE] = { "symbolize", "" },
	[GP_MOP_KERNEL_NAME] = { "kernel_name", "uUUiss" },
	[GP_MOP_SYMBOL] = { "symbol", "uUissssUUu" },
	[GP_MOP_MAPS] = { "maps", "uUs" },
	[GP_MOP_END] = { "end", "UU" },
	[GP_MOP_API_AGGREGATE] = { "api_aggregate", "r" },
	[GP_MOP_API_ESTIMATED] = { "api_estimated", "uuU" },
	[GP_MOP_SAMPLING] = { "sampling", "r" },
	[GP_MOP_PROBE_COST] = { "probe_cost", "U" },
};

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
			if (u32 && memchr(d + off, 0, u32 - 1)) /* an inner NUL would cut it silently */
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
		m->tap = *tap;
	else
		memset(&m->tap, 0, sizeof(m->tap));
}

void gp_model_tap_op(struct gp_model *m, unsigned op, ...)
{
	/* every ring-buffer record fits (the largest, an ext record, is 1,176 bytes): no malloc per record */
	unsigned char small[2048];
	unsigned char *buf = small;
	va_list ap;
	size_t n;

	_Static_assert(sizeof(struct gp_api_call_ext) <= sizeof(small) &&
			       GP_STACK_REC_SIZE(GP_STACK_MAX_FRAMES) <= sizeof(small),
		       "a ring record is packed on the stack");
	if (!m->tap.record)
		return;
	va_start(ap, op);
	n = gp_op_vpack(small, sizeof(small), ops[op].fmt, ap);
	va_end(ap);
	if (n > sizeof(small)) {
		buf = malloc(n);
		if (!buf) {
			m->tap.record(m->tap.ctx, op, NULL, n); /* the recorder counts it as lost */
			return;
		}
		va_start(ap, op);
		gp_op_vpack(buf, n, ops[op].fmt, ap);
		va_end(ap);
	}
	m->tap.record(m->tap.ctx, op, buf, n);
	if (buf != small)
		free(buf);
}
