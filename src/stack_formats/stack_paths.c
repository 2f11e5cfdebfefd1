/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * stack_paths.c — the model's stacks as root-to-leaf paths of frame names
 * (see stack_paths.h), the order stacks are listed in, and the folded-stacks
 * writer. Each frame of a process is named once (its label is shared by
 * every path through it).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "model/u64map.h"
#include "model/view.h"
#include "stack_formats/stack_paths.h"
#include "text/labels.h"

/* Building state: labels interned (so equal paths are equal pointer arrays) and paths merged. */
struct builder {
	struct gp_paths *ps;
	size_t cap;
	struct gp_u64map names; /* hash(label) -> char * */
	struct gp_u64map paths; /* hash(frame pointers) -> index + 1 */
};

static __u64 hash_bytes(const void *data, size_t n)
{
	const unsigned char *b = data;
	__u64 h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

const char *gp_weight_name(enum gp_weight w)
{
	switch (w) {
	case GP_W_CALLS:
		return "calls";
	case GP_W_BYTES:
		return "bytes";
	case GP_W_HOST_NS:
		return "ns";
	default:
		return "";
	}
}

static int cmp_stack(const void *a, const void *b)
{
	const struct gp_stack *x = *(const struct gp_stack *const *)a,
			      *y = *(const struct gp_stack *const *)b;

	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

const struct gp_stack **gp_sorted_stacks(const struct gp_process *p, size_t *n)
{
	const struct gp_stacks *s = &p->stacks;
	const struct gp_stack **v;

	*n = 0;
	if (!s->n && !s->overflow)
		return NULL;
	v = malloc((s->n + 1) * sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < s->n; i++)
		v[(*n)++] = s->v[i];
	if (s->overflow)
		v[(*n)++] = s->overflow;
	qsort(v, *n, sizeof(*v), cmp_stack);
	return v;
}

void gp_stack_root_label(const struct gp_process *p, char *buf, size_t len)
{
	snprintf(buf, len, "%s (pid %u)", p->comm && *p->comm ? p->comm : "?", p->pid);
}

static char *keep_name(struct gp_paths *ps, const char *s)
{
	char **v, *copy;

	if ((ps->nnames & (ps->nnames + 1)) == 0 || !ps->names) { /* grow at 0, 1, 3, 7, ... */
		v = realloc(ps->names, 2 * (ps->nnames + 1) * sizeof(*v));
		if (!v)
			return NULL;
		ps->names = v;
	}
	copy = strdup(s);
	if (copy)
		ps->names[ps->nnames++] = copy;
	return copy;
}

/* The one copy of label s (a new one when its hash is taken by another string). */
static const char *intern(struct builder *b, const char *s)
{
	__u64 h = hash_bytes(s, strlen(s));
	char *hit = gp_u64map_get(&b->names, h);

	if (hit && !strcmp(hit, s))
		return hit;
	hit = keep_name(b->ps, s);
	if (hit && !gp_u64map_get(&b->names, h))
		gp_u64map_put(&b->names, h, hit); /* on failure: just not shared */
	return hit;
}

/* Adds r's weights to the path frames[0..n), merged with an equal one; a new path copies frames. */
static int add_path(struct builder *b, const char *const *frames, size_t n,
		    const struct gp_stack_op *r)
{
	struct gp_paths *ps = b->ps;
	__u64 h = hash_bytes(frames, n * sizeof(*frames));
	void *hit = gp_u64map_get(&b->paths, h);
	struct gp_path *path = hit ? &ps->v[(size_t)(uintptr_t)hit - 1] : NULL;

	if (!path || path->nframes != n || memcmp(path->frames, frames, n * sizeof(*frames))) {
		const char **copy;

		if (GP_ARRAY_GROW(ps->v, b->cap, ps->n + 1, 256))
			return -ENOMEM;
		if ((ps->nframe_arrays & (ps->nframe_arrays + 1)) == 0 || !ps->frame_arrays) {
			const char ***v =
				realloc(ps->frame_arrays, 2 * (ps->nframe_arrays + 1) * sizeof(*v));

			if (!v)
				return -ENOMEM;
			ps->frame_arrays = v;
		}
		copy = malloc(n * sizeof(*copy));
		if (!copy)
			return -ENOMEM;
		memcpy(copy, frames, n * sizeof(*copy));
		ps->frame_arrays[ps->nframe_arrays++] = copy;
		path = &ps->v[ps->n++];
		*path = (struct gp_path){ .frames = copy, .nframes = n };
		if (!hit)
			gp_u64map_put(
				&b->paths, h,
				(void *)(uintptr_t)ps->n); /* on failure: not merged, still right */
	}
	path->w[GP_W_CALLS] += r->calls;
	path->w[GP_W_BYTES] += r->bytes;
	path->w[GP_W_HOST_NS] += r->host_ns;
	return 0;
}

static int process_paths(const struct gp_model *m, const struct gp_process *p, struct builder *b)
{
	const struct gp_stacks *s = &p->stacks;
	const struct gp_stack **v;
	const char **labels = NULL, *root, *frames[GP_USTACK_MAX_FRAMES + GP_PY_MAX_FRAMES + 4];
	char buf[GP_NAME_BUF + 64];
	size_t n;
	int err = 0;

	v = gp_sorted_stacks(p, &n);
	if (!n)
		return 0;
	if (!v)
		return -ENOMEM;
	gp_stack_root_label(p, buf, sizeof(buf));
	for (char *c = buf; *c; c++)
		if (*c == ';' || *c == '\n')
			*c = ':';
	labels = calloc(s->nframes + 1, sizeof(*labels));
	if (!labels || !(root = intern(b, buf))) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < s->nframes && !err; i++) {
		gp_stack_frame_label(&s->frames[i], buf, sizeof(buf));
		if (!(labels[i] = intern(b, buf)))
			err = -ENOMEM;
	}
	for (size_t i = 0; i < n && !err; i++) {
		const struct gp_stack *k = v[i];
		size_t at = 0;

		frames[at++] = root;
		if (!k->nframes)
			frames[at++] = intern(b, "[stack table full]");
		else if (k->trunc != GP_TRUNC_NONE)
			frames[at++] = intern(b, "[truncated]");
		for (unsigned f = k->nsym; k->frame_ids && f-- > 0;)
			frames[at++] = labels[k->frame_ids[f]];
		for (__u32 j = 0; j < k->nops && !err; j++) {
			frames[at] = gp_apis[k->ops[j].api].symbol;
			gp_stack_op_label(m, p, &k->ops[j], buf, sizeof(buf));
			frames[at + 1] = intern(b, buf);
			err = frames[at + 1] && frames[1] ? add_path(b, frames, at + 2, &k->ops[j])
							  : -ENOMEM;
		}
	}
out:
	free(labels);
	free(v);
	return err;
}

int gp_paths_from_model(const struct gp_model *m, struct gp_paths *out)
{
	struct builder b = { .ps = out };
	int err = 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < m->nprocs && !err; i++)
		err = process_paths(m, m->procs[i], &b);
	gp_u64map_clear(&b.names, NULL);
	gp_u64map_clear(&b.paths, NULL);
	if (err)
		gp_paths_release(out);
	return err;
}

void gp_paths_release(struct gp_paths *p)
{
	for (size_t i = 0; i < p->nnames; i++)
		free(p->names[i]);
	for (size_t i = 0; i < p->nframe_arrays; i++)
		free(p->frame_arrays[i]);
	free(p->names);
	free(p->frame_arrays);
	free(p->v);
	memset(p, 0, sizeof(*p));
}

int gp_folded_write(const struct gp_paths *p, enum gp_weight w, FILE *out)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct gp_path *path = &p->v[i];

		if (!path->w[w])
			continue;
		for (size_t f = 0; f < path->nframes; f++)
			if (fputs(path->frames[f], out) == EOF ||
			    fputc(f + 1 < path->nframes ? ';' : ' ', out) == EOF)
				return -EIO;
		if (fprintf(out, "%llu\n", (unsigned long long)path->w[w]) < 0)
			return -EIO;
	}
	return 0;
}
