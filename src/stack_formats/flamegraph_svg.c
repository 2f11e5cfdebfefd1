/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * flamegraph_svg.c — the stack paths (stack_paths.h) of one weight as a
 * self-contained interactive SVG flame graph: the root at the bottom, each
 * frame as wide as its weight, siblings in name order.
 *
 * Every frame's geometry is laid out here, not by the script, so that the
 * graph is complete where scripts do not run (image viewers, GitHub's file
 * view); the inline script (flamegraph_svg_script.c) adds zoom, search and
 * the details line on top. Each frame carries its exact start, weight and
 * depth (data-s, data-w, data-d) so that the script can zoom without
 * rebuilding the tree, and its <title> gives a tooltip with no script.
 *
 * No tree is built: the paths are sorted frame by frame, so paths that
 * share a prefix are adjacent, and one frame is one run of equal prefixes.
 * One walk over the sorted paths gives every frame with its start and
 * width; it runs twice, first only to count the frames too narrow to draw
 * (the subtitle says how many), then to write them.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stack_formats/flamegraph_svg_script.h"
#include "text/md_table.h"
#include "stack_formats/stack_paths.h"
#include "text/text_clean.h"

#define FG_WIDTH    1200 /* px, the whole image */
#define FG_PAD	    10	 /* px left and right of the frames */
#define FG_FRAMES_W (FG_WIDTH - 2 * FG_PAD)
#define FG_FRAME_H  16	/* px, one stack level */
#define FG_TOP	    66	/* px above the deepest level: title, subtitle, controls */
#define FG_BOTTOM   30	/* px below the "all" bar: details and matched share */
#define FG_CHAR_PX  7.2 /* a monospace character at 12 px (0.6 em), for fitting labels */
#define FG_MIN_PX   0.1 /* narrower frames are not drawn, only counted */

struct fg {
	FILE *out; /* NULL: the counting walk */
	enum gp_weight w;
	__u64 total;
	size_t levels; /* stack levels, the "all" bar included */
	size_t elided; /* frames too narrow to draw */
};

/* ---- text ----------------------------------------------------------------- */

static size_t text_chars(const char *s)
{
	size_t n = 0, len;

	for (; *s; s += len ? len : 1, n++)
		len = gp_text_char_len(s);
	return n;
}

/*
 * s escaped for XML (text and attribute values alike); at most max
 * characters, ".." standing for the rest when s is longer (max >= 3 then).
 * Bytes that are not valid UTF-8 become U+FFFD: one bad byte must not make
 * the whole file unreadable.
 */
static void put_text(FILE *out, const char *s, size_t max)
{
	size_t chars = text_chars(s), keep = chars <= max ? chars : max - 2, n;

	for (n = 0; *s && n < keep; n++) {
		size_t len = gp_text_char_len(s);

		switch (len ? *s : 0) {
		case 0:
			fputs(GP_TEXT_REPLACEMENT, out);
			len = 1;
			break;
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		case '\'':
			fputs("&apos;", out);
			break;
		default:
			fwrite(s, 1, len, out);
		}
		s += len;
	}
	if (keep < chars)
		fputs("..", out);
}

/* "1,234 calls", "4.5 MiB", "1.23 ms": a weight in its unit, for people. */
static char *weight_text(char *buf, enum gp_weight w, __u64 v)
{
	char num[32];

	switch (w) {
	case GP_W_CALLS:
		snprintf(buf, 48, "%s %s", gp_md_num(num, v), v == 1 ? "call" : "calls");
		break;
	case GP_W_BYTES:
		gp_md_bytes(buf, v);
		break;
	default:
		if (v < 1000)
			snprintf(buf, 48, "%llu ns", (unsigned long long)v);
		else if (v < 1000000)
			snprintf(buf, 48, "%.1f \xc2\xb5s", v / 1e3);
		else if (v < 1000000000)
			snprintf(buf, 48, "%.2f ms", v / 1e6);
		else
			snprintf(buf, 48, "%.2f s", v / 1e9);
	}
	return buf;
}

/* what the weight measures, for the subtitle */
static const char *weight_label(enum gp_weight w)
{
	return w == GP_W_CALLS ? "calls" : w == GP_W_BYTES ? "bytes" : "host time";
}

/* the unit the script formats numbers in */
static const char *weight_unit(enum gp_weight w)
{
	return w == GP_W_CALLS ? "calls" : w == GP_W_BYTES ? "bytes" : "ns";
}

static char *share_text(char *buf, __u64 part, __u64 total)
{
	double pct = total ? 100.0 * part / total : 0;

	if (pct > 0 && pct < 0.05)
		snprintf(buf, 16, "<0.1 %%");
	else
		snprintf(buf, 16, "%.1f %%", pct);
	return buf;
}

/* ---- colours -------------------------------------------------------------- */

enum fg_kind {
	FG_ALL,	    /* the bar under everything */
	FG_PROCESS, /* "name (pid N)" */
	FG_VOID,    /* "[truncated]", "[unknown]", "file+0x1234": nothing known */
	FG_GPU_OP,  /* the leaf: "[kernel] ...", "[HtoD ...]", ... */
	FG_API,	    /* a traced CUDA / driver / NCCL function */
	FG_CODE,    /* the application's own code */
};

/* hue (degrees), saturation, lightness ranges; the name's hash picks within them */
static const struct fg_palette {
	double h0, h1, s0, s1, l0, l1;
} palettes[] = {
	[FG_ALL] = { 0, 0, 0, 0, 0.80, 0.80 },
	[FG_PROCESS] = { 260, 290, 0.38, 0.52, 0.62, 0.70 },
	[FG_VOID] = { 0, 0, 0, 0, 0.70, 0.78 },
	[FG_GPU_OP] = { 140, 215, 0.45, 0.62, 0.50, 0.62 },
	[FG_API] = { 34, 52, 0.85, 0.95, 0.52, 0.62 },
	[FG_CODE] = { 0, 26, 0.70, 0.85, 0.56, 0.66 },
};

static bool is_process(const char *name)
{
	const char *p = strstr(name, " (pid ");
	size_t digits;

	if (!p)
		return false;
	p += strlen(" (pid ");
	digits = strspn(p, "0123456789");
	return digits && !strcmp(p + digits, ")");
}

/* "libfoo.so+0x1a2b": a frame the symbolizer could only place in its file */
static bool is_offset_only(const char *name)
{
	const char *p = strstr(name, "+0x");

	return p && p > name && p[3] && strspn(p + 3, "0123456789abcdefABCDEF") == strlen(p + 3);
}

static enum fg_kind frame_kind(const char *name)
{
	if (!strcmp(name, "[truncated]") || !strcmp(name, "[unknown]") || is_offset_only(name))
		return FG_VOID;
	if (name[0] == '[')
		return FG_GPU_OP;
	if (is_process(name))
		return FG_PROCESS;
	if (!strncmp(name, "cu", 2) || !strncmp(name, "nccl", 4) || !strncmp(name, "__cuda", 6))
		return FG_API;
	return FG_CODE;
}

/* FNV-1a: the same name gets the same colour in every graph */
static __u32 name_hash(const char *s)
{
	__u32 h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static double channel(double h, double s, double l, double n)
{
	double k = fmod(n + h / 30, 12), a = s * fmin(l, 1 - l);

	return l - a * fmax(-1, fmin(fmin(k - 3, 9 - k), 1));
}

static char *frame_colour(char *buf, const char *name, enum fg_kind kind)
{
	const struct fg_palette *p = &palettes[kind];
	__u32 hash = name_hash(name);
	/* three independent-looking fractions of one hash */
	double f1 = (hash & 0x3ff) / 1023.0, f2 = (hash >> 10 & 0x3ff) / 1023.0,
	       f3 = (hash >> 20 & 0x3ff) / 1023.0;
	double h = p->h0 + f1 * (p->h1 - p->h0), s = p->s0 + f2 * (p->s1 - p->s0),
	       l = p->l0 + f3 * (p->l1 - p->l0);

	snprintf(buf, 24, "rgb(%d,%d,%d)", (int)lround(255 * channel(h, s, l, 0)),
		 (int)lround(255 * channel(h, s, l, 8)), (int)lround(255 * channel(h, s, l, 4)));
	return buf;
}

/* ---- layout --------------------------------------------------------------- */

static int path_cmp(const void *a, const void *b)
{
	const struct gp_path *x = *(const struct gp_path *const *)a,
			     *y = *(const struct gp_path *const *)b;
	size_t n = x->nframes < y->nframes ? x->nframes : y->nframes, i;

	for (i = 0; i < n; i++) {
		int c = strcmp(x->frames[i], y->frames[i]);

		if (c)
			return c;
	}
	if (x->nframes != y->nframes)
		return x->nframes < y->nframes ? -1 : 1;
	/* equal names (two stacks that symbolize alike): any fixed order merges them the same */
	return x < y ? -1 : x > y;
}

/* depth 0 is the "all" bar; a path's frames[i] is at depth i + 1 */
static void frame(struct fg *g, const char *name, size_t depth, __u64 start, __u64 weight)
{
	double px = (double)weight / g->total * FG_FRAMES_W,
	       x = FG_PAD + (double)start / g->total * FG_FRAMES_W;
	unsigned long y = FG_TOP + (g->levels - 1 - depth) * FG_FRAME_H;
	char wt[48], share[16], colour[24], suffix[96];
	double fit = (px - 6) / FG_CHAR_PX;

	if (px < FG_MIN_PX) {
		g->elided++;
		return;
	}
	if (!g->out)
		return;
	fprintf(g->out, "<g class=\"f%s\" data-s=\"%llu\" data-w=\"%llu\" data-d=\"%zu\"><title>",
		depth ? "" : " all", (unsigned long long)start, (unsigned long long)weight, depth);
	put_text(g->out, name, SIZE_MAX);
	/* the share may read "<0.1 %": escaped like the name */
	snprintf(suffix, sizeof(suffix), " \xe2\x80\x94 %s (%s)", weight_text(wt, g->w, weight),
		 share_text(share, weight, g->total));
	put_text(g->out, suffix, SIZE_MAX);
	fputs("</title>", g->out);
	fprintf(g->out, "<rect x=\"%.2f\" y=\"%lu\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>", x,
		y, px, FG_FRAME_H - 1,
		frame_colour(colour, name, depth ? frame_kind(name) : FG_ALL));
	fprintf(g->out, "<text x=\"%.2f\" y=\"%lu\">", x + 3, y + FG_FRAME_H - 4);
	if (fit >= 3)
		put_text(g->out, name, (size_t)fit);
	fputs("</text></g>\n", g->out);
}

/*
 * Every frame of the sorted paths: a frame opens where a path's prefix
 * first differs from the previous path's and closes where the next one's
 * does; its width is the weight of the paths in between.
 */
static void walk(struct fg *g, const struct gp_path *const *v, size_t n, const char **open_name,
		 __u64 *open_start)
{
	size_t nopen = 0, i, c;
	__u64 x = 0;

	frame(g, "all", 0, 0, g->total);
	for (i = 0; i < n; i++) {
		const struct gp_path *p = v[i];

		for (c = 0; c < nopen && c < p->nframes && !strcmp(open_name[c], p->frames[c]); c++)
			;
		while (nopen > c) {
			nopen--;
			frame(g, open_name[nopen], nopen + 1, open_start[nopen],
			      x - open_start[nopen]);
		}
		for (; nopen < p->nframes; nopen++) {
			open_name[nopen] = p->frames[nopen];
			open_start[nopen] = x;
		}
		x += p->w[g->w];
	}
	while (nopen > 0) {
		nopen--;
		frame(g, open_name[nopen], nopen + 1, open_start[nopen], x - open_start[nopen]);
	}
}

/* ---- the document --------------------------------------------------------- */

static void head(struct fg *g, const char *title, size_t npaths)
{
	unsigned long height = FG_TOP + g->levels * FG_FRAME_H + FG_BOTTOM;
	char wt[48];

	fprintf(g->out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%lu\" "
		"viewBox=\"0 0 %d %lu\" data-unit=\"%s\" data-total=\"%llu\" data-elided=\"%zu\" "
		"data-pad=\"%d\" data-fw=\"%d\" data-char=\"%.1f\">\n",
		FG_WIDTH, height, FG_WIDTH, height, weight_unit(g->w), (unsigned long long)g->total,
		g->elided, FG_PAD, FG_FRAMES_W, FG_CHAR_PX);
	fprintf(g->out, "<style type=\"text/css\"><![CDATA[\n%s]]></style>\n", gp_flamegraph_css);
	fprintf(g->out, "<rect class=\"bg\" x=\"0\" y=\"0\" width=\"%d\" height=\"%lu\"/>\n",
		FG_WIDTH, height);
	fprintf(g->out, "<text id=\"title\" x=\"%d\" y=\"22\" text-anchor=\"middle\">",
		FG_WIDTH / 2);
	put_text(g->out, title, SIZE_MAX);
	fprintf(g->out,
		"</text>\n<text id=\"subtitle\" x=\"%d\" y=\"40\" text-anchor=\"middle\">"
		"GPU work by %s \xe2\x80\x94 ",
		FG_WIDTH / 2, weight_label(g->w));
	if (!g->total) {
		fputs("no stacks captured</text>\n", g->out);
		return;
	}
	fprintf(g->out, "%s in %zu call path%s", weight_text(wt, g->w, g->total), npaths,
		npaths == 1 ? "" : "s");
	if (g->elided)
		fprintf(g->out, "; %zu frame%s narrower than %.1f px not drawn", g->elided,
			g->elided == 1 ? "" : "s", FG_MIN_PX);
	fputs("</text>\n", g->out);
	/* controls stay hidden unless the script runs: without it they would do nothing */
	fprintf(g->out,
		"<text id=\"reset\" class=\"ctl off\" x=\"%d\" y=\"58\">Reset zoom</text>\n"
		"<text id=\"search\" class=\"ctl off\" x=\"%d\" y=\"58\" text-anchor=\"end\">Search</text>\n",
		FG_PAD, FG_WIDTH - FG_PAD);
}

static void tail(struct fg *g)
{
	unsigned long height = FG_TOP + g->levels * FG_FRAME_H + FG_BOTTOM;

	if (!g->total)
		fprintf(g->out,
			"<text id=\"empty\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">no stacks captured</text>\n",
			FG_WIDTH / 2, FG_TOP + FG_FRAME_H - 4);
	fprintf(g->out,
		"<text id=\"details\" x=\"%d\" y=\"%lu\"> </text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%lu\" text-anchor=\"end\"> </text>\n",
		FG_PAD, height - 10, FG_WIDTH - FG_PAD, height - 10);
	fprintf(g->out, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n</svg>\n",
		gp_flamegraph_js);
}

int gp_flamegraph_svg_write(const struct gp_paths *p, enum gp_weight w, const char *title,
			    FILE *out)
{
	struct fg g = { .w = w, .levels = 1 };
	const struct gp_path **v = NULL;
	const char **open_name = NULL;
	__u64 *open_start = NULL;
	size_t n = 0, i;
	int err = 0;

	if ((unsigned int)w >= GP_W_MAX)
		return -EINVAL;
	if (p->n) {
		v = calloc(p->n, sizeof(*v));
		if (!v)
			return -ENOMEM;
	}
	for (i = 0; i < p->n; i++) {
		const struct gp_path *path = &p->v[i];

		if (!path->w[w] || !path->nframes)
			continue;
		if (__builtin_add_overflow(g.total, path->w[w], &g.total)) {
			err = -EOVERFLOW;
			goto out;
		}
		if (path->nframes + 1 > g.levels)
			g.levels = path->nframes + 1;
		v[n++] = path;
	}
	if (n) {
		qsort(v, n, sizeof(*v), path_cmp);
		open_name = calloc(g.levels, sizeof(*open_name));
		open_start = calloc(g.levels, sizeof(*open_start));
		if (!open_name || !open_start) {
			err = -ENOMEM;
			goto out;
		}
		walk(&g, v, n, open_name, open_start);
	}
	g.out = out;
	head(&g, title ? title : "GPU work", n);
	if (n) {
		g.elided = 0;
		fputs("<g id=\"frames\">\n", out);
		walk(&g, v, n, open_name, open_start);
		fputs("</g>\n", out);
	}
	tail(&g);
	if (fflush(out) || ferror(out))
		err = -(errno ? errno : EIO);
out:
	free(open_start);
	free(open_name);
	free(v);
	return err;
}
