/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_report_json.c — report.json: written from a synthetic session,
 * parsed back with jansson and checked field by field against what the
 * records said; and deterministic (same model, or the same records fed to
 * another model: the same bytes); where each process runs (its pid in its
 * namespace, its container and pod) and the containers[] that sum them,
 * live and from the model's operations alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "records.h"
#include "scenario.h"
#include "places.h"
#include "capture/capture_load.h"

static json_t *parse(const struct gp_model *m)
{
	char *text = sink_output(gp_report_json_write, m);
	json_error_t err;
	json_t *doc = json_loads(text, 0, &err);

	if (!doc)
		fail_msg("report.json does not parse: %s (line %d)", err.text, err.line);
	free(text);
	return doc;
}

static json_int_t ival(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_integer(v))
		fail_msg("%s is not an integer", key);
	return json_integer_value(v);
}

static const char *sval(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_string(v))
		fail_msg("%s is not a string", key);
	return json_string_value(v);
}

static json_t *find(const json_t *arr, const char *key, const char *value)
{
	size_t i;
	json_t *row;

	json_array_foreach(arr, i, row) {
		const char *s = json_string_value(json_object_get(row, key));

		if (s && !strcmp(s, value))
			return row;
	}
	fail_msg("no row with %s = %s", key, value);
	return NULL;
}

static void top_level_and_session(void **state)
{
	struct gp_model *m = scenario_model(false, true);
	json_t *doc = parse(m), *s = json_object_get(doc, "session");

	assert_string_equal(sval(doc, "schema"), "gpuprobed.report/1");
	assert_string_equal(sval(json_object_get(doc, "source"), "kind"), "live");
	assert_true(json_is_null(json_object_get(json_object_get(doc, "source"), "capture_file")));
	assert_string_equal(sval(s, "tool_version"), "0.1-test");
	assert_string_equal(sval(s, "mode"), "pid");
	assert_string_equal(sval(s, "start_utc"), "2023-11-14T22:13:20Z");
	assert_int_equal(ival(s, "start_mono_ns"), SC_START);
	assert_true(ival(s, "duration_ns") > 0);
	assert_int_equal(json_array_size(json_object_get(doc, "processes")), 1);
	/* a process placed nowhere is a host process: its own pid, no container */
	{
		const json_t *p = json_array_get(json_object_get(doc, "processes"), 0);

		assert_int_equal(ival(p, "ns_pid"), T_PID);
		assert_true(json_is_null(json_object_get(p, "container")));
	}
	assert_true(json_is_array(json_object_get(doc, "containers")));
	assert_int_equal(json_array_size(json_object_get(doc, "containers")), 0);
	assert_true(json_is_array(
		json_object_get(doc, "recommendations"))); /* test_advice.c checks the rules */
	assert_null(json_object_get(doc, "cpu"));
	json_decref(doc);
	gp_model_free(m);
}

static void api_rows(void **state)
{
	struct gp_model *m = scenario_model(false, true);
	json_t *doc = parse(m), *p = json_array_get(json_object_get(doc, "processes"), 0);
	json_t *api = json_object_get(p, "cuda_api");
	json_t *malloc_row = find(api, "name", "cudaMalloc"), *code;
	double pct = 0;
	size_t i;
	json_t *row;

	assert_int_equal(ival(p, "pid"), T_PID);
	assert_string_equal(sval(p, "comm"), "train");
	assert_string_equal(sval(p, "cmdline"), "python3 train.py --epochs 1");
	assert_true(json_is_false(json_object_get(p, "exited")));
	assert_int_equal(ival(malloc_row, "calls"), 3);
	assert_int_equal(ival(malloc_row, "errors"), 1);
	assert_int_equal(ival(malloc_row, "total_ns"), 300);
	assert_int_equal(ival(malloc_row, "avg_ns"), 100);
	assert_int_equal(ival(malloc_row, "med_ns"), 100);
	assert_int_equal(ival(malloc_row, "p99_ns"), 100);
	assert_int_equal(ival(malloc_row, "min_ns"), 100);
	assert_int_equal(ival(malloc_row, "max_ns"), 100);
	assert_int_equal(ival(malloc_row, "stddev_ns"), 0);
	code = json_array_get(json_object_get(malloc_row, "error_codes"), 0);
	assert_int_equal(ival(code, "code"), 2);
	assert_string_equal(sval(code, "name"), "cudaErrorMemoryAllocation");
	assert_int_equal(ival(code, "count"), 1);
	code = json_array_get(json_object_get(find(api, "name", "cudaMemcpy"), "error_codes"), 0);
	assert_string_equal(sval(code, "name"), "cudaErrorInvalidMemcpyDirection");
	/* nsys order: most time first */
	assert_string_equal(sval(json_array_get(api, 0), "name"), "cudaMemcpy");
	json_array_foreach(api, i, row)
		pct += json_real_value(json_object_get(row, "time_pct"));
	assert_true(pct > 99.9 && pct < 100.1);
	json_decref(doc);
	gp_model_free(m);
}

static void transfers_memory_kernels(void **state)
{
	struct gp_model *m = scenario_model(false, true);
	json_t *doc = parse(m), *p = json_array_get(json_object_get(doc, "processes"), 0);
	json_t *xfers = json_object_get(p, "transfers"), *x, *mem, *k, *hist;

	assert_int_equal(json_array_size(xfers), 3);
	x = json_array_get(xfers, 0);
	assert_string_equal(sval(x, "direction"), "HtoD");
	assert_string_equal(sval(x, "host_memory"), "pageable");
	assert_true(json_is_true(json_object_get(x, "sync")));
	assert_int_equal(ival(x, "bytes"), 1 << 20);
	assert_int_equal(ival(x, "bandwidth_bytes_per_s"), 4194304000LL); /* 1 MiB in 250 us */
	hist = json_array_get(json_object_get(x, "size_histogram"), 0);
	assert_int_equal(ival(hist, "lo_bytes"), 1 << 20);
	assert_int_equal(ival(hist, "hi_bytes"), (2 << 20) - 1);
	assert_int_equal(ival(hist, "calls"), 1);
	x = json_array_get(xfers, 1); /* cudaMemcpyDefault from pinned to device */
	assert_string_equal(sval(x, "direction"), "HtoD");
	assert_string_equal(sval(x, "host_memory"), "pinned");
	x = json_array_get(xfers, 2);
	assert_string_equal(sval(x, "direction"), "DtoH");
	assert_true(json_is_false(json_object_get(x, "sync")));
	assert_true(json_is_null(json_object_get(x, "bandwidth_bytes_per_s")));
	assert_int_equal(ival(json_array_get(json_object_get(p, "memsets"), 0), "bytes"), 4096);

	mem = json_object_get(p, "memory");
	assert_int_equal(ival(mem, "alloc_calls"), 2);
	assert_int_equal(ival(mem, "free_calls"), 2);
	assert_int_equal(ival(mem, "freed_bytes"), 4096);
	assert_int_equal(ival(mem, "live_bytes"), 1 << 20);
	assert_int_equal(ival(mem, "peak_bytes"), (1 << 20) + 4096);
	assert_int_equal(ival(mem, "untracked_frees"), 1);
	assert_int_equal(ival(json_array_get(json_object_get(mem, "devices"), 0), "device"), 0);
	assert_int_equal(ival(json_object_get(mem, "pinned_host"), "live_bytes"), 65536);
	assert_int_equal(json_array_size(json_object_get(mem, "leaks")), 0);
	assert_int_equal(ival(json_object_get(mem, "live_at_end_total"), "count"), 2);

	k = json_array_get(json_object_get(p, "kernels"), 0);
	assert_string_equal(sval(k, "name"), "void scale<float>(float*, int)");
	assert_string_equal(sval(k, "mangled"), "_Z5scaleIfEvPT_i");
	assert_int_equal(ival(k, "launches"), 3);
	assert_int_equal(
		json_integer_value(json_array_get(
			json_object_get(json_array_get(json_object_get(k, "configs"), 0), "grid"),
			0)),
		256);
	k = json_array_get(json_object_get(p, "kernels"), 1);
	assert_true(json_is_null(
		json_object_get(k, "name"))); /* unknown: no address posing as a name */
	assert_true(json_is_false(json_object_get(k, "resolved")));
	assert_string_equal(sval(k, "func"), "0xb2");
	assert_string_equal(sval(k, "ret_addr"), "0x405678");
	assert_int_equal(ival(json_array_get(json_object_get(k, "configs"), 0), "smem_bytes"),
			 1024);
	json_decref(doc);
	gp_model_free(m);
}

static void streams_threads_probes_drops(void **state)
{
	struct gp_model *m = scenario_model(true, false);
	json_t *doc = parse(m), *p = json_array_get(json_object_get(doc, "processes"), 0);
	json_t *streams = json_object_get(p, "streams"), *s, *threads, *inst, *drops;

	assert_true(json_is_true(json_object_get(p, "exited")));
	assert_true(json_is_false(json_object_get(p, "traced_from_start")));
	assert_int_equal(
		ival(json_object_get(json_object_get(p, "memory"), "leaks_total"), "count"), 2);
	s = json_array_get(streams, 0);
	assert_string_equal(sval(s, "kind"), "legacy_default");
	assert_int_equal(ival(s, "copies"), 2);
	assert_int_equal(ival(s, "kernels"), 1);
	s = find(streams, "handle", "0x55d0c0ff0000");
	assert_int_equal(ival(s, "created"), 1);
	assert_int_equal(ival(s, "kernels"), 3);
	assert_int_equal(ival(s, "sync_ns"), 150000);
	threads = json_object_get(p, "threads");
	assert_int_equal(json_array_size(threads), 2);
	assert_string_equal(sval(json_array_get(threads, 0), "name"), "python3");
	assert_int_equal(ival(json_array_get(threads, 0), "device"), 0);
	assert_int_equal(ival(json_array_get(threads, 1), "device"), -1);
	assert_int_equal(ival(json_array_get(threads, 1), "calls"), 1);

	inst = json_object_get(doc, "instrumentation");
	assert_int_equal(json_array_size(inst), 4);
	assert_string_equal(sval(json_array_get(inst, 0), "symbol"), "cudaMalloc");
	assert_string_equal(sval(json_array_get(inst, 0), "kind"), "uprobe");
	assert_string_equal(sval(json_array_get(inst, 1), "kind"), "uretprobe");
	assert_string_equal(sval(json_array_get(inst, 0), "offset"), "0x4a2b0");
	assert_int_equal(ival(json_array_get(inst, 3), "hits"), 4);

	drops = json_object_get(doc, "drops");
	const char *names[] = { "ringbuf_full",		"depth_overflow",  "missed_return",
				"return_without_entry", "task_storage",	   "arg_read",
				"malformed_records",	"alloc_out_unread" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_true(json_is_integer(json_object_get(drops, names[i])));
	assert_int_equal(ival(drops, "ringbuf_full"), 2);
	assert_int_equal(ival(doc, "drops_total"), 2);
	json_decref(doc);
	gp_model_free(m);
}

static void deterministic(void **state)
{
	struct gp_model *a = scenario_model(true, true), *b = scenario_model(true, true);
	char *a1 = sink_output(gp_report_json_write, a), *a2 = sink_output(gp_report_json_write, a);
	char *b1 = sink_output(gp_report_json_write, b);
	char *md1 = sink_output(gp_report_md_write, a), *md2 = sink_output(gp_report_md_write, b);

	assert_string_equal(a1, a2);
	assert_string_equal(a1, b1);
	assert_string_equal(md1, md2);
	free(a1);
	free(a2);
	free(b1);
	free(md1);
	free(md2);
	gp_model_free(a);
	gp_model_free(b);
}

static void empty_model_and_odd_strings(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	json_t *doc = parse(m);

	assert_int_equal(json_array_size(json_object_get(doc, "processes")), 0);
	assert_true(json_is_null(json_object_get(json_object_get(doc, "session"), "end_mono_ns")));
	assert_int_equal(ival(doc, "drops_total"), 0);
	json_decref(doc);

	/* a command line is bytes, not necessarily UTF-8 */
	gp_model_process_add(m, 1, "bad\xff", "x \xc3\x28 \xe2\x82\xac", 0, true);
	doc = parse(m);

	json_t *p = json_array_get(json_object_get(doc, "processes"), 0);

	assert_string_equal(sval(p, "comm"), "bad\xef\xbf\xbd");
	assert_string_equal(sval(p, "cmdline"), "x \xef\xbf\xbd( \xe2\x82\xac");
	json_decref(doc);
	gp_model_free(m);
}

static json_t *proc_of(const json_t *doc, json_int_t pid)
{
	size_t i;
	json_t *p;

	json_array_foreach(json_object_get(doc, "processes"), i, p)
		if (ival(p, "pid") == pid)
			return p;
	fail_msg("no process %lld", (long long)pid);
	return NULL;
}

static void assert_null_member(const json_t *o, const char *key)
{
	if (!json_is_null(json_object_get(o, key)))
		fail_msg("%s is not null", key);
}

/* [4242, 4250] */
static void assert_pids(const json_t *arr, const json_int_t *pids, size_t n)
{
	assert_int_equal(json_array_size(arr), n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(json_integer_value(json_array_get(arr, i)), pids[i]);
}

/* Keys of o, in order, are exactly keys (NULL-ended). */
static void assert_keys(const json_t *o, const char *const *keys)
{
	const char *k;
	json_t *v;
	size_t i = 0;

	json_object_foreach((json_t *)o, k, v) {
		if (!keys[i] || strcmp(k, keys[i]))
			fail_msg("key %zu is %s, not %s", i, k, keys[i] ? keys[i] : "(end)");
		i++;
	}
	assert_null(keys[i]);
}

static json_int_t work_host_ns(const json_t *doc, json_int_t pid)
{
	const json_t *w = json_object_get(proc_of(doc, pid), "gpu_work");

	return ival(json_object_get(w, "total"), "host_ns");
}

static void containers_two_in_one_and_a_host_process(void **state)
{
	static const char *const ct_keys[] = { "runtime", "id", "name", "pod", "cgroup", NULL };
	static const char *const agg_keys[] = {
		"runtime",	    "id",    "name", "pod", "processes", "calls",
		"gpu_work_host_ns", "bytes", NULL
	};
	struct gp_model *m = pl_model(NULL, NULL, false);
	json_t *doc = parse(m), *p, *c, *list, *e;
	const char *key;
	json_t *v;
	size_t i = 0;

	/* ns_pid and container next to pid and comm */
	json_object_foreach(proc_of(doc, PL_WEB1), key, v) {
		static const char *const first[] = { "pid",  "ns_pid",	  "host",
						     "comm", "container", "cmdline" };

		if (i < 6)
			assert_string_equal(key, first[i]);
		i++;
	}
	p = proc_of(doc, PL_WEB1);
	assert_int_equal(ival(p, "ns_pid"), 1);
	c = json_object_get(p, "container");
	assert_keys(c, ct_keys);
	assert_string_equal(sval(c, "runtime"), "podman");
	assert_string_equal(sval(c, "id"), PL_ID_A);
	assert_string_equal(sval(c, "name"), "web-1");
	assert_null_member(c, "pod");
	assert_string_equal(sval(c, "cgroup"), PL_CG_A);
	p = proc_of(doc, PL_WEB2);
	assert_int_equal(ival(p, "ns_pid"), 7);
	assert_string_equal(sval(json_object_get(p, "container"), "name"), "web-1");
	assert_null_member(json_object_get(p, "container"), "pod"); /* "" is not known: no pod */
	p = proc_of(doc, PL_HOST);
	assert_int_equal(ival(p, "ns_pid"), PL_HOST);
	assert_null_member(p, "container"); /* a cgroup alone is no container */

	/* one container: its two processes' own entries summed */
	list = json_object_get(doc, "containers");
	assert_int_equal(json_array_size(list), 1);
	e = json_array_get(list, 0);
	assert_keys(e, agg_keys);
	assert_string_equal(sval(e, "runtime"), "podman");
	assert_string_equal(sval(e, "id"), PL_ID_A);
	assert_string_equal(sval(e, "name"), "web-1");
	assert_null_member(e, "pod");
	assert_pids(json_object_get(e, "processes"), (const json_int_t[]){ PL_WEB1, PL_WEB2 }, 2);
	assert_int_equal(ival(e, "calls"), 4);
	assert_int_equal(ival(e, "calls"), ival(proc_of(doc, PL_WEB1), "api_calls") +
						   ival(proc_of(doc, PL_WEB2), "api_calls"));
	/* the copies; the memset is no transfer */
	assert_int_equal(ival(e, "bytes"), (1 << 20) + 4096);
	assert_int_equal(ival(e, "gpu_work_host_ns"), 250000 + 7 + 3000 + 10);
	assert_int_equal(ival(e, "gpu_work_host_ns"),
			 work_host_ns(doc, PL_WEB1) + work_host_ns(doc, PL_WEB2));
	/* the summary still counts every process */
	assert_int_equal(ival(json_object_get(doc, "summary"), "api_calls"), 5);
	json_decref(doc);
	gp_model_free(m);
}

static void containers_in_pods(void **state)
{
	struct gp_model *m = pl_model(NULL, NULL, true);
	json_t *doc = parse(m), *c, *pod, *list, *e;

	/* a Kubernetes container whose name is not known, in a pod */
	c = json_object_get(proc_of(doc, PL_K8S), "container");
	assert_string_equal(sval(c, "runtime"), "containerd");
	assert_string_equal(sval(c, "id"), PL_ID_B);
	assert_null_member(c, "name");
	pod = json_object_get(c, "pod");
	assert_string_equal(sval(pod, "uid"), PL_UID_B);
	assert_string_equal(sval(pod, "name"), "trainer-0");
	assert_string_equal(sval(pod, "namespace"), "ml");
	/* a pod whose container is not known: the object, its id null */
	c = json_object_get(proc_of(doc, PL_PODONLY), "container");
	assert_true(json_is_object(c));
	assert_string_equal(sval(c, "runtime"), "kubernetes");
	assert_null_member(c, "id");
	assert_null_member(c, "name");
	pod = json_object_get(c, "pod");
	assert_string_equal(sval(pod, "uid"), PL_UID_C);
	assert_null_member(pod, "name");
	assert_null_member(pod, "namespace");
	assert_int_equal(ival(proc_of(doc, PL_PODONLY), "ns_pid"), 3);

	/* named first (web-1), then by id; the pod-only one last, by its pod's uid */
	list = json_object_get(doc, "containers");
	assert_int_equal(json_array_size(list), 3);
	assert_string_equal(sval(json_array_get(list, 0), "name"), "web-1");
	e = json_array_get(list, 1);
	assert_string_equal(sval(e, "id"), PL_ID_B);
	assert_null_member(e, "name");
	assert_string_equal(sval(json_object_get(e, "pod"), "name"), "trainer-0");
	assert_pids(json_object_get(e, "processes"), (const json_int_t[]){ PL_K8S }, 1);
	assert_int_equal(ival(e, "calls"), 1);
	assert_int_equal(ival(e, "gpu_work_host_ns"), 7);
	assert_int_equal(ival(e, "bytes"), 0);
	e = json_array_get(list, 2);
	assert_null_member(e, "id");
	assert_string_equal(sval(e, "runtime"), "kubernetes");
	assert_string_equal(sval(json_object_get(e, "pod"), "uid"), PL_UID_C);
	assert_pids(json_object_get(e, "processes"), (const json_int_t[]){ PL_PODONLY }, 1);
	assert_int_equal(ival(e, "gpu_work_host_ns"), 0); /* a synchronisation queues no work */
	json_decref(doc);
	gp_model_free(m);
}

/* A tap that applies each operation to another model at once: a capture, without the file. */
static void apply_to(void *ctx, unsigned op, const void *data, size_t len)
{
	assert_non_null(data);
	assert_int_equal(gp_capture_apply(ctx, NULL, op, data, len), 0);
}

static void containers_from_the_operations(void **state)
{
	struct gp_model *twin = gp_model_new(NULL);
	const struct gp_model_tap tap = { .ctx = twin, .record = apply_to };
	struct gp_model *m = pl_model(NULL, &tap, true);
	char *a = sink_output(gp_report_json_write, m),
	     *b = sink_output(gp_report_json_write, twin);

	assert_non_null(strstr(a, PL_ID_B));
	assert_string_equal(b, a);
	free(a);
	free(b);
	gp_model_free(m);
	gp_model_free(twin);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(top_level_and_session),
		cmocka_unit_test(api_rows),
		cmocka_unit_test(transfers_memory_kernels),
		cmocka_unit_test(streams_threads_probes_drops),
		cmocka_unit_test(deterministic),
		cmocka_unit_test(empty_model_and_odd_strings),
		cmocka_unit_test(containers_two_in_one_and_a_host_process),
		cmocka_unit_test(containers_in_pods),
		cmocka_unit_test(containers_from_the_operations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
