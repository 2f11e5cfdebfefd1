/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * capture_live.h — a live session's capture: the file opened before the
 * model exists (the model's resolver is wrapped to record its answers), the
 * model tapped, and at the end the file closed and the model told where its
 * records went (report.json "source").
 */
#ifndef GP_CAPTURE_LIVE_H
#define GP_CAPTURE_LIVE_H

#include <limits.h>
#include <stdbool.h>

#include "capture/capture_resolver.h"
#include "capture/capture_writer.h"
#include "model/model.h"

struct gp_capture_live {
	struct gp_capture_writer *w; /* NULL: no capture */
	struct gp_recording_resolver rr;
	char path[PATH_MAX];
};

/*
 * Creates path and wraps *resolver so that its answers are recorded (the
 * model must be created with the wrapped one). 0, or -errno after a message.
 */
int gp_capture_live_open(struct gp_capture_live *cl, const char *path,
			 struct gp_resolver *resolver);
/* Every maps snapshot sym takes goes into the capture too (GP_MOP_MAPS: for readers of the file). */
struct gp_symbolizer;
void gp_capture_live_maps(struct gp_capture_live *cl, struct gp_symbolizer *sym);
/* Every operation of m from now on goes into the capture. */
void gp_capture_live_tap(struct gp_capture_live *cl, struct gp_model *m);
/* Ends the capture (after m's last operation), tells m (source), says what was written. 0 or -1. */
int gp_capture_live_close(struct gp_capture_live *cl, struct gp_model *m);
/* The session failed before it traced anything: no capture is left behind. */
void gp_capture_live_abort(struct gp_capture_live *cl);

#endif /* GP_CAPTURE_LIVE_H */
