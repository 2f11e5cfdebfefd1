/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * capture_reader.h — reads a capture file (capture_format.h) one model
 * operation at a time, with bounded memory: one chunk inflated at a time.
 * A chunk that fails its checks is skipped and counted, and reading goes on
 * at the next chunk that passes them; a file that ends early (gpuprobed
 * killed, disk full) yields every complete chunk and says what was cut.
 */
#ifndef GP_CAPTURE_READER_H
#define GP_CAPTURE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "capture/capture_format.h"

struct gp_capture_reader;

struct gp_capture_stats {
	__u64 chunks;	      /* chunks read whole */
	__u64 corrupt_chunks; /* chunks skipped: bad checksum, bad zlib data, bad operation inside */
	__u64 skipped_bytes;  /* file bytes skipped looking for the next good chunk */
	__u64 ops;	      /* operations returned */
	__u64 file_bytes;     /* size of the file */
	bool complete;	      /* the end operation was read */
	char cut[256];	      /* !complete: where and how the file ends, for humans; "" otherwise */
	char corruption[256]; /* corrupt_chunks: the first one, for humans; "" otherwise */
};

/*
 * Opens path. NULL with errmsg (errlen bytes) filled: it cannot be read,
 * it is not a capture, or its format version is newer than this reader's.
 */
struct gp_capture_reader *gp_capture_open(const char *path, char *errmsg, size_t errlen);
const struct gp_cap_header *gp_capture_header(const struct gp_capture_reader *r);
/*
 * The next operation: 1 with *op (enum gp_model_op) and its payload
 * (*data, *len; valid until the next call), 0 at the end (complete or cut:
 * see the stats), -errno on an I/O error.
 */
int gp_capture_next(struct gp_capture_reader *r, unsigned *op, const void **data, size_t *len);
const struct gp_capture_stats *gp_capture_stats(const struct gp_capture_reader *r);
void gp_capture_close(struct gp_capture_reader *r); /* NULL is a no-op */

#endif /* GP_CAPTURE_READER_H */
