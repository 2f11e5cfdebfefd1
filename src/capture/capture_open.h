/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * capture_open.h — a capture opened into a fresh model: the one way every
 * reader of a capture (report, merge, export, the replay planner) builds
 * its model. The file opened (or operations from elsewhere), a model whose
 * resolver gives the recorded answers, observers attached, every operation
 * applied, what the file lacked said in the words of the command, the model
 * finished as a report needs it.
 */
#ifndef GP_CAPTURE_OPEN_H
#define GP_CAPTURE_OPEN_H

#include <stdbool.h>
#include <stddef.h>

#include "capture/capture_load.h"

/* What is said on stderr about the file read: each command's words (byte for byte as they were). */
enum gp_capture_voice {
	GP_CAPTURE_QUIET, /* nothing: the caller says what it needs */
	/* report, merge: "... (reporting what was read before it)", the operations counted */
	GP_CAPTURE_REPORTING,
	/* export: "... (exporting what was read before it)", "... (exported what it holds)" */
	GP_CAPTURE_EXPORTING,
};

/*
 * How a capture is opened. The operations: a reader opened already (merge
 * compares the files' headers first), else next (the replay planner's
 * source), else the file at path, opened here. Each hook is optional and
 * gets ctx: ready with the fresh model before the first operation (a
 * timeline attached, a database opened); more before each operation read
 * is applied (false: stop, that one not applied); applied after each
 * (err: gp_capture_apply's); done after the last, before anything is said.
 * Nonzero from ready or applied stops at once and is returned (nothing
 * said, no finish); nonzero from done is returned after what is said, with
 * no finish.
 */
struct gp_capture_open_opts {
	struct gp_capture_reader *reader;
	/* as gp_capture_next */
	int (*next)(void *next_ctx, unsigned *op, const void **data, size_t *len);
	void *next_ctx;
	/* attached in this order before the first operation, removed after the last */
	const struct gp_model_observer *observers;
	size_t nobservers;
	void *ctx;
	int (*ready)(void *ctx, struct gp_model *m);
	bool (*more)(void *ctx);
	int (*applied)(void *ctx, unsigned op, const void *data, size_t len, int err);
	int (*done)(void *ctx);
	enum gp_capture_voice voice;
	/* gp_capture_finish (a reader's): a cut session ended, stacks named, the source set */
	bool finish;
};

/* A capture in a model: the caller's until gp_capture_model_close. */
struct gp_capture_model {
	/* its header, what was read of it; NULL: operations from next */
	struct gp_capture_reader *reader;
	bool own_reader;	    /* opened here: closed with the model */
	struct gp_answers *answers; /* the resolver's recorded answers */
	struct gp_model *model;
	struct gp_capture_load_stats stats;
	int read_err; /* -errno: reading stopped on an I/O error (what was read is in the model) */
};

/*
 * What the file lacks said (a cut, corrupt chunks), in the words of v; the
 * replay says its capture's so.
 */
void gp_capture_say_lacks(const struct gp_capture_reader *r, const char *path,
			  enum gp_capture_voice v);

/*
 * 0 (an I/O error midway is cm->read_err, said unless QUIET); -EINVAL: path
 * is not a capture this gpuprobed reads (why in errmsg, said with gp_err
 * unless QUIET); -ENOMEM: no model could be made (not said); or a hook's
 * nonzero. *cm holds what was made either way: gp_capture_model_close it.
 */
int gp_capture_open_model(const char *path, const struct gp_capture_open_opts *o,
			  struct gp_capture_model *cm, char *errmsg, size_t errlen);
/* The model, the answers and a reader opened here freed; a reader given stays the caller's. */
void gp_capture_model_close(struct gp_capture_model *cm);

#endif /* GP_CAPTURE_OPEN_H */
