/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * capture_load.h — rebuilds a model from a capture: every recorded model
 * operation applied in order to a fresh model whose resolver gives the
 * recorded answers, so that the model (and every report of it) is the one
 * the live session had.
 */
#ifndef GP_CAPTURE_LOAD_H
#define GP_CAPTURE_LOAD_H

#include <linux/types.h>

#include "capture/capture_reader.h"
#include "capture/capture_resolver.h"
#include "model/model.h"

struct gp_capture_load_stats {
	__u64 applied;	 /* operations applied to the model */
	__u64 answers;	 /* resolver answers kept */
	__u64 malformed; /* operations whose payload did not decode: skipped */
	__u64 ignored;	 /* operations for readers only (maps snapshots) */
};

/*
 * Applies one operation to m (answers to as). 0, 1 when it is read and left alone, -EINVAL when
 * malformed, -ENOSYS when no step knows it (an operation of a newer gpuprobed).
 */
int gp_capture_apply(struct gp_model *m, struct gp_answers *as, unsigned op, const void *data,
		     size_t len);
/* One operation applied with err (gp_capture_apply's) counted in st. */
void gp_capture_load_count(struct gp_capture_load_stats *st, unsigned op, int err);
/* Reads r to its end into m. 0, or -errno on an I/O error (what was read is in m). */
int gp_capture_load(struct gp_capture_reader *r, struct gp_model *m, struct gp_answers *as,
		    struct gp_capture_load_stats *st);

/*
 * After gp_capture_load: what every reader of a capture does before writing
 * reports. A cut capture's session ends at its last record; stacks are
 * named (again: a cut capture may not have reached its symbolization); the
 * model learns its source (path, and what r could not read). A command
 * opens a capture into a model with capture_open.h, which does all this.
 */
void gp_capture_finish(struct gp_model *m, const struct gp_capture_reader *r, const char *path);

#endif /* GP_CAPTURE_LOAD_H */
