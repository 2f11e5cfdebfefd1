/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_stack_sinks.c — the flame graph SVG and the speedscope file, written
 * from call paths built by hand (not from a model, so that the writers are
 * checked on exactly known input): the SVG's structure, escaping, widths,
 * merging, order, elided frames, units, colours and the empty graph; the
 * speedscope file's exact frames, samples and weights per profile.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "stack_formats/stack_paths.h"

#define FRAMES_W 1180.0 /* the frame area of the 1200 px canvas */
#define DASH	 " \xe2\x80\x94 "

#define PATH(w_calls, w_bytes, w_ns, ...)                                                  \
	{                                                                                  \
		.frames = (const char *[]){ __VA_ARGS__ },                                 \
		.nframes = sizeof((const char *[]){ __VA_ARGS__ }) / sizeof(const char *), \
		.w = { w_calls,                                                            \
		       w_bytes,                                                            \
		       w_ns }                                                              \
	}

static char *svg_of(const struct gp_path *v, size_t n, enum gp_weight w)
{
	struct gp_paths p = { .v = (struct gp_path *)v, .n = n };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(gp_flamegraph_svg_write(&p, w, "test <graph> & co", f), 0);
	fclose(f);
	return buf;
}

static json_t *speedscope_of(const struct gp_path *v, size_t n)
{
	struct gp_paths p = { .v = (struct gp_path *)v, .n = n };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_error_t err;
	json_t *doc;

	assert_non_null(f);
	assert_int_equal(gp_speedscope_write(&p, "test.speedscope.json", f), 0);
	fclose(f);
	doc = json_loads(buf, 0, &err);
	if (!doc)
		fail_msg("speedscope file does not parse: %s (line %d)", err.text, err.line);
	free(buf);
	return doc;
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (s = strstr(s, what); s; s = strstr(s + 1, what))
		n++;
	return n;
}

/*
 * The frame whose <title> begins with name (as escaped in the file):
 * how many there are, and the first one's rect geometry and fill.
 */
struct geom {
	double x, width;
	char fill[32];
	unsigned long long weight;
};

static size_t frame_geom(const char *svg, const char *name, struct geom *g)
{
	char key[512];
	const char *at, *start, *rect;
	size_t n;

	snprintf(key, sizeof(key), "<title>%s" DASH, name);
	n = count(svg, key);
	at = strstr(svg, key);
	if (!at || !g)
		return n;
	/* the group's attributes come before the title */
	for (start = at; start > svg && strncmp(start, "<g ", 3); start--)
		;
	assert_int_equal(sscanf(strstr(start, "data-w=\""), "data-w=\"%llu\"", &g->weight), 1);
	rect = strstr(at, "<rect ");
	assert_non_null(rect);
	assert_int_equal(sscanf(strstr(rect, " x=\""), " x=\"%lf\"", &g->x), 1);
	assert_int_equal(sscanf(strstr(rect, " width=\""), " width=\"%lf\"", &g->width), 1);
	assert_int_equal(sscanf(strstr(rect, " fill=\""), " fill=\"%31[^\"]\"", g->fill), 1);
	return n;
}

static void rgb(const char *fill, int *r, int *g, int *b)
{
	assert_int_equal(sscanf(fill, "rgb(%d,%d,%d)", r, g, b), 3);
}

/* ---- SVG ------------------------------------------------------------------- */

static const struct gp_path demo[] = {
	PATH(3000, 0, 5000000, "train (pid 42)", "main", "step", "cudaLaunchKernel",
	     "[kernel] gemm<float, 128>"),
	PATH(500, 4 << 20, 12000, "train (pid 42)", "main", "step", "cudaMemcpy",
	     "[HtoD 4 MiB pageable]"),
	PATH(400, 4 << 20, 900, "train (pid 42)", "[truncated]", "ncclAllReduce",
	     "[AllReduce float 4 MiB]"),
	PATH(100, 0, 300, "train (pid 42)", "main", "a&b<'\"c\">", "cudaLaunchKernel",
	     "[kernel] k"),
};

static void svg_structure_and_escaping(void **state)
{
	char *svg = svg_of(demo, 4, GP_W_CALLS);

	assert_memory_equal(svg, "<?xml ", 6);
	assert_non_null(strstr(svg, "\n<svg xmlns=\"http://www.w3.org/2000/svg\""));
	assert_true(strlen(svg) > 7 && !strcmp(svg + strlen(svg) - 7, "</svg>\n"));
	/* every element the writer opens is closed */
	assert_int_equal(count(svg, "<svg "), count(svg, "</svg>"));
	assert_int_equal(count(svg, "<g "), count(svg, "</g>"));
	assert_int_equal(count(svg, "<text "), count(svg, "</text>"));
	assert_int_equal(count(svg, "<title>"), count(svg, "</title>"));
	assert_int_equal(count(svg, "<style "), 1);
	assert_int_equal(count(svg, "</style>"), 1);
	assert_int_equal(count(svg, "<script "), 1);
	assert_int_equal(count(svg, "</script>"), 1);
	/* CSS and script each in one CDATA section, nothing else ends one */
	assert_int_equal(count(svg, "<![CDATA["), 2);
	assert_int_equal(count(svg, "]]>"), 2);
	/* nothing from outside */
	assert_null(strstr(svg, "href"));
	assert_null(strstr(svg, "@import"));
	assert_null(strstr(svg, "url("));
	/* C++ and odd names escaped, in titles and in labels */
	assert_null(strstr(svg, "gemm<float"));
	assert_int_equal(frame_geom(svg, "[kernel] gemm&lt;float, 128&gt;", NULL), 1);
	assert_non_null(strstr(svg, ">[kernel] gemm&lt;float, 128&gt;</text>"));
	assert_int_equal(frame_geom(svg, "a&amp;b&lt;&apos;&quot;c&quot;&gt;", NULL), 1);
	assert_null(strstr(svg, "a&b"));
	/* the title given, escaped, and the subtitle with the weight and total */
	assert_non_null(strstr(svg, ">test &lt;graph&gt; &amp; co</text>"));
	assert_non_null(
		strstr(svg, ">GPU work by calls" DASH "4,000 calls in 4 call paths</text>"));
	assert_non_null(strstr(svg, "data-unit=\"calls\" data-total=\"4000\" data-elided=\"0\""));
	/* tooltips: name, weight, share */
	assert_non_null(strstr(svg, "<title>all" DASH "4,000 calls (100.0 %)</title>"));
	assert_non_null(strstr(svg, "<title>[kernel] gemm&lt;float, 128&gt;" DASH
				    "3,000 calls (75.0 %)</title>"));
	free(svg);
}

static void svg_widths_merge_order(void **state)
{
	char *svg = svg_of(demo, 4, GP_W_CALLS);
	struct geom all, root, mainf, step, gemm, trunc, odd;

	assert_int_equal(frame_geom(svg, "all", &all), 1);
	assert_int_equal(frame_geom(svg, "train (pid 42)", &root), 1);
	/* "main" under the root: three paths merge into one frame */
	assert_int_equal(frame_geom(svg, "main", &mainf), 1);
	assert_int_equal(mainf.weight, 3600);
	assert_int_equal(frame_geom(svg, "step", &step), 1);
	assert_int_equal(step.weight, 3500);
	/* the same name under different parents stays apart */
	assert_int_equal(frame_geom(svg, "cudaLaunchKernel", NULL), 2);
	assert_int_equal(frame_geom(svg, "[kernel] gemm&lt;float, 128&gt;", &gemm), 1);
	assert_int_equal(frame_geom(svg, "[truncated]", &trunc), 1);
	assert_int_equal(frame_geom(svg, "a&amp;b&lt;&apos;&quot;c&quot;&gt;", &odd), 1);

	/* width proportional to weight: 3/4 of the calls, 3/4 of the width */
	assert_float_equal(all.width, FRAMES_W, 0.01);
	assert_float_equal(root.width, FRAMES_W, 0.01);
	assert_float_equal(gemm.width, FRAMES_W * 3 / 4, 0.01);
	assert_float_equal(mainf.width, FRAMES_W * 0.9, 0.01);
	assert_float_equal(trunc.width, FRAMES_W * 0.1, 0.01);
	/* siblings in name order, left to right: "[truncated]" < "main"; "a&b..." < "step" */
	assert_float_equal(trunc.x, 10, 0.01);
	assert_float_equal(mainf.x, 10 + FRAMES_W * 0.1, 0.01);
	assert_float_equal(odd.x, mainf.x, 0.01);
	assert_float_equal(step.x, odd.x + FRAMES_W * 100 / 4000, 0.01);
	free(svg);
}

static void svg_elided_frames_counted(void **state)
{
	struct gp_path v[6] = {
		PATH(1000000, 0, 0, "app (pid 1)", "main", "cudaLaunchKernel", "[kernel] big"),
		PATH(1, 0, 0, "app (pid 1)", "tiny0", "[kernel] t"),
		PATH(1, 0, 0, "app (pid 1)", "tiny1", "[kernel] t"),
		PATH(1, 0, 0, "app (pid 1)", "tiny2", "[kernel] t"),
		PATH(1, 0, 0, "app (pid 1)", "tiny3", "[kernel] t"),
		PATH(1, 0, 0, "app (pid 1)", "tiny4", "[kernel] t"),
	};
	char *svg = svg_of(v, 6, GP_W_CALLS);
	struct geom root;

	/* each tiny path: 2 frames of 0.001 px */
	assert_non_null(strstr(svg, "data-elided=\"10\""));
	assert_non_null(strstr(svg, "; 10 frames narrower than 0.1 px not drawn</text>"));
	assert_null(strstr(svg, "tiny"));
	/* what is not drawn still counts in the widths and totals above it */
	assert_int_equal(frame_geom(svg, "app (pid 1)", &root), 1);
	assert_int_equal(root.weight, 1000005);
	assert_non_null(strstr(svg, "<title>all" DASH "1,000,005 calls (100.0 %)</title>"));
	assert_non_null(strstr(svg, "1,000,005 calls in 6 call paths"));
	assert_int_equal(count(svg, "<g class=\"f"), 5);
	free(svg);
}

static void svg_units(void **state)
{
	char *svg = svg_of(demo, 4, GP_W_BYTES);
	struct geom g;

	/* only paths with bytes: the kernel launches are not in this graph */
	assert_null(strstr(svg, "gemm"));
	assert_non_null(strstr(svg, ">GPU work by bytes" DASH "8 MiB in 2 call paths</text>"));
	assert_non_null(strstr(svg, "<title>[HtoD 4 MiB pageable]" DASH "4 MiB (50.0 %)</title>"));
	assert_non_null(strstr(svg, "data-unit=\"bytes\""));
	free(svg);

	svg = svg_of(demo, 4, GP_W_HOST_NS);
	/* the 300 ns path is 0.07 px wide: 3 of its frames are not drawn */
	assert_non_null(strstr(svg, ">GPU work by host time" DASH "5.01 ms in 4 call paths;"
				    " 3 frames narrower than 0.1 px not drawn</text>"));
	assert_non_null(strstr(svg, "<title>cudaMemcpy" DASH "12.0 \xc2\xb5s (0.2 %)</title>"));
	/* a share under 0.05 % reads "<0.1 %", escaped */
	assert_non_null(strstr(svg, "<title>ncclAllReduce" DASH "900 ns (&lt;0.1 %)</title>"));
	assert_int_equal(frame_geom(svg, "[kernel] gemm&lt;float, 128&gt;", &g), 1);
	assert_int_equal(g.weight, 5000000);
	free(svg);
}

static void svg_colours(void **state)
{
	char *a = svg_of(demo, 4, GP_W_CALLS), *b = svg_of(demo, 4, GP_W_HOST_NS);
	struct geom g1, g2;
	int r, g, bl;

	/* deterministic: a name has its colour in every graph */
	frame_geom(a, "step", &g1);
	frame_geom(b, "step", &g2);
	assert_string_equal(g1.fill, g2.fill);
	/* by kind */
	frame_geom(a, "[truncated]", &g1);
	rgb(g1.fill, &r, &g, &bl);
	assert_true(r == g && g == bl);
	frame_geom(a, "train (pid 42)", &g1);
	rgb(g1.fill, &r, &g, &bl);
	assert_true(bl > g && r > g); /* purple */
	frame_geom(a, "[kernel] gemm&lt;float, 128&gt;", &g1);
	rgb(g1.fill, &r, &g, &bl);
	assert_true(g > r && bl > r); /* green to blue */
	frame_geom(a, "ncclAllReduce", &g1);
	rgb(g1.fill, &r, &g, &bl);
	assert_true(r > bl && g > bl && g > 120); /* yellow to orange */
	frame_geom(a, "main", &g1);
	rgb(g1.fill, &r, &g, &bl);
	assert_true(r > g && g >= bl && r > 200); /* warm */
	free(a);
	free(b);
}

static void svg_empty(void **state)
{
	const struct gp_path nobytes[] = {
		PATH(5, 0, 10, "app (pid 1)", "cudaLaunchKernel", "[kernel] k"),
	};
	char *svg;
	int i;

	for (i = 0; i < 2; i++) {
		svg = i ? svg_of(nobytes, 1, GP_W_BYTES) : svg_of(NULL, 0, GP_W_CALLS);
		assert_memory_equal(svg, "<?xml ", 6);
		assert_non_null(strstr(svg, "no stacks captured</text>"));
		assert_null(strstr(svg, "<g class=\"f"));
		assert_int_equal(count(svg, "<text "), count(svg, "</text>"));
		assert_non_null(strstr(svg, "</script>\n</svg>\n"));
		free(svg);
	}
}

static void svg_odd_bytes_in_names(void **state)
{
	const struct gp_path v[] = {
		PATH(1, 0, 0, "app (pid 1)", "bad\xff\x01name", "[kernel] \xe2\x82\xac"),
	};
	char *svg = svg_of(v, 1, GP_W_CALLS);

	/* invalid UTF-8 and control characters become U+FFFD, valid UTF-8 stays */
	assert_int_equal(frame_geom(svg, "bad\xef\xbf\xbd\xef\xbf\xbdname", NULL), 1);
	assert_int_equal(frame_geom(svg, "[kernel] \xe2\x82\xac", NULL), 1);
	assert_null(strchr(svg, '\xff'));
	assert_null(strchr(svg, '\x01'));
	free(svg);
}

static void svg_long_labels_cut(void **state)
{
	char longname[300];
	struct gp_path v[] = {
		PATH(1, 0, 0, "app (pid 1)", longname),
		PATH(199, 0, 0, "app (pid 1)", "other"),
	};
	char *svg, *label;

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	memcpy(longname, "zz", 2); /* sorts after "other" */
	svg = svg_of(v, 2, GP_W_CALLS);
	/* 5.9 px: too narrow for a label; the title keeps the whole name */
	assert_int_equal(frame_geom(svg, longname, NULL), 1);
	assert_null(strstr(svg, "\">zz"));
	assert_non_null(strstr(svg, "\"></text></g>"));
	free(svg);

	v[0].w[GP_W_CALLS] = 100;
	v[1].w[GP_W_CALLS] = 100;
	svg = svg_of(v, 2, GP_W_CALLS);
	/* 590 px: (590 - 6) / 7.2 = 81 characters, the last two ".." */
	label = strstr(svg, "\">zzxxx");
	assert_non_null(label);
	assert_int_equal(strcspn(label + 2, "<"), 81);
	assert_memory_equal(label + 2 + 79, "..", 2);
	free(svg);
}

/* ---- speedscope ------------------------------------------------------------ */

static const struct gp_path known[] = {
	PATH(3, 0, 30, "app (pid 7)", "main", "cudaLaunchKernel", "[kernel] k"),
	PATH(2, 2048, 20, "app (pid 7)", "main", "cudaMemcpy", "[HtoD 2 KiB pageable]"),
	PATH(1, 1 << 20, 0, "app (pid 7)", "[truncated]", "cudaMalloc", "[alloc device 1 MiB]"),
	PATH(0, 0, 0, "app (pid 7)", "unused"),
};

static void assert_json_equal(const json_t *got, const char *want)
{
	json_error_t err;
	json_t *w = json_loads(want, 0, &err);
	char *g;

	assert_non_null(w);
	if (!json_equal(got, w)) {
		g = json_dumps(got, JSON_COMPACT);
		fail_msg("got %s, want %s", g, want);
	}
	json_decref(w);
}

static void speedscope_exact(void **state)
{
	json_t *doc = speedscope_of(known, 4), *profiles = json_object_get(doc, "profiles");
	const char *exporter = json_string_value(json_object_get(doc, "exporter"));

	assert_string_equal(json_string_value(json_object_get(doc, "$schema")),
			    "https://www.speedscope.app/file-format-schema.json");
	assert_string_equal(json_string_value(json_object_get(doc, "name")),
			    "test.speedscope.json");
	assert_int_equal(json_integer_value(json_object_get(doc, "activeProfileIndex")), 0);
	/* "gpuprobed " GP_VERSION, as the object was built (make does not rebuild it when only the version moves) */
	assert_non_null(exporter);
	assert_true(!strncmp(exporter, "gpuprobed ", 10) && exporter[10]);
	/* frames in order of first use; "unused" is in no profile */
	assert_json_equal(
		json_object_get(doc, "shared"),
		"{\"frames\": [{\"name\": \"app (pid 7)\"}, {\"name\": \"main\"},"
		" {\"name\": \"cudaLaunchKernel\"}, {\"name\": \"[kernel] k\"}, {\"name\": \"cudaMemcpy\"},"
		" {\"name\": \"[HtoD 2 KiB pageable]\"}, {\"name\": \"[truncated]\"}, {\"name\": \"cudaMalloc\"},"
		" {\"name\": \"[alloc device 1 MiB]\"}]}");
	assert_int_equal(json_array_size(profiles), 3);
	assert_json_equal(
		json_array_get(profiles, 0),
		"{\"type\": \"sampled\", \"name\": \"GPU work by calls\", \"unit\": \"none\","
		" \"startValue\": 0, \"endValue\": 6,"
		" \"samples\": [[0, 1, 2, 3], [0, 1, 4, 5], [0, 6, 7, 8]], \"weights\": [3, 2, 1]}");
	/* zero weights are left out of a profile */
	assert_json_equal(
		json_array_get(profiles, 1),
		"{\"type\": \"sampled\", \"name\": \"GPU work by bytes\", \"unit\": \"bytes\","
		" \"startValue\": 0, \"endValue\": 1050624,"
		" \"samples\": [[0, 1, 4, 5], [0, 6, 7, 8]], \"weights\": [2048, 1048576]}");
	assert_json_equal(
		json_array_get(profiles, 2),
		"{\"type\": \"sampled\", \"name\": \"GPU work by host time\", \"unit\": \"nanoseconds\","
		" \"startValue\": 0, \"endValue\": 50,"
		" \"samples\": [[0, 1, 2, 3], [0, 1, 4, 5]], \"weights\": [30, 20]}");
	json_decref(doc);
}

static void speedscope_dedup_and_names(void **state)
{
	const struct gp_path v[] = {
		PATH(1, 0, 0, "a (pid 1)", "f\"q\\", "[kernel] x<int>", "bad\xff"),
		PATH(1, 0, 0, "b (pid 2)", "f\"q\\", "[kernel] x<int>"),
		PATH(1, 0, 0, "a (pid 1)", "bad\xff"),
	};
	json_t *doc = speedscope_of(v, 3),
	       *frames = json_object_get(json_object_get(doc, "shared"), "frames");
	json_t *calls = json_array_get(json_object_get(doc, "profiles"), 0);

	assert_json_equal(
		frames,
		"[{\"name\": \"a (pid 1)\"}, {\"name\": \"f\\\"q\\\\\"}, {\"name\": \"[kernel] x<int>\"},"
		" {\"name\": \"bad\\ufffd\"}, {\"name\": \"b (pid 2)\"}]");
	assert_json_equal(json_object_get(calls, "samples"), "[[0, 1, 2, 3], [4, 1, 2], [0, 3]]");
	assert_json_equal(json_object_get(calls, "weights"), "[1, 1, 1]");
	assert_int_equal(json_integer_value(json_object_get(calls, "endValue")), 3);
	json_decref(doc);
}

static void speedscope_empty(void **state)
{
	json_t *doc = speedscope_of(NULL, 0), *p;
	size_t i;

	assert_json_equal(json_object_get(doc, "shared"), "{\"frames\": []}");
	assert_int_equal(json_array_size(json_object_get(doc, "profiles")), 3);
	json_array_foreach(json_object_get(doc, "profiles"), i, p) {
		assert_int_equal(json_integer_value(json_object_get(p, "endValue")), 0);
		assert_int_equal(json_array_size(json_object_get(p, "samples")), 0);
		assert_int_equal(json_array_size(json_object_get(p, "weights")), 0);
	}
	json_decref(doc);
}

/*
 * GP_STACK_SAMPLES=DIR: instead of testing, write the demo paths' outputs
 * into DIR for tests/e2e/test_stack_formats_unit.py, which checks them with
 * the Python validators, Node and the real speedscope.
 */
static int write_samples(const char *dir)
{
	struct gp_paths demo_paths = { .v = (struct gp_path *)demo, .n = 4 }, none = { 0 };
	static const struct {
		const char *file;
		bool empty;
		int w; /* -1: speedscope */
	} out[] = {
		{ "demo-calls.svg", false, GP_W_CALLS },
		{ "demo-bytes.svg", false, GP_W_BYTES },
		{ "demo-host_ns.svg", false, GP_W_HOST_NS },
		{ "demo.speedscope.json", false, -1 },
		{ "empty.svg", true, GP_W_CALLS },
		{ "empty.speedscope.json", true, -1 },
	};
	char path[4096];
	size_t i;

	for (i = 0; i < sizeof(out) / sizeof(out[0]); i++) {
		const struct gp_paths *p = out[i].empty ? &none : &demo_paths;
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", dir, out[i].file);
		f = fopen(path, "w");
		if (!f ||
		    (out[i].w < 0 ? gp_speedscope_write(p, out[i].file, f)
				  : gp_flamegraph_svg_write(p, out[i].w, "demo", f)) ||
		    fclose(f)) {
			perror(path);
			return 1;
		}
	}
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(svg_structure_and_escaping),
		cmocka_unit_test(svg_widths_merge_order),
		cmocka_unit_test(svg_elided_frames_counted),
		cmocka_unit_test(svg_units),
		cmocka_unit_test(svg_colours),
		cmocka_unit_test(svg_empty),
		cmocka_unit_test(svg_odd_bytes_in_names),
		cmocka_unit_test(svg_long_labels_cut),
		cmocka_unit_test(speedscope_exact),
		cmocka_unit_test(speedscope_dedup_and_names),
		cmocka_unit_test(speedscope_empty),
	};

	if (getenv("GP_STACK_SAMPLES"))
		return write_samples(getenv("GP_STACK_SAMPLES"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
