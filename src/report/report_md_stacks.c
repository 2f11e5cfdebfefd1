/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_md_stacks.c — "Who launches what": from a process's stacks, the
 * hottest call sites, and the heaviest call paths of each kernel and of each
 * kind of transfer (direction and host memory), HPCToolkit-style.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_md.h"

#define TOP_SITES   10
#define TOP_GROUPS  10 /* kernels / transfer kinds shown */
#define TOP_PATHS   3  /* paths per kernel / transfer kind */
#define PATH_FRAMES 6  /* frames shown of a path, from the call site outwards */

/*
 * A Python frame as labels.c names it in every other sink: "Model.forward
 * (train.py:13)", "helper (util.py)" (no line), "[python 0x7f…]" (no name).
 */
static void python_frame_text(const json_t *f, char *buf, size_t len)
{
	const char *fn = gp_md_str(f, "function"), *file = gp_md_str(f, "file"),
		   *base = strrchr(file, '/');
	json_int_t line = gp_md_int(f, "line");

	base = base ? base + 1 : file;
	if (!*fn)
		snprintf(buf, len, "[python %s]", gp_md_str(f, "address"));
	else if (*base && line > 0)
		snprintf(buf, len, "%s (%s:%lld)", fn, base, (long long)line);
	else if (*base)
		snprintf(buf, len, "%s (%s)", fn, base);
	else
		snprintf(buf, len, "%s", fn);
}

/*
 * "train_step" (with_offset: "train_step+0x2a"), "libfoo.so+0x1a2",
 * "Model.forward (train.py:13)", "[unknown]"
 */
static void frame_text(const json_t *frames, json_int_t id, bool with_offset, char *buf, size_t len)
{
	const json_t *f = json_array_get(frames, (size_t)id);
	const char *file = gp_md_str(f, "file"), *base = strrchr(file, '/');

	if (!strcmp(gp_md_str(f, "kind"), "python"))
		python_frame_text(f, buf, len);
	else if (*gp_md_str(f, "function") && with_offset)
		snprintf(buf, len, "%s+0x%llx", gp_md_str(f, "function"),
			 (unsigned long long)gp_md_int(f, "offset"));
	else if (*gp_md_str(f, "function"))
		snprintf(buf, len, "%s", gp_md_str(f, "function"));
	else if (*file)
		snprintf(buf, len, "%s+0x%llx", base ? base + 1 : file,
			 (unsigned long long)gp_md_int(f, "file_offset"));
	else
		snprintf(buf, len, "[unknown]");
}

static bool is_python(const json_t *frames, json_int_t id)
{
	return !strcmp(gp_md_str(json_array_get(frames, (size_t)id), "kind"), "python");
}

/* The index in stack's frames of its innermost Python frame, or -1. */
static long innermost_python(const json_t *frames, const json_t *ids)
{
	for (size_t i = 0; i < json_array_size(ids); i++)
		if (is_python(frames, json_integer_value(json_array_get(ids, i))))
			return (long)i;
	return -1;
}

/*
 * "main → step → launch" (outermost first, the last PATH_FRAMES frames); with
 * Python frames, the innermost PATH_FRAMES - 1 of them, then the call site:
 * "train (t.py:40) → Model.forward (t.py:13) → … → at::native::copy_+0x2a".
 */
static void path_text(const json_t *frames, const json_t *stack, char *buf, size_t len)
{
	const json_t *ids = json_object_get(stack, "frames");
	size_t n = json_array_size(ids), used = 0, from = n > PATH_FRAMES ? n - PATH_FRAMES : 0;
	long py = innermost_python(frames, ids);
	char f[512];

	buf[0] = '\0';
	if (!n) {
		snprintf(buf, len, "%s",
			 !strcmp(gp_md_str(stack, "truncated"), "table_full") ? "[stack table full]"
									      : "?");
		return;
	}
	if (*gp_md_str(stack, "truncated") || from || py > 0)
		used += (size_t)snprintf(buf, len, "%s… → ",
					 *gp_md_str(stack, "truncated") ? "[truncated] " : "");
	if (py > 0) { /* the Python frames (and native ones between them), then the call site */
		size_t last = (size_t)py + PATH_FRAMES - 1 < n ? (size_t)py + PATH_FRAMES - 1 : n;

		for (size_t i = last; i-- > (size_t)py && used < len;) {
			frame_text(frames, json_integer_value(json_array_get(ids, i)), false, f,
				   sizeof(f));
			used += (size_t)snprintf(buf + used, len - used, "%s → ", f);
		}
		if (used < len && (size_t)py > 1)
			used += (size_t)snprintf(buf + used, len - used, "… → ");
		if (used < len) {
			frame_text(frames, json_integer_value(json_array_get(ids, 0)), true, f,
				   sizeof(f));
			snprintf(buf + used, len - used, "%s", f);
		}
		return;
	}
	for (size_t i = n - from; i-- > 0 && used < len;) {
		frame_text(frames, json_integer_value(json_array_get(ids, i)), i == 0, f,
			   sizeof(f));
		used += (size_t)snprintf(buf + used, len - used, "%s%s", f, i ? " → " : "");
	}
}

struct site {
	json_int_t frame;
	const char *api;
	json_int_t calls, host_ns;
	const json_t *top_op; /* the op with the most calls at it */
	json_int_t top_calls;
};

static int cmp_site(const void *a, const void *b)
{
	const struct site *x = a, *y = b;

	return x->calls != y->calls ? (x->calls > y->calls ? -1 : 1)
				    : (x->frame > y->frame) - (x->frame < y->frame);
}

static int hottest_sites(const json_t *st, FILE *out)
{
	static const char *const head[] = { "Calls", "Host time (ns)", "API", "Call site",
					    "Mostly" };
	const json_t *frames = json_object_get(st, "frames"),
		     *stacks = json_object_get(st, "stacks"), *k, *op;
	size_t i, j, n = 0, cap = json_array_size(stacks) * 2 + 1;
	struct site *v = calloc(cap, sizeof(*v));
	struct gp_md_table *t;
	char a[32], b[32], f[512];
	int err;

	if (!v)
		return -ENOMEM;
	/*
	 * A site is (frame 0, API): every stack that starts there; in Python,
	 * (the innermost Python frame, API): the line of the program that called.
	 */
	json_array_foreach(stacks, i, k) {
		const json_t *ids = json_object_get(k, "frames");
		long py = innermost_python(frames, ids);
		json_int_t f0 =
			json_array_size(ids)
				? json_integer_value(json_array_get(ids, py > 0 ? (size_t)py : 0))
				: -1;

		json_array_foreach(json_object_get(k, "ops"), j, op) {
			size_t s;

			for (s = 0; s < n &&
				    !(v[s].frame == f0 && !strcmp(v[s].api, gp_md_str(op, "api")));
			     s++)
				;
			if (s == n) {
				if (n == cap)
					continue;
				v[n++] = (struct site){ .frame = f0, .api = gp_md_str(op, "api") };
			}
			v[s].calls += gp_md_int(op, "calls");
			v[s].host_ns += gp_md_int(op, "host_ns");
			if (gp_md_int(op, "calls") > v[s].top_calls) {
				v[s].top_calls = gp_md_int(op, "calls");
				v[s].top_op = op;
			}
		}
	}
	qsort(v, n, sizeof(*v), cmp_site);
	fputs("#### Hottest call sites\n\n", out);
	t = gp_md_table_new(5, head, "rrlll");
	for (i = 0; t && i < n && i < TOP_SITES; i++) {
		gp_md_table_cell(t, "%s", gp_md_num(a, (__u64)v[i].calls));
		gp_md_table_cell(t, "%s", gp_md_num(b, (__u64)v[i].host_ns));
		gp_md_table_cell(t, "`%s`", v[i].api);
		if (v[i].frame >= 0) {
			const json_t *fr = json_array_get(frames, (size_t)v[i].frame);
			const char *file =
				is_python(frames, v[i].frame) ? "" : gp_md_str(fr, "file");
			const char *base = strrchr(file, '/');

			frame_text(frames, v[i].frame, true, f, sizeof(f));
			gp_md_table_cell(t, "`%s`%s%s%s", f, *file ? " (" : "",
					 *file ? (base ? base + 1 : file) : "", *file ? ")" : "");
		} else {
			gp_md_table_cell(t, "[stack table full]");
		}
		gp_md_table_cell(t, "%s", v[i].top_op ? gp_md_str(v[i].top_op, "op") : "");
	}
	free(v);
	err = gp_md_flush_table(t, out);
	if (n > TOP_SITES)
		fprintf(out,
			"\nThe %d busiest of %zu call sites (a call site: the instruction after the call, in "
			"the function that made it; in Python, the line that made it).\n",
			TOP_SITES, n);
	fputc('\n', out);
	return err;
}

/* The heaviest paths of each group of ops: kernels by name, copies by direction and host memory. */
struct group {
	char key[256];
	json_int_t calls;
	struct {
		const json_t *stack;
		json_int_t calls;
	} top[TOP_PATHS];
};

static int cmp_group(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	return x->calls != y->calls ? (x->calls > y->calls ? -1 : 1) : strcmp(x->key, y->key);
}

static void group_key(const json_t *op, const char *kind, char *key, size_t len)
{
	if (!strcmp(kind, "kernel"))
		snprintf(key, len, "%s",
			 *gp_md_str(op, "kernel") ? gp_md_str(op, "kernel") : gp_md_str(op, "op"));
	else
		snprintf(key, len, "%s %s", gp_md_str(op, "direction"),
			 gp_md_str(op, "host_memory"));
}

static void add_to_group(struct group *g, const json_t *stack, json_int_t calls)
{
	g->calls += calls;
	for (int i = 0; i < TOP_PATHS; i++) {
		if (g->top[i].stack == stack) { /* the same stack with another size or kernel */
			g->top[i].calls += calls;
			return;
		}
	}
	for (int i = 0; i < TOP_PATHS; i++) {
		if (!g->top[i].stack || calls > g->top[i].calls) {
			memmove(&g->top[i + 1], &g->top[i],
				(TOP_PATHS - 1 - i) * sizeof(g->top[0]));
			g->top[i].stack = stack;
			g->top[i].calls = calls;
			return;
		}
	}
}

static int paths_by(const json_t *st, const char *kind, const char *title, const char *what,
		    FILE *out)
{
	static const char *head[] = { NULL, "Calls", "Share", "Call path (outermost first)" };
	const json_t *frames = json_object_get(st, "frames"),
		     *stacks = json_object_get(st, "stacks"), *k, *op;
	size_t i, j, n = 0, cap = 64;
	struct group *v = calloc(cap, sizeof(*v));
	struct gp_md_table *t;
	char key[256], a[32], path[2048];

	if (!v)
		return -ENOMEM;
	json_array_foreach(stacks, i, k) {
		json_array_foreach(json_object_get(k, "ops"), j, op) {
			size_t g;

			if (strcmp(gp_md_str(op, "kind"), kind))
				continue;
			group_key(op, kind, key, sizeof(key));
			for (g = 0; g < n && strcmp(v[g].key, key); g++)
				;
			if (g == n) {
				if (n == cap) {
					struct group *nv = realloc(v, 2 * cap * sizeof(*v));

					if (!nv)
						continue;
					memset(nv + cap, 0, cap * sizeof(*v));
					v = nv;
					cap *= 2;
				}
				snprintf(v[n++].key, sizeof(v[0].key), "%s", key);
			}
			add_to_group(&v[g], k, gp_md_int(op, "calls"));
		}
	}
	if (!n) {
		free(v);
		return 0;
	}
	qsort(v, n, sizeof(*v), cmp_group);
	fprintf(out, "#### %s\n\n", title);
	head[0] = what;
	t = gp_md_table_new(4, head, "lrrl");
	for (i = 0; t && i < n && i < TOP_GROUPS; i++) {
		for (int p = 0; p < TOP_PATHS && v[i].top[p].stack; p++) {
			gp_md_table_cell(t, p ? "" : "`%s`", v[i].key);
			gp_md_table_cell(t, "%s", gp_md_num(a, (__u64)v[i].top[p].calls));
			gp_md_table_cell(t, "%.1f %%",
					 v[i].calls ? 100.0 * (double)v[i].top[p].calls /
							      (double)v[i].calls
						    : 0.0);
			path_text(frames, v[i].top[p].stack, path, sizeof(path));
			gp_md_table_cell(t, "%s", path);
		}
	}
	free(v);
	{
		int err = gp_md_flush_table(t, out);

		if (n > TOP_GROUPS)
			fprintf(out, "\nThe %d busiest of %zu.\n", TOP_GROUPS, n);
		fputc('\n', out);
		return err;
	}
}

int gp_md_stacks(const json_t *p, FILE *out)
{
	const json_t *st = json_object_get(p, "stacks");
	char a[32], b[32], c[32];
	int err = 0, e;

	fputs("### Who launches what (call stacks)\n\n", out);
	if (!gp_md_bool(st, "captured")) {
		fputs("Call stacks were not captured (`--no-stacks`).\n\n", out);
		return 0;
	}
	if (!gp_md_int(st, "calls")) {
		fputs("No call that queues, allocates or waits for GPU work was made.\n\n", out);
		return 0;
	}
	fprintf(out, "%s calls with their call stack, %s distinct stacks", gp_md_n(a, st, "calls"),
		gp_md_n(b, st, "distinct"));
	if (gp_md_int(st, "truncated_stacks"))
		fprintf(out,
			" (%s truncated: the unwinder stopped before the thread's start, usually code "
			"built without frame pointers, or at the 127-frame limit)",
			gp_md_n(c, st, "truncated_stacks"));
	fputs(". Whole picture: `flamegraph.svg`, `speedscope.json`, `stacks.folded` (calls), "
	      "`stacks.bytes.folded`, `stacks.host_ns.folded`, `profile.pb.gz` (pprof: calls, bytes, "
	      "host time).\n\n",
	      out);
	if ((e = hottest_sites(st, out)) && !err)
		err = e;
	if ((e = paths_by(st, "kernel", "Top call paths per kernel", "Kernel", out)) && !err)
		err = e;
	if ((e = paths_by(st, "copy", "Top call paths per kind of transfer", "Transfer", out)) &&
	    !err)
		err = e;
	return err;
}
