/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * capture_writer.h — writes a capture file (capture_format.h) as the session
 * goes: model operations are appended to a chunk in memory; full chunks are
 * compressed and written by a thread of their own, so the consumer of the
 * ring buffer only copies bytes. Memory is bounded (GP_CAP_WRITER_CHUNKS
 * chunks in flight); when every chunk is queued the consumer waits for the
 * writer (back-pressure, which the ring buffer absorbs and counts as
 * ringbuf_full), so the capture and the live model never differ. A write
 * error (disk full) ends the file there; what follows is counted as lost.
 */
#ifndef GP_CAPTURE_WRITER_H
#define GP_CAPTURE_WRITER_H

#include <stddef.h>
#include <linux/types.h>

#include "capture/capture_format.h"

#define GP_CAP_WRITER_CHUNKS 8

struct gp_capture_writer;

struct gp_capture_writer_stats {
	__u64 ops;	  /* operations written */
	__u64 lost_ops;	  /* operations not written: a write failed (disk full) or out of memory */
	__u64 chunks;	  /* chunks written */
	__u64 raw_bytes;  /* operations' bytes before compression */
	__u64 file_bytes; /* bytes in the file */
	__u64 waits;	  /* times the consumer waited for the compressing thread */
	int err;	  /* first write error (-errno), 0 when none */
};

/*
 * Creates path (truncating it) and writes the file header: *hdr with magic,
 * version, sizes and checksum filled in here. NULL with errmsg filled.
 */
struct gp_capture_writer *gp_capture_writer_open(const char *path, const struct gp_cap_header *hdr,
						 char *errmsg, size_t errlen);
/* Appends one operation (a struct gp_model_tap's record: ctx is the writer). data NULL: lost. */
void gp_capture_writer_op(void *writer, unsigned op, const void *data, size_t len);
/* Current counts (the compressing thread's are as of its last chunk). */
void gp_capture_writer_stats(struct gp_capture_writer *w, struct gp_capture_writer_stats *st);
/*
 * Appends the end operation, writes what is left, closes the file and frees
 * w. *st (may be NULL) gets the final counts. 0, or the first write error.
 */
int gp_capture_writer_close(struct gp_capture_writer *w, struct gp_capture_writer_stats *st);

#endif /* GP_CAPTURE_WRITER_H */
