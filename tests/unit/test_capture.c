/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_capture.c — the capture file: operation encoding (pack, unpack and
 * what unpack refuses), writer to reader round trips with exact counts, a
 * file cut at every kind of offset, corrupt chunks skipped and files that
 * are no capture refused with a clear message, and a model loaded from a
 * capture whose report.json equals the live model's, also when opened
 * through capture_open.h (its observers, hooks and stops); Python frames
 * named from the recorded answers alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <zlib.h>
#include <zstd.h>

#include "records.h"
#include "scenario.h"

#include "capture/capture_load.h"
#include "capture/capture_open.h"
#include "capture/capture_reader.h"
#include "capture/capture_resolver.h"
#include "capture/capture_writer.h"
#include "model/model_ops.h"
#include "text/labels.h"
#include "symbolize/symbolizer.h"

/* ---- helpers ------------------------------------------------------------- */

static size_t pack(void *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	n = gp_op_vpack(buf, cap, fmt, ap);
	va_end(ap);
	return n;
}

static void assert_str_or_null(const char *got, const char *want)
{
	if (!want)
		assert_null(got);
	else
		assert_string_equal(got, want);
}

/* A new empty file under $TMPDIR (or /tmp); its name in path. */
static void temp_path(char *path, size_t len)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(path, len, "%s/gp_capture_XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
}

static unsigned char *slurp(const char *path, size_t *len)
{
	struct stat sb;
	unsigned char *buf;
	FILE *f = fopen(path, "rb");

	assert_non_null(f);
	assert_int_equal(fstat(fileno(f), &sb), 0);
	buf = malloc(sb.st_size ? (size_t)sb.st_size : 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)sb.st_size, f), (size_t)sb.st_size);
	fclose(f);
	*len = (size_t)sb.st_size;
	return buf;
}

static void spill(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* ---- operation encoding -------------------------------------------------- */

/* The encoding of model_ops.h, written here independently of gp_op_vpack. */
struct enc {
	unsigned char b[4096];
	size_t n;
};

static void enc_put(struct enc *e, const void *p, size_t n)
{
	assert_true(e->n + n <= sizeof(e->b));
	memcpy(e->b + e->n, p, n);
	e->n += n;
}

static void enc_u32(struct enc *e, __u32 v)
{
	enc_put(e, &v, 4);
}

static void enc_str(struct enc *e, const char *s)
{
	enc_u32(e, s ? (__u32)strlen(s) + 1 : 0);
	if (s)
		enc_put(e, s, strlen(s) + 1);
}

static const char *const strings[] = { NULL, "", "x",
				       "/usr/lib/x86_64-linux-gnu/libcuda.so.1 \xc3\xa9t\xc3\xa9" };

/* Every operation, every field of its format, strings cycling through NULL, "", short and long. */
static void every_op_every_letter(void **state)
{
	for (unsigned op = 1; op < GP_MOP_MAX; op++) {
		const char *fmt = gp_model_op_format(op);

		assert_non_null(fmt);
		assert_string_not_equal(gp_model_op_name(op), "?");
		for (unsigned variant = 0; variant < 4; variant++) {
			union gp_op_val v[GP_OP_MAX_FIELDS];
			unsigned char raw[37];
			struct enc e = { .n = 0 };
			unsigned k;

			assert_true(strlen(fmt) <= GP_OP_MAX_FIELDS);
			for (unsigned i = 0; i < sizeof(raw); i++)
				raw[i] = (unsigned char)(i * 7 + variant);
			for (k = 0; fmt[k]; k++) {
				__u64 u64 = 0x0123456789abcdefULL ^ (k + variant);
				__u8 b = (k + variant) & 1;

				switch (fmt[k]) {
				case 'u':
					enc_u32(&e, 0xfffffff0u + k + variant);
					break;
				case 'i':
					enc_u32(&e, (__u32)(-1000 - (int)k - (int)variant));
					break;
				case 'U':
					enc_put(&e, &u64, 8);
					break;
				case 'b':
					enc_put(&e, &b, 1);
					break;
				case 's':
					enc_str(&e, strings[(k + variant) % 4]);
					break;
				case 'r':
					enc_put(&e, raw, variant * 12);
					break; /* 0 bytes too */
				default:
					fail_msg("op %u: unknown letter '%c'", op, fmt[k]);
				}
			}
			assert_int_equal(gp_op_unpack(op, e.b, e.n, v), 0);
			for (k = 0; fmt[k]; k++) {
				switch (fmt[k]) {
				case 'u':
					assert_int_equal(v[k].u, 0xfffffff0u + k + variant);
					break;
				case 'i':
					assert_int_equal(v[k].i, -1000 - (int)k - (int)variant);
					break;
				case 'U':
					assert_int_equal(v[k].u,
							 0x0123456789abcdefULL ^ (k + variant));
					break;
				case 'b':
					assert_int_equal(v[k].u, (k + variant) & 1);
					break;
				case 's':
					assert_str_or_null(v[k].s, strings[(k + variant) % 4]);
					break;
				case 'r':
					assert_int_equal(v[k].r.n, variant * 12);
					assert_memory_equal(v[k].r.p, raw, variant * 12);
					break;
				}
			}
		}
	}
	assert_null(gp_model_op_format(0));
	assert_null(gp_model_op_format(GP_MOP_MAX));
	assert_string_equal(gp_model_op_name(GP_MOP_MAX + 5), "?");
}

/* gp_op_vpack writes that same encoding, and says the size needed when the buffer is short. */
static void vpack_matches_the_encoding(void **state)
{
	unsigned char buf[512], small[8], rec[300];
	union gp_op_val v[GP_OP_MAX_FIELDS];
	struct enc e = { .n = 0 };
	__u64 a = 0x7f00dead0001ULL, so = 0x42, fo = 0x1234;
	size_t n;

	/* GP_MOP_SYMBOL "uUissssUUu": u, U, i, s (NULL, "", text) */
	enc_u32(&e, 4242);
	enc_put(&e, &a, 8);
	enc_u32(&e, (__u32)-ENOENT);
	enc_str(&e, "ml::step");
	enc_str(&e, NULL);
	enc_str(&e, "");
	enc_str(&e, "3f1c");
	enc_put(&e, &so, 8);
	enc_put(&e, &fo, 8);
	enc_u32(&e, GP_SYM_ELF);
	n = pack(buf, sizeof(buf), gp_model_op_format(GP_MOP_SYMBOL), 4242u, a, -ENOENT, "ml::step",
		 (const char *)NULL, "", "3f1c", so, fo, (unsigned)GP_SYM_ELF);
	assert_int_equal(n, e.n);
	assert_memory_equal(buf, e.b, n);
	/* too small: nothing written past cap, the size needed returned */
	memset(small, 0xa5, sizeof(small));
	assert_int_equal(pack(small, 4, gp_model_op_format(GP_MOP_SYMBOL), 4242u, a, -ENOENT,
			      "ml::step", (const char *)NULL, "", "3f1c", so, fo,
			      (unsigned)GP_SYM_ELF),
			 e.n);
	for (unsigned i = 4; i < sizeof(small); i++)
		assert_int_equal(small[i], 0xa5);

	/* GP_MOP_LAUNCH "sbii": NULL string, a bool given as any non-zero int, negative ints */
	n = pack(buf, sizeof(buf), gp_model_op_format(GP_MOP_LAUNCH), (const char *)NULL, 7, -3,
		 INT_MIN);
	assert_int_equal(n, 4 + 1 + 4 + 4);
	assert_int_equal(gp_op_unpack(GP_MOP_LAUNCH, buf, n, v), 0);
	assert_null(v[0].s);
	assert_int_equal(v[1].u, 1);
	assert_int_equal(v[2].i, -3);
	assert_int_equal(v[3].i, INT_MIN);

	/* GP_MOP_INGEST "r": the bytes as they are, none included */
	for (unsigned i = 0; i < sizeof(rec); i++)
		rec[i] = (unsigned char)(255 - i);
	n = pack(buf, sizeof(buf), gp_model_op_format(GP_MOP_INGEST), (const void *)rec,
		 sizeof(rec));
	assert_int_equal(n, sizeof(rec));
	assert_int_equal(gp_op_unpack(GP_MOP_INGEST, buf, n, v), 0);
	assert_int_equal(v[0].r.n, sizeof(rec));
	assert_memory_equal(v[0].r.p, rec, sizeof(rec));
	assert_int_equal(pack(buf, sizeof(buf), gp_model_op_format(GP_MOP_INGEST),
			      (const void *)rec, (size_t)0),
			 0);
	assert_int_equal(gp_op_unpack(GP_MOP_INGEST, buf, 0, v), 0);
	assert_int_equal(v[0].r.n, 0);

	/* GP_MOP_SYMBOLIZE "": nothing */
	assert_int_equal(pack(buf, sizeof(buf), gp_model_op_format(GP_MOP_SYMBOLIZE)), 0);
	assert_int_equal(gp_op_unpack(GP_MOP_SYMBOLIZE, buf, 0, v), 0);
	assert_int_equal(gp_op_unpack(GP_MOP_SYMBOLIZE, buf, 1, v), -EINVAL);
}

static void unpack_rejects_invalid_encodings(void **state)
{
	union gp_op_val v[GP_OP_MAX_FIELDS];
	unsigned char buf[512];
	struct enc e;
	size_t n;

	/* every strict prefix of a valid encoding is short, for every operation with fields */
	for (unsigned op = 1; op < GP_MOP_MAX; op++) {
		const char *fmt = gp_model_op_format(op);

		if (!*fmt || strchr(fmt, 'r'))
			continue;
		e.n = 0;
		for (const char *f = fmt; *f; f++) {
			__u64 zero = 0;

			if (*f == 's')
				enc_str(&e, "abc");
			else
				enc_put(&e, &zero, *f == 'U' ? 8 : *f == 'b' ? 1 : 4);
		}
		assert_int_equal(gp_op_unpack(op, e.b, e.n, v), 0);
		for (size_t cut = 0; cut < e.n; cut++)
			if (gp_op_unpack(op, e.b, cut, v) != -EINVAL)
				fail_msg("%s: a payload cut to %zu of %zu bytes was accepted",
					 gp_model_op_name(op), cut, e.n);
		/* one byte too many */
		e.b[e.n++] = 0;
		assert_int_equal(gp_op_unpack(op, e.b, e.n, v), -EINVAL);
	}

	/* GP_MOP_DROP_SET "sU" */
	n = pack(buf, sizeof(buf), gp_model_op_format(GP_MOP_DROP_SET), "ringbuf_full", (__u64)3);
	assert_int_equal(gp_op_unpack(GP_MOP_DROP_SET, buf, n, v), 0);
	buf[4 + 12] = 'X'; /* the string's NUL: unterminated */
	assert_int_equal(gp_op_unpack(GP_MOP_DROP_SET, buf, n, v), -EINVAL);
	buf[4 + 12] = 0;
	buf[4 + 4] = 0; /* "ring\0uf_full": an inner NUL */
	assert_int_equal(gp_op_unpack(GP_MOP_DROP_SET, buf, n, v), -EINVAL);
	buf[4 + 4] = 'b';
	memcpy(buf, &(__u32){ 0xffffffffu },
	       4); /* a length past the payload, wrapping when added */
	assert_int_equal(gp_op_unpack(GP_MOP_DROP_SET, buf, n, v), -EINVAL);
	memcpy(buf, &(__u32){ 14 }, 4); /* one past the payload's end */
	assert_int_equal(gp_op_unpack(GP_MOP_DROP_SET, buf, n, v), -EINVAL);

	/* a bool that is neither 0 nor 1 */
	n = pack(buf, sizeof(buf), gp_model_op_format(GP_MOP_STACKS), 1, (__u64)100);
	assert_int_equal(gp_op_unpack(GP_MOP_STACKS, buf, n, v), 0);
	buf[0] = 2;
	assert_int_equal(gp_op_unpack(GP_MOP_STACKS, buf, n, v), -EINVAL);

	/* unknown operations */
	assert_int_equal(gp_op_unpack(0, buf, 0, v), -EINVAL);
	assert_int_equal(gp_op_unpack(GP_MOP_MAX, buf, 0, v), -EINVAL);
	assert_int_equal(gp_op_unpack(0xffff, buf, 0, v), -EINVAL);
	/* and the loader counts them as malformed instead of applying them */
	{
		struct gp_model *m = gp_model_new(NULL);
		struct gp_answers *as = gp_answers_new();

		assert_int_equal(gp_capture_apply(m, as, GP_MOP_MAX, buf, 0), -ENOSYS);
		assert_int_equal(gp_capture_apply(m, as, GP_MOP_KERNEL_NAME, buf, 3), -EINVAL);
		gp_answers_free(as);
		gp_model_free(m);
	}
}

/* Every operation of GP_MODEL_OP_TABLE has the step that applies it (capture_load.c: a row without
 * one would build, and its operations be skipped as unknown by every report of a capture). */
static void every_operation_is_applied(void **state)
{
	static const struct {
		unsigned op;
		const char *name;
	} ops[] = {
#define GP_OP_ROW(num, NAME, name) { num, #name },
		GP_MODEL_OP_TABLE(GP_OP_ROW)
#undef GP_OP_ROW
	};
	unsigned char buf[1] = { 0 };

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct gp_model *m;
		struct gp_answers *as;
		int rc;

		if (ops[i].op ==
		    GP_MOP_END) /* the reader's own (capture_reader.c): never handed on */
			continue;
		m = gp_model_new(NULL);
		as = gp_answers_new();
		rc = gp_capture_apply(m, as, ops[i].op, buf, 0);

		if (rc == -ENOSYS)
			fail_msg("operation %u (%s): no case in capture_load.c applies it",
				 ops[i].op, ops[i].name);
		gp_answers_free(as);
		gp_model_free(m);
	}
}

/* ---- writer and reader --------------------------------------------------- */

struct op_list {
	unsigned *op;
	unsigned char **data;
	size_t *len;
	unsigned *
		chunk; /* the chunk the writer put it in (by its rule: whole operations, GP_CAP_CHUNK_RAW) */
	size_t n;
	unsigned nchunks; /* the end operation's chunk included */
};

static void op_list_free(struct op_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->data[i]);
	free(l->op);
	free(l->data);
	free(l->len);
	free(l->chunk);
	memset(l, 0, sizeof(*l));
}

/*
 * n operations of kinds other than the end: sizes from 0 up, one of them
 * (big) larger than a chunk; bytes compressible or not. Each placed in its
 * chunk by the writer's rule.
 */
static void make_ops(struct op_list *l, size_t n, size_t big_at, size_t max_len, bool compressible)
{
	size_t fill = 0;
	__u32 rnd = 12345;

	l->n = n;
	l->op = calloc(n, sizeof(*l->op));
	l->data = calloc(n, sizeof(*l->data));
	l->len = calloc(n, sizeof(*l->len));
	l->chunk = calloc(n, sizeof(*l->chunk));
	assert_true(l->op && l->data && l->len && l->chunk);
	l->nchunks = 0;
	for (size_t i = 0; i < n; i++) {
		size_t len = i == big_at  ? GP_CAP_CHUNK_RAW + 1000
			     : i % 7 == 0 ? 0
					  : (i * 7919) % max_len;
		size_t need = sizeof(struct gp_cap_op_hdr) + len;

		l->op[i] = 1 + (unsigned)(i % (GP_MOP_END - 1));
		l->len[i] = len;
		l->data[i] = malloc(len ? len : 1);
		assert_non_null(l->data[i]);
		for (size_t j = 0; j < len; j++) {
			rnd = rnd * 1103515245u + 12345u;
			l->data[i][j] = compressible ? (unsigned char)((i + j % 61) & 0xff)
						     : (unsigned char)(rnd >> 16);
		}
		if (fill && fill + need > GP_CAP_CHUNK_RAW) {
			l->nchunks++;
			fill = 0;
		}
		fill += need;
		l->chunk[i] = l->nchunks;
	}
	/* the end operation (16 bytes) */
	if (fill && fill + sizeof(struct gp_cap_op_hdr) + 16 > GP_CAP_CHUNK_RAW)
		l->nchunks++;
	l->nchunks++;
}

static void write_ops(const char *path, const struct op_list *l, struct gp_capture_writer_stats *st)
{
	struct gp_cap_header h = { .abi_version = GP_ABI_VERSION, .start_mono_ns = 77 };
	struct gp_capture_writer *w;
	char err[512];

	snprintf(h.hostname, sizeof(h.hostname), "test-host");
	w = gp_capture_writer_open(path, &h, err, sizeof(err));
	if (!w)
		fail_msg("%s", err);
	for (size_t i = 0; i < l->n; i++)
		gp_capture_writer_op(w, l->op[i], l->data[i], l->len[i]);
	assert_int_equal(gp_capture_writer_close(w, st), 0);
}

/*
 * Reads path to its end: each operation must be the next expected one (those
 * with keep[i]; keep NULL: all), in order. *st: the reader's stats.
 */
static void read_expect(const char *path, const struct op_list *l, const bool *keep,
			struct gp_capture_stats *st)
{
	char err[512];
	struct gp_capture_reader *r = gp_capture_open(path, err, sizeof(err));
	size_t i = 0, got = 0;
	unsigned op;
	const void *data;
	size_t len;
	int rc;

	if (!r)
		fail_msg("%s", err);
	while ((rc = gp_capture_next(r, &op, &data, &len)) > 0) {
		while (i < l->n && keep && !keep[i])
			i++;
		if (i >= l->n)
			fail_msg("operation %zu read, past the expected ones", got);
		if (op != l->op[i] || len != l->len[i] || memcmp(data, l->data[i], len))
			fail_msg(
				"operation %zu read (op %u, %zu bytes) is not operation %zu written (op %u, %zu bytes)",
				got, op, len, i, l->op[i], l->len[i]);
		i++;
		got++;
	}
	assert_int_equal(rc, 0);
	*st = *gp_capture_stats(r);
	assert_int_equal(st->ops, got);
	gp_capture_close(r);
}

/* How many operations keep[] keeps. */
static size_t kept(const struct op_list *l, const bool *keep)
{
	size_t n = 0;

	for (size_t i = 0; i < l->n; i++)
		n += keep[i];
	return n;
}

static void round_trip_many_chunks(void **state)
{
	struct gp_capture_writer_stats ws;
	struct gp_capture_stats rs;
	struct op_list l;
	char path[PATH_MAX];
	size_t size;
	unsigned char *file;

	temp_path(path, sizeof(path));
	make_ops(&l, 6000, 3100, 1700, false);
	write_ops(path, &l, &ws);
	read_expect(path, &l, NULL, &rs);
	file = slurp(path, &size);
	assert_true(l.nchunks >= 10);
	assert_true(rs.complete);
	assert_string_equal(rs.cut, "");
	assert_string_equal(rs.corruption, "");
	assert_int_equal(rs.ops, l.n);
	assert_int_equal(ws.ops, l.n);
	assert_int_equal(rs.chunks, l.nchunks);
	assert_int_equal(ws.chunks, l.nchunks);
	assert_int_equal(rs.corrupt_chunks, 0);
	assert_int_equal(rs.skipped_bytes, 0);
	assert_int_equal(ws.lost_ops, 0);
	assert_int_equal(ws.err, 0);
	assert_int_equal(rs.file_bytes, size);
	assert_int_equal(ws.file_bytes, size);
	free(file);
	unlink(path);
	op_list_free(&l);
}

/* Where each chunk starts in a capture file, and where the last one ends. */
static unsigned chunk_offsets(const unsigned char *file, size_t size, size_t *at, unsigned max)
{
	size_t off = sizeof(struct gp_cap_header);
	unsigned n = 0;

	while (off < size) {
		struct gp_cap_chunk c;

		assert_true(n < max);
		assert_true(off + sizeof(c) <= size);
		memcpy(&c, file + off, sizeof(c));
		assert_true(c.magic == GP_CAP_CHUNK_ZSTD || c.magic == GP_CAP_CHUNK_MAGIC);
		assert_int_equal(c.seq, n);
		at[n++] = off;
		off += sizeof(c) + c.zlen;
	}
	assert_int_equal(off, size);
	at[n] = size;
	return n;
}

/* A capture of a few chunks, small on disk: what the cut and corruption tests damage. */
struct small_capture {
	struct op_list l;
	char path[PATH_MAX];
	unsigned char *file;
	size_t size;
	size_t at[16];
	unsigned nchunks;
};

static void small_capture(struct small_capture *c)
{
	struct gp_capture_writer_stats ws;

	temp_path(c->path, sizeof(c->path));
	make_ops(&c->l, 900, 450, 1400, true);
	write_ops(c->path, &c->l, &ws);
	c->file = slurp(c->path, &c->size);
	c->nchunks = chunk_offsets(c->file, c->size, c->at, 15);
	assert_int_equal(c->nchunks, c->l.nchunks);
	assert_true(c->nchunks >= 4);
}

static void small_capture_free(struct small_capture *c)
{
	unlink(c->path);
	free(c->file);
	op_list_free(&c->l);
}

static void cut_at(struct small_capture *c, size_t cut)
{
	char err[512];
	struct gp_capture_reader *r;
	struct gp_capture_stats st;
	bool keep[900];
	unsigned whole = 0;

	spill(c->path, c->file, cut);
	if (cut < sizeof(struct gp_cap_header)) {
		r = gp_capture_open(c->path, err, sizeof(err));
		assert_null(r);
		if (!strstr(err, cut ? "cut inside its header" : "empty"))
			fail_msg("cut at %zu: the open error does not say so: %s", cut, err);
		return;
	}
	while (whole < c->nchunks && c->at[whole + 1] <= cut)
		whole++;
	for (size_t i = 0; i < c->l.n; i++)
		keep[i] = c->l.chunk[i] < whole;
	read_expect(c->path, &c->l, keep, &st);
	assert_int_equal(st.ops, kept(&c->l, keep)); /* exactly the whole chunks' operations */
	assert_int_equal(st.chunks, whole);
	assert_int_equal(st.corrupt_chunks, 0);
	assert_int_equal(st.file_bytes, cut);
	if (cut == c->size) {
		assert_true(st.complete);
		assert_string_equal(st.cut, "");
	} else {
		assert_false(st.complete);
		assert_string_not_equal(st.cut, "");
	}
}

/*
 * A version 1 capture (zlib chunks, what gpuprobed wrote before zstd) still
 * reads: the same operations, rewritten from a version 2 file chunk by chunk.
 */
static void reads_version_1(void **state)
{
	struct gp_capture_writer_stats ws;
	struct gp_capture_stats rs;
	struct gp_cap_header h;
	struct op_list l;
	char path[PATH_MAX];
	size_t size, at[64], out_len;
	unsigned char *file, *out;
	unsigned n;

	temp_path(path, sizeof(path));
	make_ops(&l, 3000, 1500, 1700, true);
	write_ops(path, &l, &ws);
	file = slurp(path, &size);
	n = chunk_offsets(file, size, at, 63);
	out = malloc(size * 4 + 65536);
	assert_non_null(out);
	memcpy(&h, file, sizeof(h));
	assert_int_equal(h.version, 2);
	h.version = 1;
	h.header_crc =
		(__u32)crc32(0, (const Bytef *)&h, offsetof(struct gp_cap_header, header_crc));
	memcpy(out, &h, sizeof(h));
	out_len = sizeof(h);
	for (unsigned i = 0; i < n; i++) {
		struct gp_cap_chunk c;
		unsigned char *raw;
		uLongf zlen;

		memcpy(&c, file + at[i], sizeof(c));
		assert_int_equal(c.magic, GP_CAP_CHUNK_ZSTD);
		raw = malloc(c.raw_len);
		assert_non_null(raw);
		assert_int_equal(ZSTD_decompress(raw, c.raw_len, file + at[i] + sizeof(c), c.zlen),
				 c.raw_len);
		zlen = compressBound(c.raw_len);
		assert_int_equal(compress2(out + out_len + sizeof(c), &zlen, raw, c.raw_len, 1),
				 Z_OK);
		c.magic = GP_CAP_CHUNK_MAGIC;
		c.zlen = (__u32)zlen;
		c.data_crc = (__u32)crc32(0, out + out_len + sizeof(c), (uInt)zlen);
		c.hdr_crc =
			(__u32)crc32(0, (const Bytef *)&c, offsetof(struct gp_cap_chunk, hdr_crc));
		memcpy(out + out_len, &c, sizeof(c));
		out_len += sizeof(c) + zlen;
		free(raw);
	}
	spill(path, out, out_len);
	read_expect(path, &l, NULL, &rs);
	assert_true(rs.complete);
	assert_string_equal(rs.corruption, "");
	assert_int_equal(rs.ops, l.n);
	assert_int_equal(rs.chunks, n);
	free(out);
	free(file);
	unlink(path);
	op_list_free(&l);
}

static void cut_anywhere(void **state)
{
	struct small_capture c;
	size_t first = sizeof(struct gp_cap_header) + sizeof(struct gp_cap_chunk);

	small_capture(&c);
	for (size_t cut = 0; cut <= first + 8;
	     cut++) /* every byte of the header and the first chunk header */
		cut_at(&c, cut);
	for (unsigned k = 1; k <= c.nchunks; k++) /* around every chunk's end */
		for (size_t cut = c.at[k] - 30; cut <= c.at[k] + 30 && cut <= c.size; cut++)
			cut_at(&c, cut);
	for (size_t cut = first + 9; cut < c.size; cut += 53) /* and everywhere between */
		cut_at(&c, cut);
	small_capture_free(&c);
}

/* Reads the damaged file: every operation but those of chunk `lost`, in order. */
static void expect_all_but(struct small_capture *c, unsigned lost, bool complete)
{
	struct gp_capture_stats st;
	bool keep[900];

	for (size_t i = 0; i < c->l.n; i++)
		keep[i] = c->l.chunk[i] != lost;
	read_expect(c->path, &c->l, keep, &st);
	assert_int_equal(st.ops, kept(&c->l, keep));
	assert_int_equal(st.corrupt_chunks, 1);
	assert_int_equal(st.chunks, c->nchunks - 1);
	assert_string_not_equal(st.corruption, "");
	assert_int_equal(st.complete, complete);
}

static void corrupt_chunks_skipped(void **state)
{
	struct small_capture c;
	unsigned char *bad;

	small_capture(&c);
	bad = malloc(c.size);
	assert_non_null(bad);
	/* a byte of chunk k's data: chunk k skipped, every other kept */
	for (unsigned k = 0; k + 1 < c.nchunks; k++) {
		size_t data = c.at[k] + sizeof(struct gp_cap_chunk);

		for (size_t off = data; off < c.at[k + 1]; off += (c.at[k + 1] - data) / 3 + 1) {
			memcpy(bad, c.file, c.size);
			bad[off] ^= 0x5a;
			spill(c.path, bad, c.size);
			expect_all_but(&c, k, true);
		}
	}
	/* any byte of chunk 1's header: the reader finds chunk 2 */
	for (size_t i = 0; i < sizeof(struct gp_cap_chunk); i++) {
		memcpy(bad, c.file, c.size);
		bad[c.at[1] + i] ^= 0x01;
		spill(c.path, bad, c.size);
		expect_all_but(&c, 1, true);
	}
	/* the last chunk's header: nothing after it, and its end operation is lost */
	memcpy(bad, c.file, c.size);
	bad[c.at[c.nchunks - 1] + 8] ^= 0x80;
	spill(c.path, bad, c.size);
	expect_all_but(&c, c.nchunks - 1, false);
	free(bad);
	small_capture_free(&c);
}

static void expect_open_error(const char *path, const char *says)
{
	char err[512];
	struct gp_capture_reader *r = gp_capture_open(path, err, sizeof(err));

	assert_null(r);
	if (!strstr(err, says))
		fail_msg("the error does not say \"%s\": %s", says, err);
	if (!strstr(err, path))
		fail_msg("the error does not name the file: %s", err);
}

static void not_a_capture(void **state)
{
	struct small_capture c;
	struct gp_cap_header h;
	char dir[PATH_MAX + 8], msg[64];
	unsigned char *bad;

	small_capture(&c);
	bad = malloc(c.size);
	assert_non_null(bad);

	memcpy(bad, c.file, c.size);
	bad[3] ^= 0x20;
	spill(c.path, bad, c.size);
	expect_open_error(c.path, "not a gpuprobed capture");

	spill(c.path, "{\"schema\": \"gpuprobed.report/1\"}\n", 33);
	expect_open_error(c.path, "not a gpuprobed capture");

	/* a newer format, its header otherwise right: the message gives both versions */
	memcpy(&h, c.file, sizeof(h));
	h.version = GP_CAP_VERSION + 1;
	h.header_crc =
		(__u32)crc32(0, (const Bytef *)&h, offsetof(struct gp_cap_header, header_crc));
	memcpy(bad, c.file, c.size);
	memcpy(bad, &h, sizeof(h));
	spill(c.path, bad, c.size);
	snprintf(msg, sizeof(msg), "version %u", GP_CAP_VERSION + 1);
	expect_open_error(c.path, msg);

	/* the header's checksum */
	memcpy(bad, c.file, c.size);
	bad[offsetof(struct gp_cap_header, hostname)] ^= 1;
	spill(c.path, bad, c.size);
	expect_open_error(c.path, "corrupt");

	spill(c.path, "", 0);
	expect_open_error(c.path, "empty");

	snprintf(dir, sizeof(dir), "%s.d", c.path);
	assert_int_equal(mkdir(dir, 0700), 0);
	expect_open_error(dir, "directory");
	rmdir(dir);

	unlink(c.path);
	expect_open_error(c.path, strerror(ENOENT));
	free(bad);
	small_capture_free(&c);
}

/* ---- a model from its capture --------------------------------------------- */

#define ST_MAIN 0x401100ULL
#define ST_STEP 0x401200ULL

static int st_symbolize(void *ctx, __u32 tgid, __u64 addr, struct gp_frame_sym *out)
{
	memset(out, 0, sizeof(*out));
	out->build_id = "";
	if (addr >= ST_STEP && addr < ST_STEP + 0x100) {
		out->symbol = "_ZN2ml4stepIfEEvi";
		out->function = "ml::step<float>";
	} else if (addr >= ST_MAIN && addr < ST_MAIN + 0x100) {
		out->symbol = out->function = "main";
	} else {
		return -ENOENT;
	}
	out->file = "/opt/app/train";
	out->sym_offset = addr & 0xff;
	out->file_offset = addr & 0xfff;
	out->source = GP_SYM_ELF;
	return 0;
}

/* After the scenario: call stacks, named when symbolized. */
static void stacks_part(struct gp_model *m)
{
	static const __u32 grid[3] = { 8, 1, 1 }, block[3] = { 64, 1, 1 };
	struct gp_api_call_stack s;

	gp_model_set_stacks(m, true, 100);
	for (unsigned i = 0; i < 4; i++) {
		memset(&s, 0, sizeof(s));
		s.call = rec_launch(GP_API_CUDA_LAUNCH_KERNEL, 0xa1, ST_STEP + 5 + i % 2, grid,
				    block, 0, SC_S1, 0);
		s.call.hdr.ts_ns = SC_START + 900000000 + i * 1000;
		s.call.hdr.type = GP_EV_API_CALL_STACK;
		s.call.hdr.size = (__u16)GP_STACK_REC_SIZE(3);
		s.nframes = 3;
		s.ips[0] = s.call.ret_addr;
		s.ips[1] = ST_MAIN + 0x20;
		s.ips[2] = 0x7f0000001234ULL; /* in no file */
		assert_int_equal(gp_model_ingest(m, &s, GP_STACK_REC_SIZE(3)), 0);
	}
	gp_model_symbolize_stacks(m, NULL);
}

static char *report_json_without_source(const struct gp_model *m)
{
	char *text = sink_output(gp_report_json_write, m), *out;
	json_error_t err;
	json_t *doc = json_loads(text, 0, &err);

	if (!doc)
		fail_msg("report.json does not parse: %s", err.text);
	free(text);
	json_object_del(doc, "source");
	out = json_dumps(doc, JSON_INDENT(1) | JSON_SORT_KEYS);
	json_decref(doc);
	assert_non_null(out);
	return out;
}

/* The models' report.json, but for "source", are the same and hold each of needles (to NULL). */
static void assert_same_report(const struct gp_model *live, const struct gp_model *loaded,
			       const char *const *needles)
{
	char *a = report_json_without_source(live), *b = report_json_without_source(loaded);

	for (; *needles; needles++)
		if (!strstr(a, *needles))
			fail_msg("report.json has no %s", *needles);
	assert_string_equal(b, a);
	free(a);
	free(b);
}

/*
 * A live model (the scenario and its stacks) whose operations and resolver
 * answers are written to a capture at path: what a session leaves.
 */
static struct gp_model *live_into_capture(char *path, size_t len,
					  struct gp_capture_writer_stats *ws)
{
	static struct gp_recording_resolver rr = { .record = gp_capture_writer_op };
	struct gp_resolver inner = sc_resolver, live_res;
	struct gp_cap_header h = { .abi_version = GP_ABI_VERSION };
	struct gp_capture_writer *w;
	struct gp_model *live;
	char err[512];

	/* the resolver the session has (names kernels and frames, demangles), recorded */
	inner.demangle = gp_demangle;
	inner.demangle_short = gp_demangle_short;
	inner.symbolize = st_symbolize;
	temp_path(path, len);
	w = gp_capture_writer_open(path, &h, err, sizeof(err));
	if (!w)
		fail_msg("%s", err);
	rr.inner = inner;
	rr.record_ctx = w;
	live_res = gp_recording_resolver(&rr);
	live = scenario_model_with(
		&live_res, &(struct gp_model_tap){ .ctx = w, .record = gp_capture_writer_op }, true,
		true);
	stacks_part(live);
	gp_model_set_tap(live, NULL);
	assert_int_equal(gp_capture_writer_close(w, ws), 0);
	assert_int_equal(ws->lost_ops, 0);
	return live;
}

static void load_equals_live(void **state)
{
	struct gp_capture_writer_stats ws;
	struct gp_capture_load_stats ls;
	struct gp_capture_reader *r;
	struct gp_answers *as;
	struct gp_resolver ans_res;
	struct gp_model *live, *loaded;
	char path[PATH_MAX], err[512];

	live = live_into_capture(path, sizeof(path), &ws);
	/* loaded: nothing but the capture */
	r = gp_capture_open(path, err, sizeof(err));
	if (!r)
		fail_msg("%s", err);
	as = gp_answers_new();
	assert_non_null(as);
	ans_res = gp_answers_resolver(as);
	loaded = gp_model_new(&ans_res);
	assert_non_null(loaded);
	assert_int_equal(gp_capture_load(r, loaded, as, &ls), 0);
	assert_true(gp_capture_stats(r)->complete);
	assert_int_equal(gp_capture_stats(r)->ops, ws.ops);
	assert_int_equal(ls.malformed, 0);
	assert_true(ls.answers >= 3); /* kernel names (named and not), frames */
	assert_int_equal(ls.applied + ls.answers + ls.ignored, ws.ops);

	/* the recorded kernel name is there, and the frames' */
	assert_same_report(
		live, loaded,
		(const char *const[]){ "void scale<float>(float*, int)", "ml::step<float>", NULL });
	gp_model_free(live);
	gp_model_free(loaded);
	gp_answers_free(as);
	gp_capture_close(r);
	unlink(path);
}

/* ---- a capture opened into a model (capture_open.h) ------------------------- */

/* What the hooks and observers of one opening saw. */
struct opening {
	struct second {
		struct opening *o;
	} second; /* the second observer's ctx (observers are removed by theirs) */
	struct gp_model *ready_model;
	size_t calls[2]; /* outermost calls each observer saw */
	size_t more, applied, malformed_seen;
	size_t stop_after; /* applied answers -ENOMEM after this many (0: never) */
	size_t more_until; /* more answers false once this many were applied (0: never) */
	bool done;
};

static void seen_0(void *ctx, const struct gp_call_view *v)
{
	((struct opening *)ctx)->calls[0]++;
}

static void seen_1(void *ctx, const struct gp_call_view *v)
{
	struct opening *o = ((struct second *)ctx)->o;

	assert_int_equal(o->calls[1] + 1, o->calls[0]); /* after the first observer, every time */
	o->calls[1]++;
}

static int on_ready(void *ctx, struct gp_model *m)
{
	((struct opening *)ctx)->ready_model = m;
	return 0;
}

static bool on_more(void *ctx)
{
	struct opening *o = ctx;

	o->more++;
	return !o->more_until || o->applied < o->more_until;
}

static int on_applied(void *ctx, unsigned op, const void *data, size_t len, int err)
{
	struct opening *o = ctx;

	o->applied++;
	if (err < 0)
		o->malformed_seen++;
	return o->stop_after && o->applied == o->stop_after ? -ENOMEM : 0;
}

static int on_done(void *ctx)
{
	((struct opening *)ctx)->done = true;
	return 0;
}

/* Its two observers and its hooks. */
static struct gp_capture_open_opts opening_opts(struct opening *o, struct gp_model_observer obs[2])
{
	o->second.o = o;
	obs[0] = (struct gp_model_observer){ .ctx = o, .call = seen_0 };
	obs[1] = (struct gp_model_observer){ .ctx = &o->second, .call = seen_1 };
	return (struct gp_capture_open_opts){ .observers = obs,
					      .nobservers = 2,
					      .ctx = o,
					      .ready = on_ready,
					      .more = on_more,
					      .applied = on_applied,
					      .done = on_done,
					      .finish = true };
}

static void open_model_equals_live(void **state)
{
	struct gp_capture_writer_stats ws;
	struct gp_capture_model cm;
	struct opening o = { 0 };
	struct gp_model_observer obs[2];
	struct gp_capture_open_opts opts = opening_opts(&o, obs);
	struct gp_api_call c = rec(GP_API_CUDA_MALLOC, T_PID, T_TID, 1, 1, 0);
	struct gp_model *live;
	char path[PATH_MAX], err[512];

	live = live_into_capture(path, sizeof(path), &ws);
	assert_int_equal(gp_capture_open_model(path, &opts, &cm, err, sizeof(err)), 0);
	assert_non_null(cm.reader);
	assert_true(cm.own_reader);
	assert_ptr_equal(o.ready_model, cm.model);
	assert_int_equal(cm.read_err, 0);
	assert_true(gp_capture_stats(cm.reader)->complete);
	assert_int_equal(o.applied, ws.ops);
	assert_int_equal(o.more, ws.ops);
	assert_int_equal(cm.stats.applied + cm.stats.answers + cm.stats.ignored, ws.ops);
	assert_int_equal(cm.stats.malformed, 0);
	assert_true(o.done);
	assert_true(o.calls[0] > 0);
	assert_int_equal(o.calls[1], o.calls[0]);
	/* finished as a report reads it: named stacks, its source */
	assert_string_equal(cm.model->source.kind, "capture");
	assert_same_report(live, cm.model, (const char *const[]){ "ml::step<float>", NULL });
	/* the observers were removed after the last operation */
	assert_int_equal(gp_model_ingest(cm.model, &c, sizeof(c)), 0);
	assert_int_equal(o.calls[1], o.calls[0]);
	gp_capture_model_close(&cm);
	gp_model_free(live);
	unlink(path);
}

/* A list of operations, as the replay planner's tests give them. */
struct op_cursor {
	const struct op_list *l;
	size_t at;
};

static int cursor_next(void *ctx, unsigned *op, const void **data, size_t *len)
{
	struct op_cursor *cu = ctx;

	if (cu->at == cu->l->n)
		return 0;
	*op = cu->l->op[cu->at];
	*data = cu->l->data[cu->at];
	*len = cu->l->len[cu->at];
	cu->at++;
	return 1;
}

static void open_model_hooks_stop_it(void **state)
{
	struct op_list l = { 0 };
	struct op_cursor cu = { .l = &l };
	struct gp_capture_model cm;
	struct gp_model_observer obs[2];
	struct opening o = { .stop_after = 5 };
	struct gp_capture_open_opts opts = opening_opts(&o, obs);
	char err[512] = "";

	make_ops(&l, 40, SIZE_MAX, 64, false);
	opts.next = cursor_next;
	opts.next_ctx = &cu;
	/* applied's nonzero stops at once, returned, nothing after it */
	assert_int_equal(gp_capture_open_model(NULL, &opts, &cm, err, sizeof(err)), -ENOMEM);
	assert_null(cm.reader);
	assert_non_null(cm.model);
	assert_int_equal(o.applied, 5);
	assert_int_equal(cu.at, 5);
	assert_false(o.done);
	gp_capture_model_close(&cm);

	/* more's false stops before the operation read is applied; done still comes */
	o = (struct opening){ .more_until = 7 };
	opts = opening_opts(&o, obs);
	opts.next = cursor_next;
	opts.next_ctx = &cu;
	cu.at = 0;
	assert_int_equal(gp_capture_open_model(NULL, &opts, &cm, err, sizeof(err)), 0);
	assert_int_equal(o.applied, 7);
	assert_int_equal(o.more, 8);
	assert_int_equal(cu.at, 8);
	assert_true(o.done);
	assert_int_equal(
		cm.stats.applied + cm.stats.answers + cm.stats.ignored + cm.stats.malformed, 7);
	gp_capture_model_close(&cm);

	/* a file that is no capture: -EINVAL, why in errmsg, no model */
	o = (struct opening){ 0 };
	opts = opening_opts(&o, obs);
	assert_int_equal(
		gp_capture_open_model("/nonexistent/capture.gpz", &opts, &cm, err, sizeof(err)),
		-EINVAL);
	assert_non_null(strstr(err, "/nonexistent/capture.gpz"));
	assert_null(cm.model);
	assert_null(o.ready_model);
	gp_capture_model_close(&cm);
	op_list_free(&l);
}

/* ---- Python frames through a capture --------------------------------------- */

/* The operations a tap (and a recording resolver) gave, in order, kept in memory. */
struct mem_ops {
	struct mem_op {
		unsigned op;
		size_t len;
		unsigned char *data;
	} * v;
	size_t n, cap;
};

static void mem_record(void *ctx, unsigned op, const void *data, size_t len)
{
	struct mem_ops *o = ctx;
	struct mem_op *x;

	assert_non_null(data); /* NULL: the operation could not be packed */
	if (o->n == o->cap) {
		o->cap = o->cap ? 2 * o->cap : 64;
		o->v = realloc(o->v, o->cap * sizeof(*o->v));
		assert_non_null(o->v);
	}
	x = &o->v[o->n++];
	x->op = op;
	x->len = len;
	x->data = malloc(len ? len : 1);
	assert_non_null(x->data);
	memcpy(x->data, data, len);
}

static size_t mem_count(const struct mem_ops *o, unsigned op)
{
	size_t n = 0;

	for (size_t i = 0; i < o->n; i++)
		n += o->v[i].op == op;
	return n;
}

static void mem_free(struct mem_ops *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->v[i].data);
	free(o->v);
	memset(o, 0, sizeof(*o));
}

#define PY_EVAL 0x5a0000002100ULL /* _PyEval_EvalFrameDefault */
#define PY_FWD	0x7f3a00010000ULL /* Model.forward (another process: Other.run) */
#define PY_STEP 0x7f3a00020000ULL /* train_step */
#define PY_GONE 0x7f3a00050000ULL /* cannot be read */
#define PY_PID2 5151

static int py_questions; /* asked of the live resolver */

static int py_symbolize(void *ctx, __u32 tgid, __u64 addr, struct gp_frame_sym *out)
{
	if (addr != PY_EVAL - 1)
		return st_symbolize(ctx, tgid, addr, out);
	memset(out, 0, sizeof(*out));
	out->symbol = out->function = "_PyEval_EvalFrameDefault";
	out->file = "/usr/bin/python3.12";
	out->build_id = "5e1f";
	out->file_offset = addr & 0xfff;
	out->source = GP_SYM_ELF;
	return 0;
}

static int py_frame(void *ctx, __u32 tgid, __u64 code, __u64 word, struct gp_py_frame_sym *out)
{
	int lines = (int)(GP_PYF_INSTR(word) / 8);

	py_questions++;
	if (code == PY_FWD && tgid == T_PID)
		*out = (struct gp_py_frame_sym){ "Model.forward", "/srv/job/model/train.py",
						 13 + lines };
	else if (code == PY_FWD)
		*out = (struct gp_py_frame_sym){ "Other.run", "/srv/run.py", 7 + lines };
	else if (code == PY_STEP)
		*out = (struct gp_py_frame_sym){ "train_step", "/srv/job/train.py", 40 + lines };
	else
		return -EFAULT;
	return 0;
}

/* A process's stacks, each as its frames' labels (" | " between, "; " between stacks). */
static char *stacks_text(const struct gp_model *m, __u32 pid)
{
	const struct gp_process *p = gp_u64map_get(&m->by_pid, pid);
	char *buf = NULL, frame[512];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(p);
	assert_non_null(f);
	for (size_t i = 0; i < p->stacks.n; i++) {
		const struct gp_stack *k = p->stacks.v[i];

		assert_non_null(k->frame_ids);
		for (unsigned j = 0; j < k->nsym; j++) {
			gp_stack_frame_label(&p->stacks.frames[k->frame_ids[j]], frame,
					     sizeof(frame));
			fprintf(f, "%s%s", j ? " | " : i ? "; " : "", frame);
		}
	}
	fclose(f);
	return buf;
}

/* Both models show pid's stacks as want. */
static void assert_stacks_text(const struct gp_model *live, const struct gp_model *loaded,
			       __u32 pid, const char *want)
{
	char *a = stacks_text(live, pid), *b = stacks_text(loaded, pid);

	assert_string_equal(a, want);
	assert_string_equal(b, want);
	free(a);
	free(b);
}

/*
 * Python frames are named live, once per (process, code, word), and the
 * answers recorded (PY_FRAME) before the record that asked: a model loaded
 * from the operations alone names them the same, failures included,
 * without the live resolver. What was found of each interpreter
 * (PROCESS_PYTHON) and the unwind tables' state (UNWIND) come back whole.
 */
static void python_frames_from_a_capture(void **state)
{
	const __u64 nat[] = { ST_STEP + 5, PY_EVAL, ST_MAIN + 0x20 };
	const __u64 two[] = { PY_FWD, PYW(4, 0), PY_STEP, PYW(20, GP_PYF_ENTRY) };
	const __u64 same_line[] = { PY_FWD, PYW(6, GP_PYF_ENTRY) },
		    gone[] = { PY_GONE, PYW(0, GP_PYF_ENTRY) };
	struct gp_resolver inner = { .demangle = gp_demangle,
				     .demangle_short = gp_demangle_short,
				     .symbolize = py_symbolize,
				     .py_frame = py_frame };
	struct mem_ops ops = { 0 };
	struct gp_recording_resolver rr = { .inner = inner,
					    .record = mem_record,
					    .record_ctx = &ops };
	struct gp_resolver live_res = gp_recording_resolver(&rr), ans_res;
	struct gp_api_call c = rec_memcpy(GP_API_CUDA_MEMCPY, 0x7000000, 0x600000, 4096,
					  GP_MEMCPY_HTOD, 0, 300, 0);
	struct gp_api_call c2 = c;
	struct gp_model *live = gp_model_new(&live_res), *loaded;
	struct gp_answers *as;
	const struct gp_unwind_summary unwind = rec_unwind();
	struct gp_unwind_summary got;
	const struct gp_process *p;

	assert_non_null(live);
	c2.hdr.tgid = c2.hdr.tid = PY_PID2;
	py_questions = 0;
	gp_model_set_tap(live, &(struct gp_model_tap){ .ctx = &ops, .record = mem_record });
	gp_model_set_stacks(live, true, 100);
	assert_int_equal(gp_model_process_add(live, T_PID, "train", "train.py", 1000, true), 0);
	assert_int_equal(gp_model_process_add(live, PY_PID2, "run", "run.py", 1000, true), 0);
	assert_int_equal(gp_model_process_python(live, T_PID, 0x030c04f0, true, "CPython 3.12"), 0);
	assert_int_equal(gp_model_process_python(live, PY_PID2, 0, false, "none found"), 0);
	gp_model_set_unwind(live, &unwind);
	for (int i = 0; i < 3; i++)
		feed_ustack(live, &c,
			    USTACK(nat, two, .py_status = GP_PY_OK, .stop = GP_STOP_NO_TABLE,
				   .frames_fp = 1));
	feed_ustack(live, &c, USTACK(nat, same_line, .py_status = GP_PY_OK));
	feed_ustack(live, &c, USTACK(nat, gone, .py_status = GP_PY_READ));
	feed_ustack(live, &c2, USTACK(nat, two, .py_status = GP_PY_OK));
	gp_model_symbolize_stacks(live, NULL);
	gp_model_set_tap(live, NULL);
	/* asked once per (process, code, word): 2 + 1 + 1 here, 2 in the other; all recorded */
	assert_int_equal(py_questions, 6);
	assert_int_equal(mem_count(&ops, GP_MOP_PY_FRAME), 6);
	assert_int_equal(mem_count(&ops, GP_MOP_PROCESS_PYTHON), 2);
	assert_int_equal(mem_count(&ops, GP_MOP_UNWIND), 1);

	/* loaded: the operations and the recorded answers, nothing else */
	as = gp_answers_new();
	assert_non_null(as);
	ans_res = gp_answers_resolver(as);
	loaded = gp_model_new(&ans_res);
	assert_non_null(loaded);
	for (size_t i = 0; i < ops.n; i++)
		if (gp_capture_apply(loaded, as, ops.v[i].op, ops.v[i].data, ops.v[i].len))
			fail_msg("operation %zu (%s) not applied", i,
				 gp_model_op_name(ops.v[i].op));
	assert_int_equal(py_questions, 6); /* the live resolver was not asked */

	assert_stacks_text(
		live, loaded, T_PID,
		"ml::step<float> | Model.forward (train.py:13) | train_step (train.py:42) | main; "
		"ml::step<float> | Model.forward (train.py:13) | main; "
		"ml::step<float> | [python 0x7f3a00050000] | main");
	assert_stacks_text(
		live, loaded, PY_PID2,
		"ml::step<float> | Other.run (run.py:7) | train_step (train.py:42) | main");
	p = gp_u64map_get(&loaded->by_pid, T_PID);
	assert_int_equal(p->stacks.py_unnamed, 1);
	assert_true(p->python.found);
	assert_true(p->python.walked);
	assert_int_equal(p->python.hexversion, 0x030c04f0);
	assert_string_equal(p->python.note, "CPython 3.12");
	p = gp_u64map_get(&loaded->by_pid, PY_PID2);
	assert_true(p->python.found);
	assert_false(p->python.walked);
	assert_int_equal(p->python.hexversion, 0);
	assert_string_equal(p->python.note, "none found");
	/* every count as given, and the file's name */
	assert_true(loaded->session.unwind_set);
	got = loaded->session.unwind;
	assert_string_equal(got.build_max_file, unwind.build_max_file);
	got.build_max_file = unwind.build_max_file;
	assert_memory_equal(&got, &unwind, sizeof(got));

	/* and the whole report: the same */
	assert_same_report(
		live, loaded,
		(const char *const[]){ "\"Other.run\"", "\"/usr/lib/libtorch_cuda.so\"", NULL });
	gp_model_free(live);
	gp_model_free(loaded);
	gp_answers_free(as);
	mem_free(&ops);
}

/*
 * The session's holds (HOLDS), each hold ended at the limit (HOLD_TIMEOUT)
 * and the holds of each file (HOLD_FILE) come back whole from the
 * operations, in order.
 */
static void holds_from_a_capture(void **state)
{
	const struct gp_holds_summary h = { .holds = 7,
					    .total_ns = 912345678,
					    .max_ns = 600000123,
					    .timed_out = 2,
					    .exec = 3,
					    .map = 2,
					    .python = 2,
					    .files_left_out = 1 };
	struct mem_ops ops = { 0 };
	struct gp_model *live = gp_model_new(NULL), *loaded = gp_model_new(NULL);

	assert_non_null(live);
	assert_non_null(loaded);
	gp_model_set_tap(live, &(struct gp_model_tap){ .ctx = &ops, .record = mem_record });
	assert_int_equal(gp_model_hold_timeout(live, T_PID, GP_HOLD_EXEC, 600000123), 0);
	assert_int_equal(gp_model_hold_timeout(live, T_PID, GP_HOLD_MAP, 300000001), 0);
	assert_int_equal(gp_model_hold_file(live, 0xfe00000, 42, GP_HOLD_EXEC, NULL, 1, 600000123,
					    600000123),
			 0);
	assert_int_equal(gp_model_hold_file(live, 0xfe00000, 43, GP_HOLD_MAP,
					    "/lib/libcudart.so.13", 1, 5, 5),
			 0);
	/* the totals of a file replaced, its path kept */
	assert_int_equal(
		gp_model_hold_file(live, 0xfe00000, 43, GP_HOLD_MAP, NULL, 2, 300000006, 300000001),
		0);
	gp_model_set_holds(live, &h);
	gp_model_set_tap(live, NULL);
	assert_int_equal(mem_count(&ops, GP_MOP_HOLD_TIMEOUT), 2);
	assert_int_equal(mem_count(&ops, GP_MOP_HOLDS), 1);
	assert_false(loaded->session.holds_set);
	for (size_t i = 0; i < ops.n; i++)
		if (gp_capture_apply(loaded, NULL, ops.v[i].op, ops.v[i].data, ops.v[i].len))
			fail_msg("operation %zu (%s) not applied", i,
				 gp_model_op_name(ops.v[i].op));
	assert_true(loaded->session.holds_set);
	assert_memory_equal(&loaded->session.holds, &h, sizeof(h));
	assert_int_equal(loaded->session.ntimed_out, 2);
	assert_memory_equal(loaded->session.timed_out, live->session.timed_out,
			    2 * sizeof(*live->session.timed_out));
	assert_int_equal(loaded->session.timed_out[1].reason, GP_HOLD_MAP);
	assert_int_equal(mem_count(&ops, GP_MOP_HOLD_FILE), 3);
	assert_int_equal(loaded->session.nhold_files, 2);
	assert_null(loaded->session.hold_files[0].path);
	assert_true(loaded->session.hold_files[0].ino == 42 &&
		    loaded->session.hold_files[0].holds == 1);
	assert_string_equal(loaded->session.hold_files[1].path, "/lib/libcudart.so.13");
	assert_true(loaded->session.hold_files[1].holds == 2 &&
		    loaded->session.hold_files[1].total_ns == 300000006 &&
		    loaded->session.hold_files[1].max_ns == 300000001 &&
		    loaded->session.hold_files[1].reason == GP_HOLD_MAP);
	mem_free(&ops);
	gp_model_free(live);
	gp_model_free(loaded);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_op_every_letter),
		cmocka_unit_test(vpack_matches_the_encoding),
		cmocka_unit_test(unpack_rejects_invalid_encodings),
		cmocka_unit_test(round_trip_many_chunks),
		cmocka_unit_test(reads_version_1),
		cmocka_unit_test(cut_anywhere),
		cmocka_unit_test(corrupt_chunks_skipped),
		cmocka_unit_test(not_a_capture),
		cmocka_unit_test(load_equals_live),
		cmocka_unit_test(every_operation_is_applied),
		cmocka_unit_test(open_model_equals_live),
		cmocka_unit_test(open_model_hooks_stop_it),
		cmocka_unit_test(python_frames_from_a_capture),
		cmocka_unit_test(holds_from_a_capture),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
