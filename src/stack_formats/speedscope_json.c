/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * speedscope_json.c — the stack paths (stack_paths.h) as a speedscope file
 * (https://www.speedscope.app/file-format-schema.json): one shared frame
 * table and one "sampled" profile per weight, so that the same file shows
 * GPU work by calls, by bytes and by host time. A "sample" here is a call
 * path and its weight the path's total, not a timed sample: speedscope's
 * left-heavy and sandwich views are exact, its time-order view is not a
 * timeline.
 *
 * Frames are deduplicated by name, in the order the paths first use them,
 * and each profile lists only the paths with a weight in it (speedscope
 * rejects negative weights and has no use for zero ones). Written compact:
 * one index per frame per path would make an indented file mostly blanks.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>

#include <jansson.h>

#include "stack_formats/stack_paths.h"
#include "text/text_clean.h"

#ifndef GP_VERSION
#define GP_VERSION "unknown"
#endif

static const struct {
	const char *name, *unit;
} profiles[GP_W_MAX] = {
	[GP_W_CALLS] = { "GPU work by calls", "none" },
	[GP_W_BYTES] = { "GPU work by bytes", "bytes" },
	[GP_W_HOST_NS] = { "GPU work by host time", "nanoseconds" },
};

/* JSON numbers are read as doubles anyway; past 2^63 is past anything real */
static json_int_t clamp(__u64 v)
{
	return v > LLONG_MAX ? LLONG_MAX : (json_int_t)v;
}

/* The frame's index in the shared table, added on first use; -1 when out of memory. */
static json_int_t frame_index(json_t *frames, json_t *index, const char *raw)
{
	char *name = gp_text_clean(raw);
	json_t *known, *frame;
	json_int_t i = -1;

	if (!name)
		return -1;
	known = json_object_get(index, name);
	if (known) {
		i = json_integer_value(known);
	} else {
		frame = json_pack("{s:s}", "name", name);
		i = (json_int_t)json_array_size(frames);
		if (!frame || json_array_append_new(frames, frame) ||
		    json_object_set_new(index, name, json_integer(i)))
			i = -1;
	}
	free(name);
	return i;
}

static bool in_a_profile(const struct gp_path *path)
{
	int w;

	for (w = 0; w < GP_W_MAX; w++)
		if (path->w[w])
			return true;
	return false;
}

/* The stack of each path (root first) as a JSON array, shared by the profiles. */
static json_t *stacks(const struct gp_paths *p, json_t *frames)
{
	json_t *all = json_array(), *index = json_object();
	size_t i, j;

	if (!all || !index)
		goto fail;
	for (i = 0; i < p->n; i++) {
		const struct gp_path *path = &p->v[i];
		json_t *stack = json_array();

		if (!stack || json_array_append_new(all, stack))
			goto fail;
		if (!in_a_profile(path))
			continue; /* its frames stay out of the table */
		for (j = 0; j < path->nframes; j++) {
			json_int_t f = frame_index(frames, index, path->frames[j]);

			if (f < 0 || json_array_append_new(stack, json_integer(f)))
				goto fail;
		}
	}
	json_decref(index);
	return all;
fail:
	json_decref(index);
	json_decref(all);
	return NULL;
}

static json_t *profile(const struct gp_paths *p, enum gp_weight w, json_t *stacks_of)
{
	json_t *samples = json_array(), *weights = json_array();
	__u64 total = 0;
	size_t i;

	if (!samples || !weights)
		goto fail;
	for (i = 0; i < p->n; i++) {
		__u64 v = p->v[i].w[w];

		if (!v || !p->v[i].nframes)
			continue;
		total = total + v < total ? ~0ULL : total + v;
		if (json_array_append(samples, json_array_get(stacks_of, i)) ||
		    json_array_append_new(weights, json_integer(clamp(v))))
			goto fail;
	}
	return json_pack("{s:s, s:s, s:s, s:i, s:I, s:o, s:o}", "type", "sampled", "name",
			 profiles[w].name, "unit", profiles[w].unit, "startValue", 0, "endValue",
			 clamp(total), "samples", samples, "weights", weights);
fail:
	json_decref(samples);
	json_decref(weights);
	return NULL;
}

int gp_speedscope_write(const struct gp_paths *p, const char *name, FILE *out)
{
	json_t *frames = json_array(), *list = json_array(), *stacks_of = NULL, *doc = NULL;
	char *clean_name = gp_text_clean(name ? name : "gpuprobed");
	int err = -ENOMEM;
	enum gp_weight w;

	if (!frames || !list || !clean_name)
		goto out;
	stacks_of = stacks(p, frames);
	if (!stacks_of)
		goto out;
	for (w = 0; w < GP_W_MAX; w++)
		if (json_array_append_new(list, profile(p, w, stacks_of)))
			goto out;
	doc = json_pack("{s:s, s:{s:O}, s:O, s:s, s:i, s:s}", "$schema",
			"https://www.speedscope.app/file-format-schema.json", "shared", "frames",
			frames, "profiles", list, "name", clean_name, "activeProfileIndex", 0,
			"exporter", "gpuprobed " GP_VERSION);
	if (!doc)
		goto out;
	err = 0;
	if (json_dumpf(doc, out, JSON_COMPACT) || fputc('\n', out) == EOF || fflush(out) ||
	    ferror(out))
		err = -(errno ? errno : EIO);
out:
	json_decref(doc);
	json_decref(stacks_of);
	json_decref(list);
	json_decref(frames);
	free(clean_name);
	return err;
}
