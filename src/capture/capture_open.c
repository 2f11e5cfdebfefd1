/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * capture_open.c — a capture opened into a fresh model (capture_open.h):
 * the reader, the recorded answers and the model made, the caller's
 * observers and hooks around the operations applied one by one, what the
 * file lacked said, the model finished.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "capture/capture_open.h"
#include "log.h"

void gp_capture_say_lacks(const struct gp_capture_reader *r, const char *path,
			  enum gp_capture_voice v)
{
	const struct gp_capture_stats *cs = gp_capture_stats(r);

	if (!cs->complete)
		gp_warn(v == GP_CAPTURE_EXPORTING ? "%s: %s (exported what it holds)" : "%s: %s",
			path, cs->cut);
	if (cs->corrupt_chunks)
		gp_warn("%s: %llu corrupt chunk%s skipped: %s", path,
			(unsigned long long)cs->corrupt_chunks, cs->corrupt_chunks == 1 ? "" : "s",
			cs->corruption);
}

/* What the reading left out, said after the last operation. */
static void say_read(const struct gp_capture_model *cm, const char *path, enum gp_capture_voice v)
{
	if (v == GP_CAPTURE_QUIET)
		return;
	if (cm->read_err < 0)
		gp_err(v == GP_CAPTURE_EXPORTING ? "%s: %s (exporting what was read before it)"
						 : "%s: %s (reporting what was read before it)",
		       path, strerror(-cm->read_err));
	if (cm->reader)
		gp_capture_say_lacks(cm->reader, path, v);
	if (cm->stats.malformed)
		gp_warn("%s: %llu operations did not decode and were skipped", path,
			(unsigned long long)cm->stats.malformed);
}

/* The count of what was read, after the model is finished (report, merge). */
static void say_counts(const struct gp_capture_model *cm, const char *path)
{
	const struct gp_capture_stats *cs = gp_capture_stats(cm->reader);

	gp_info("%s: %llu operations in %llu chunks (%llu applied, %llu resolver answers)", path,
		(unsigned long long)cs->ops, (unsigned long long)cs->chunks,
		(unsigned long long)cm->stats.applied, (unsigned long long)cm->stats.answers);
}

/* The reader, the answers and a model whose resolver gives them. 0, -EINVAL (said) or -ENOMEM. */
static int make(const char *path, const struct gp_capture_open_opts *o, struct gp_capture_model *cm,
		char *errmsg, size_t errlen)
{
	struct gp_resolver resolver;

	if (o->reader) {
		cm->reader = o->reader;
	} else if (!o->next) {
		cm->reader = gp_capture_open(path, errmsg, errlen);
		if (!cm->reader) {
			if (o->voice != GP_CAPTURE_QUIET)
				gp_err("%s", errmsg);
			return -EINVAL;
		}
		cm->own_reader = true;
	}
	cm->answers = gp_answers_new();
	resolver = gp_answers_resolver(cm->answers);
	cm->model = cm->answers ? gp_model_new(&resolver) : NULL;
	return cm->model ? 0 : -ENOMEM;
}

/* Every operation applied and counted, between the caller's hooks. 0, or applied's nonzero. */
static int apply_all(const struct gp_capture_open_opts *o, struct gp_capture_model *cm)
{
	unsigned op;
	const void *data;
	size_t len;
	int rc;

	while ((rc = cm->reader ? gp_capture_next(cm->reader, &op, &data, &len)
				: o->next(o->next_ctx, &op, &data, &len)) > 0) {
		int err, stop;

		if (o->more && !o->more(o->ctx))
			return 0;
		err = gp_capture_apply(cm->model, cm->answers, op, data, len);
		gp_capture_load_count(&cm->stats, op, err);
		if (o->applied && (stop = o->applied(o->ctx, op, data, len, err)))
			return stop;
	}
	cm->read_err = rc;
	return 0;
}

int gp_capture_open_model(const char *path, const struct gp_capture_open_opts *o,
			  struct gp_capture_model *cm, char *errmsg, size_t errlen)
{
	size_t attached = 0;
	int rc, done_rc = 0;

	*cm = (struct gp_capture_model){ 0 };
	if ((rc = make(path, o, cm, errmsg, errlen)) ||
	    (o->ready && (rc = o->ready(o->ctx, cm->model))))
		return rc;
	while (attached < o->nobservers &&
	       !(rc = gp_model_add_observer(cm->model, &o->observers[attached])))
		attached++;
	if (!rc)
		rc = apply_all(o, cm);
	if (!rc && o->done)
		done_rc = o->done(o->ctx);
	while (attached)
		gp_model_remove_observer(cm->model, o->observers[--attached].ctx);
	if (rc) /* stopped by a hook (or no room for an observer): nothing said */
		return rc;
	say_read(cm, path, o->voice);
	if (done_rc)
		return done_rc;
	if (o->finish && cm->reader)
		gp_capture_finish(cm->model, cm->reader, path);
	if (o->voice == GP_CAPTURE_REPORTING && cm->reader)
		say_counts(cm, path);
	return 0;
}

void gp_capture_model_close(struct gp_capture_model *cm)
{
	gp_model_free(cm->model);
	gp_answers_free(cm->answers);
	if (cm->own_reader)
		gp_capture_close(cm->reader);
	*cm = (struct gp_capture_model){ 0 };
}
