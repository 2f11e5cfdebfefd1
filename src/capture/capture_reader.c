/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * capture_reader.c — reads a capture file (capture_reader.h). Everything in
 * the file is distrusted: lengths are bounded before anything is allocated,
 * a chunk is used only when its header and data checksums match and it
 * inflates to exactly its stated size of whole, known operations.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>
#include <zstd.h>

#include "capture/capture_reader.h"
#include "model/model_ops.h"

/* the largest chunk a writer makes: a full chunk plus one operation that did not fit */
#define RAW_MAX ((size_t)GP_CAP_CHUNK_RAW + sizeof(struct gp_cap_op_hdr) + GP_CAP_OP_MAX)

struct gp_capture_reader {
	FILE *f;
	struct gp_cap_header hdr;
	struct gp_capture_stats st;
	unsigned char *raw, *z;
	size_t raw_cap, z_cap;
	size_t raw_len, pos; /* the inflated chunk being read, and where */
	__u64 next_seq;	     /* the chunk expected next */
	__u64 offset;	     /* file offset of the next byte to read */
	ZSTD_DCtx *zctx;     /* for zstd chunks, made at the first */
	bool done;
	z_stream zs; /* raw inflate, kept across chunks (zs_ready: initialised) */
	bool zs_ready;
};

/* Tells the first problem of a kind into buf (a stats string). */
static void tell(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void tell(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (buf[0])
		return;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

#define set_cut(r, ...)	    tell((r)->st.cut, sizeof((r)->st.cut), __VA_ARGS__)
#define set_corrupt(r, ...) tell((r)->st.corruption, sizeof((r)->st.corruption), __VA_ARGS__)

struct gp_capture_reader *gp_capture_open(const char *path, char *errmsg, size_t errlen)
{
	struct gp_capture_reader *r = calloc(1, sizeof(*r));
	struct stat sb;
	size_t n;

	if (!r) {
		snprintf(errmsg, errlen, "%s: out of memory", path);
		return NULL;
	}
	r->f = fopen(path, "rb");
	if (!r->f) {
		snprintf(errmsg, errlen, "%s: %s", path, strerror(errno));
		goto err;
	}
	if (fstat(fileno(r->f), &sb)) {
		snprintf(errmsg, errlen, "%s: %s", path, strerror(errno));
		goto err;
	}
	if (S_ISDIR(sb.st_mode)) {
		snprintf(errmsg, errlen, "%s: is a directory, not a capture file", path);
		goto err;
	}
	r->st.file_bytes = (__u64)sb.st_size;
	n = fread(&r->hdr, 1, sizeof(r->hdr), r->f);
	if (ferror(r->f)) {
		snprintf(errmsg, errlen, "%s: %s", path, strerror(errno));
		goto err;
	}
	if (n == 0) {
		snprintf(errmsg, errlen, "%s: empty file, not a capture", path);
		goto err;
	}
	/* fewer bytes than the magic, but those right: a capture cut short, not another kind of file */
	if (memcmp(r->hdr.magic, GP_CAP_MAGIC,
		   n < sizeof(r->hdr.magic) ? n : sizeof(r->hdr.magic))) {
		snprintf(errmsg, errlen,
			 "%s: not a gpuprobed capture (it does not start with the capture magic)",
			 path);
		goto err;
	}
	if (n < offsetof(struct gp_cap_header, header_size) + 4) {
		snprintf(errmsg, errlen, "%s: the capture is cut inside its header (%zu bytes)",
			 path, n);
		goto err;
	}
	if (r->hdr.version > GP_CAP_VERSION || r->hdr.version == 0) {
		snprintf(
			errmsg, errlen,
			"%s: capture format version %u; this gpuprobed reads version 1 to %u (a newer gpuprobed wrote it)",
			path, r->hdr.version, GP_CAP_VERSION);
		goto err;
	}
	if (n < sizeof(r->hdr) || r->hdr.header_size < sizeof(r->hdr)) {
		snprintf(errmsg, errlen, "%s: the capture is cut inside its header (%zu bytes)",
			 path, n);
		goto err;
	}
	if (r->hdr.header_crc !=
	    (__u32)crc32(0, (const Bytef *)&r->hdr, offsetof(struct gp_cap_header, header_crc))) {
		snprintf(errmsg, errlen, "%s: the capture's header is corrupt (checksum mismatch)",
			 path);
		goto err;
	}
	if (r->hdr.header_size > sizeof(r->hdr) && fseeko(r->f, r->hdr.header_size, SEEK_SET)) {
		snprintf(errmsg, errlen, "%s: %s", path, strerror(errno));
		goto err;
	}
	r->offset = r->hdr.header_size;
	/* strings are NUL-padded by the writer; never trust that */
	r->hdr.tool_version[sizeof(r->hdr.tool_version) - 1] = 0;
	r->hdr.hostname[sizeof(r->hdr.hostname) - 1] = 0;
	r->hdr.kernel_release[sizeof(r->hdr.kernel_release) - 1] = 0;
	return r;
err:
	gp_capture_close(r);
	return NULL;
}

const struct gp_cap_header *gp_capture_header(const struct gp_capture_reader *r)
{
	return &r->hdr;
}

const struct gp_capture_stats *gp_capture_stats(const struct gp_capture_reader *r)
{
	return &r->st;
}

void gp_capture_close(struct gp_capture_reader *r)
{
	if (!r)
		return;
	if (r->zs_ready)
		inflateEnd(&r->zs);
	if (r->f)
		fclose(r->f);
	free(r->raw);
	free(r->z);
	ZSTD_freeDCtx(r->zctx);
	free(r);
}

static bool chunk_header_ok(const struct gp_cap_chunk *h)
{
	size_t bound = h->magic == GP_CAP_CHUNK_ZSTD ? ZSTD_compressBound(h->raw_len)
						     : compressBound(h->raw_len);

	return (h->magic == GP_CAP_CHUNK_MAGIC || h->magic == GP_CAP_CHUNK_ZSTD) &&
	       h->hdr_crc ==
		       (__u32)crc32(0, (const Bytef *)h, offsetof(struct gp_cap_chunk, hdr_crc)) &&
	       h->raw_len && h->raw_len <= RAW_MAX && h->zlen && h->zlen <= bound;
}

static int grow(unsigned char **buf, size_t *cap, size_t need)
{
	unsigned char *b;

	if (need <= *cap)
		return 0;
	b = realloc(*buf, need);
	if (!b)
		return -ENOMEM;
	*buf = b;
	*cap = need;
	return 0;
}

/* Every operation of the inflated chunk is whole and known. */
static bool ops_ok(const unsigned char *raw, size_t len)
{
	size_t off = 0;

	while (off < len) {
		struct gp_cap_op_hdr h;

		if (len - off < sizeof(h))
			return false;
		memcpy(&h, raw + off, sizeof(h));
		off += sizeof(h);
		if (!gp_model_op_format(h.op) || h.op == 0 || h.zero || h.len > len - off)
			return false;
		off += h.len;
	}
	return true;
}

/*
 * Looks for the next chunk header whose checksum holds, from the byte after
 * a bad one. Returns 1 with *h read and the file positioned after it, 0 at
 * the end of the file.
 */
static int resync(struct gp_capture_reader *r, struct gp_cap_chunk *h, __u64 from)
{
	unsigned char win[sizeof(*h)];
	size_t have = 0;
	int c;

	if (fseeko(r->f, (off_t)from, SEEK_SET))
		return 0;
	r->offset = from;
	while ((c = getc(r->f)) != EOF) {
		if (have == sizeof(win)) {
			memmove(win, win + 1, sizeof(win) - 1);
			have--;
			r->offset++;
			r->st.skipped_bytes++;
		}
		win[have++] = (unsigned char)c;
		if (have == sizeof(win)) {
			memcpy(h, win, sizeof(*h));
			if (chunk_header_ok(h)) {
				r->offset += sizeof(*h);
				return 1;
			}
		}
	}
	r->st.skipped_bytes += have;
	r->offset += have;
	return 0;
}

/*
 * A good chunk header with sequence number seq was found (after a bad one
 * when resynced): the chunks between the last one seen and it are lost.
 * Counting by sequence numbers counts each lost chunk once, however many
 * of its bytes were damaged.
 */
static void chunks_lost_before(struct gp_capture_reader *r, __u32 seq, bool resynced)
{
	__u64 lost = seq > r->next_seq ? seq - r->next_seq : 0;

	if (!lost && resynced)
		lost = 1; /* damaged bytes that were no chunk of the sequence: counted once */
	if (lost) {
		r->st.corrupt_chunks += lost;
		set_corrupt(
			r,
			"chunks %llu to %llu are missing or unreadable: skipped, the chunks after them are kept",
			(unsigned long long)r->next_seq,
			(unsigned long long)r->next_seq + lost - 1);
	}
	if (seq >= r->next_seq)
		r->next_seq = seq;
}

/*
 * A chunk's zlib stream inflated to exactly raw_len bytes into r->raw. Its
 * compressed bytes were checked against the chunk's crc32, so the stream's
 * own adler32 of the inflated bytes (a sixth of a report's reading time) is
 * not computed again: the zlib header is checked and skipped, the deflate
 * data inflated raw, the trailer left unread.
 */
static int inflate_zlib(struct gp_capture_reader *r, size_t zlen, size_t raw_len)
{
	const unsigned char *z = r->z;

	if (zlen < 2 + 4 || (z[0] & 0x0f) != Z_DEFLATED || (z[0] >> 4) > 7 || (z[1] & 0x20) ||
	    ((unsigned)z[0] << 8 | z[1]) % 31)
		return -EINVAL;
	if (!r->zs_ready) {
		if (inflateInit2(&r->zs, -15) != Z_OK)
			return -ENOMEM;
		r->zs_ready = true;
	} else if (inflateReset(&r->zs) != Z_OK) {
		return -EINVAL;
	}
	r->zs.next_in = (Bytef *)z + 2;
	r->zs.avail_in = (uInt)(zlen - 2);
	r->zs.next_out = r->raw;
	r->zs.avail_out = (uInt)raw_len;
	return inflate(&r->zs, Z_FINISH) == Z_STREAM_END && r->zs.total_out == raw_len ? 0
										       : -EINVAL;
}

/*
 * Chunk h's data (r->z) decompressed by its kind into r->raw: exactly
 * h->raw_len bytes (0), not that (-EINVAL: a corrupt chunk), or -ENOMEM.
 */
static int inflate_chunk(struct gp_capture_reader *r, const struct gp_cap_chunk *h)
{
	if (h->magic == GP_CAP_CHUNK_ZSTD) {
		size_t n;

		if (!r->zctx && !(r->zctx = ZSTD_createDCtx()))
			return -ENOMEM;
		n = ZSTD_decompressDCtx(r->zctx, r->raw, h->raw_len, r->z, h->zlen);
		return !ZSTD_isError(n) && n == h->raw_len ? 0 : -EINVAL;
	}
	return inflate_zlib(r, h->zlen, h->raw_len);
}

/* Reads the next good chunk into r->raw. 1, 0 at the end of the file, -errno. */
static int next_chunk(struct gp_capture_reader *r)
{
	struct gp_cap_chunk h;

	for (;;) {
		__u64 at = r->offset;
		size_t n = fread(&h, 1, sizeof(h), r->f);
		bool resynced = false;

		if (n == 0) {
			if (ferror(r->f))
				return -EIO;
			return 0;
		}
		if (n < sizeof(h)) {
			set_cut(r,
				"the capture is cut inside the header of chunk %llu at byte %llu",
				(unsigned long long)r->next_seq, (unsigned long long)at);
			r->offset += n;
			return 0;
		}
		r->offset += sizeof(h);
		if (!chunk_header_ok(&h)) {
			set_corrupt(
				r,
				"a corrupt chunk header at byte %llu: skipped to the next good chunk",
				(unsigned long long)at);
			if (!resync(r, &h, at + 1)) {
				r->st.corrupt_chunks++; /* the chunk of that header: no good one follows */
				return 0;
			}
			resynced = true;
			at = r->offset - sizeof(h);
		}
		chunks_lost_before(r, h.seq, resynced);
		if (grow(&r->z, &r->z_cap, h.zlen) || grow(&r->raw, &r->raw_cap, h.raw_len))
			return -ENOMEM;
		n = fread(r->z, 1, h.zlen, r->f);
		r->offset += n;
		if (n < h.zlen) {
			if (ferror(r->f))
				return -EIO;
			set_cut(r,
				"the capture is cut inside chunk %u at byte %llu (%zu of its %u bytes are there)",
				h.seq, (unsigned long long)at, n, h.zlen);
			return 0;
		}

		size_t raw_len = h.raw_len;

		int inflated = h.data_crc == (__u32)crc32(0, r->z, h.zlen) ? inflate_chunk(r, &h)
									   : -EINVAL;

		if (inflated == -ENOMEM)
			return -ENOMEM;
		if (inflated || !ops_ok(r->raw, raw_len)) {
			r->st.corrupt_chunks++;
			set_corrupt(
				r,
				"chunk %u (byte %llu) is corrupt: skipped, the chunks after it are kept",
				h.seq, (unsigned long long)at);
			if (h.seq >=
			    r->next_seq) /* counted: not lost again when the next one comes */
				r->next_seq = (__u64)h.seq + 1;
			continue;
		}
		r->next_seq = (__u64)h.seq + 1;
		r->raw_len = raw_len;
		r->pos = 0;
		r->st.chunks++;
		return 1;
	}
}

int gp_capture_next(struct gp_capture_reader *r, unsigned *op, const void **data, size_t *len)
{
	struct gp_cap_op_hdr h;

	while (!r->done) {
		if (r->pos >= r->raw_len) {
			int rc = next_chunk(r);

			if (rc <= 0) {
				r->done = true;
				if (rc == 0 && !r->st.complete)
					set_cut(r,
						"the capture ends at byte %llu without its end record (gpuprobed was "
						"killed or the disk filled): this is what was recorded until then",
						(unsigned long long)r->offset);
				return rc;
			}
			continue;
		}
		memcpy(&h, r->raw + r->pos, sizeof(h)); /* ops_ok checked the chunk's layout */
		r->pos += sizeof(h);
		*data = r->raw + r->pos;
		*len = h.len;
		r->pos += h.len;
		if (h.op == GP_MOP_END) {
			r->st.complete = true;
			r->done = true;
			return 0;
		}
		*op = h.op;
		r->st.ops++;
		return 1;
	}
	return 0;
}
