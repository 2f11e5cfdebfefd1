/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* replay_capture.c — a capture file as the plan's source of operations (capture_open.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "capture/capture_open.h"
#include "replay/replay.h"

static int next(void *ctx, unsigned *op, const void **data, size_t *len)
{
	return gp_capture_next(ctx, op, data, len);
}

int gp_replay_plan_file(const char *path, const struct gp_kernel_times *kt, struct gp_rplan *plan,
			char *errmsg, size_t errlen)
{
	char why[512];
	struct gp_capture_reader *r = gp_capture_open(path, why, sizeof(why));
	struct gp_op_source src;
	int rc;

	if (!r) {
		snprintf(errmsg, errlen, "%s", why);
		return -EINVAL;
	}
	src = (struct gp_op_source){ .ctx = r, .next = next };
	rc = gp_rplan_build(&src, kt, plan, errmsg, errlen); /* its model: capture_open.h */
	if (!rc) /* what it holds is replayed; say what it lacks */
		gp_capture_say_lacks(r, path, GP_CAPTURE_REPORTING);
	gp_capture_close(r);
	return rc;
}
