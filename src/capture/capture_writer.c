/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * capture_writer.c — the capture file's writer (capture_writer.h): the
 * consumer fills chunks, one thread compresses and writes them in order.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "capture/capture_writer.h"
#include "model/model_ops.h"

struct chunk_buf {
	unsigned char *raw;
	size_t len, cap;
	__u64 nops;
};

struct gp_capture_writer {
	int fd;
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;
	pthread_cond_t work; /* a chunk was queued, or stop */
	pthread_cond_t room; /* a chunk was given back */
	struct chunk_buf bufs[GP_CAP_WRITER_CHUNKS];
	int free_list[GP_CAP_WRITER_CHUNKS], nfree;
	int queue[GP_CAP_WRITER_CHUNKS], qhead, qlen; /* full chunks, oldest first */
	int cur;				      /* being filled by the consumer; -1: none */
	bool stop;
	__u32 submitted; /* chunks handed to the thread: the next one's seq */
	/* the consumer's */
	__u64 ops, consumer_lost, waits;
	/* the thread's (under lock) */
	__u64 thread_lost, chunks, raw_bytes, file_bytes;
	int err;
	unsigned char *zbuf; /* the thread's compression buffer */
	size_t zcap;
	ZSTD_CCtx *zctx; /* the thread's compressor, kept across chunks */
};

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t k = write(fd, c, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -EIO;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Compresses and writes one chunk; 0 or -errno. Called by the thread without the lock. */
static int write_chunk(struct gp_capture_writer *w, const struct chunk_buf *b, __u32 seq,
		       __u64 *file_bytes)
{
	struct gp_cap_chunk h = { .magic = GP_CAP_CHUNK_ZSTD,
				  .seq = seq,
				  .raw_len = (__u32)b->len };
	size_t zlen = ZSTD_compressBound(b->len);

	if (zlen > w->zcap) {
		unsigned char *z = realloc(w->zbuf, zlen);

		if (!z)
			return -ENOMEM;
		w->zbuf = z;
		w->zcap = zlen;
	}
	if (!w->zctx && !(w->zctx = ZSTD_createCCtx()))
		return -ENOMEM;
	/* level 1: keeps up with the ring, and packs these records tighter than zlib's level 1 did */
	zlen = ZSTD_compressCCtx(w->zctx, w->zbuf, w->zcap, b->raw, b->len, 1);
	if (ZSTD_isError(zlen))
		return -ENOMEM;
	h.zlen = (__u32)zlen;
	h.data_crc = (__u32)crc32(0, w->zbuf, (uInt)zlen);
	h.hdr_crc = (__u32)crc32(0, (const Bytef *)&h, offsetof(struct gp_cap_chunk, hdr_crc));

	int err = write_all(w->fd, &h, sizeof(h));

	if (!err)
		err = write_all(w->fd, w->zbuf, zlen);
	if (!err)
		*file_bytes += sizeof(h) + zlen;
	return err;
}

static void *writer_thread(void *arg)
{
	struct gp_capture_writer *w = arg;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->qlen && !w->stop)
			pthread_cond_wait(&w->work, &w->lock);
		if (!w->qlen)
			break; /* stopped and drained */

		int i = w->queue[w->qhead];
		__u32 seq = w->submitted - (__u32)w->qlen;
		struct chunk_buf *b = &w->bufs[i];
		__u64 file_bytes = 0;
		int err = w->err;

		w->qhead = (w->qhead + 1) % GP_CAP_WRITER_CHUNKS;
		w->qlen--;
		pthread_mutex_unlock(&w->lock);
		if (!err) /* after a failed write the file ends there: later chunks could not be found */
			err = write_chunk(w, b, seq, &file_bytes);
		pthread_mutex_lock(&w->lock);
		if (err) {
			if (!w->err)
				w->err = err;
			w->thread_lost += b->nops;
		} else {
			w->chunks++;
			w->raw_bytes += b->len;
			w->file_bytes += file_bytes;
		}
		b->len = 0;
		b->nops = 0;
		w->free_list[w->nfree++] = i;
		pthread_cond_signal(&w->room);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* Hands the current chunk to the thread. Called by the consumer. */
static void submit(struct gp_capture_writer *w)
{
	if (w->cur < 0)
		return;
	pthread_mutex_lock(&w->lock);
	w->queue[(w->qhead + w->qlen) % GP_CAP_WRITER_CHUNKS] = w->cur;
	w->qlen++;
	w->submitted++;
	w->cur = -1;
	pthread_cond_signal(&w->work);
	pthread_mutex_unlock(&w->lock);
}

/* A chunk to fill, waiting for the thread when every chunk is queued. */
static struct chunk_buf *current(struct gp_capture_writer *w)
{
	if (w->cur >= 0)
		return &w->bufs[w->cur];
	pthread_mutex_lock(&w->lock);
	if (!w->nfree)
		w->waits++;
	while (!w->nfree)
		pthread_cond_wait(&w->room, &w->lock);
	w->cur = w->free_list[--w->nfree];
	pthread_mutex_unlock(&w->lock);
	return &w->bufs[w->cur];
}

void gp_capture_writer_op(void *writer, unsigned op, const void *data, size_t len)
{
	struct gp_capture_writer *w = writer;
	struct gp_cap_op_hdr h = { .op = (__u16)op, .len = (__u32)len };
	size_t need = sizeof(h) + len;
	struct chunk_buf *b;

	if (!data || len > GP_CAP_OP_MAX) {
		w->consumer_lost++;
		return;
	}
	b = current(w);
	if (b->len && b->len + need > GP_CAP_CHUNK_RAW) {
		submit(w);
		b = current(w);
	}
	if (b->len + need >
	    b->cap) { /* one operation larger than a chunk gets a chunk of its own size */
		unsigned char *raw = realloc(b->raw, b->len + need);

		if (!raw) {
			w->consumer_lost++;
			return;
		}
		b->raw = raw;
		b->cap = b->len + need;
	}
	memcpy(b->raw + b->len, &h, sizeof(h));
	if (len)
		memcpy(b->raw + b->len + sizeof(h), data, len);
	b->len += need;
	b->nops++;
	w->ops++;
}

static void writer_free(struct gp_capture_writer *w)
{
	for (int i = 0; i < GP_CAP_WRITER_CHUNKS; i++)
		free(w->bufs[i].raw);
	free(w->zbuf);
	ZSTD_freeCCtx(w->zctx);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->work);
	pthread_cond_destroy(&w->room);
	free(w);
}

struct gp_capture_writer *gp_capture_writer_open(const char *path, const struct gp_cap_header *hdr,
						 char *errmsg, size_t errlen)
{
	struct gp_capture_writer *w = calloc(1, sizeof(*w));
	struct gp_cap_header h = *hdr;
	int err;

	if (!w) {
		snprintf(errmsg, errlen, "%s: out of memory", path);
		return NULL;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->work, NULL);
	pthread_cond_init(&w->room, NULL);
	w->cur = -1;
	for (int i = 0; i < GP_CAP_WRITER_CHUNKS; i++) {
		w->bufs[i].cap = GP_CAP_CHUNK_RAW;
		w->bufs[i].raw = malloc(GP_CAP_CHUNK_RAW);
		if (!w->bufs[i].raw) {
			snprintf(errmsg, errlen, "%s: out of memory", path);
			goto err_free;
		}
		w->free_list[w->nfree++] = i;
	}
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		snprintf(errmsg, errlen, "%s: %s", path, strerror(errno));
		goto err_free;
	}
	memcpy(h.magic, GP_CAP_MAGIC, sizeof(h.magic));
	h.version = GP_CAP_VERSION;
	h.header_size = sizeof(h);
	h.pad = 0;
	h.header_crc =
		(__u32)crc32(0, (const Bytef *)&h, offsetof(struct gp_cap_header, header_crc));
	err = write_all(w->fd, &h, sizeof(h));
	if (err) {
		snprintf(errmsg, errlen, "%s: %s", path, strerror(-err));
		goto err_close;
	}
	w->file_bytes = sizeof(h);
	err = pthread_create(&w->thread, NULL, writer_thread, w);
	if (err) {
		snprintf(errmsg, errlen, "%s: cannot start its writer thread: %s", path,
			 strerror(err));
		goto err_close;
	}
	w->thread_started = true;
	return w;
err_close:
	close(w->fd);
	unlink(path);
err_free:
	writer_free(w);
	return NULL;
}

void gp_capture_writer_stats(struct gp_capture_writer *w, struct gp_capture_writer_stats *st)
{
	pthread_mutex_lock(&w->lock);
	*st = (struct gp_capture_writer_stats){
		.ops = w->ops - w->thread_lost,
		.lost_ops = w->consumer_lost + w->thread_lost,
		.chunks = w->chunks,
		.raw_bytes = w->raw_bytes,
		.file_bytes = w->file_bytes,
		.waits = w->waits,
		.err = w->err,
	};
	pthread_mutex_unlock(&w->lock);
}

int gp_capture_writer_close(struct gp_capture_writer *w, struct gp_capture_writer_stats *st)
{
	struct gp_capture_writer_stats s;
	unsigned char end[16];
	__u64 n_ops = w->ops, n_chunks = w->submitted;
	int err;

	memcpy(end, &n_ops, 8);
	memcpy(end + 8, &n_chunks, 8);
	gp_capture_writer_op(w, GP_MOP_END, end, sizeof(end));
	submit(w);
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_signal(&w->work);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	if (close(w->fd) && !w->err)
		w->err = -errno;
	gp_capture_writer_stats(w, &s);
	if (s.err) /* the end record is not the session's: counted neither way */
		s.lost_ops--;
	else
		s.ops--;
	err = s.err;
	if (st)
		*st = s;
	writer_free(w);
	return err;
}
