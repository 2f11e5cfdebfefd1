/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_trace_json.c — the timeline (timeline/trace_json.c) fed through the
 * model's observer: the file is valid JSON in the Chrome trace format, one
 * slice per outermost call with its decoded arguments, stream tracks,
 * flows from queued work to the synchronisation that covered it, counters,
 * names (a process's with its container and pod), the cap and its drop
 * counter, strings escaped.
 */
#include <errno.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "records.h"
#include "places.h"
#include "timeline/timeline_session.h"

#define S1  0x55550000a000ULL
#define S2  0x55550000b000ULL
#define DEV 0x700000000000ULL
#define HST 0x7f0000000000ULL
#define T0  5000000000ULL

/* A kernel name that needs escaping: quotes, a backslash, a byte that is not UTF-8. */
static int odd_kernel_name(void *ctx, __u32 tgid, __u64 func, __u64 ret_addr, const __u64 *stack,
			   unsigned nstack, char *name, size_t name_len, char *mangled,
			   size_t mangled_len)
{
	snprintf(name, name_len, "k<\"q\\\xff\">");
	snprintf(mangled, mangled_len, "%s", "");
	return 0;
}

static const struct gp_resolver resolver = { .kernel_name = odd_kernel_name };

struct fixture {
	char dir[64];
	struct gp_model *m;
	struct gp_timeline *tl;
	__u64 t;
	__u64 max_events;
};

static void start(struct fixture *f, __u64 max_events)
{
	snprintf(f->dir, sizeof(f->dir), "/tmp/gp-test-trace-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	f->m = gp_model_new(&resolver);
	assert_non_null(f->m);
	assert_int_equal(gp_model_process_add(f->m, T_PID, "train", "train --x", T0, true), 0);
	assert_int_equal(gp_model_thread_name(f->m, T_PID, T_TID + 1, "loader"), 0);
	f->max_events = max_events;
	f->tl = gp_timeline_session_open(
		f->dir, (struct gp_timeline_opts){ .max_events = max_events }, f->m);
	assert_non_null(f->tl);
	f->t = T0 + 1000;
}

/* Feeds c at the next time on the clock (1 us apart). */
static void at(struct fixture *f, struct gp_api_call c)
{
	c.hdr.ts_ns = f->t;
	f->t += c.dur_ns + 1000;
	feed(f->m, &c);
}

static json_t *finish(struct fixture *f, struct gp_timeline_counts *tc)
{
	char path[128];
	json_error_t err;
	json_t *doc;

	assert_int_equal(gp_timeline_session_close(f->tl, f->dir, f->max_events, f->m, tc), 0);
	snprintf(path, sizeof(path), "%s/trace.json.tmp", f->dir);
	assert_int_not_equal(access(path, F_OK), 0); /* renamed */
	snprintf(path, sizeof(path), "%s/trace.json", f->dir);
	doc = json_load_file(path, 0, &err);
	if (!doc)
		fail_msg("trace.json: %s (line %d)", err.text, err.line);
	unlink(path);
	rmdir(f->dir);
	return doc;
}

static const char *str(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

static bool same(const json_t *a, const json_t *b, const char *k)
{
	return json_equal(json_object_get(a, k), json_object_get(b, k));
}

/*
 * The events, each begin ("B") and the end ("E") right after it (the writer keeps them adjacent:
 * Chrome's engine pairs them on one stack) made one "X" with its dur, in place.
 */
static json_t *events(json_t *doc)
{
	json_t *ev = json_object_get(doc, "traceEvents");

	assert_true(json_is_array(ev));
	assert_string_equal(json_string_value(json_object_get(doc, "displayTimeUnit")), "ns");
	for (size_t i = 0; i < json_array_size(ev); i++) {
		json_t *b = json_array_get(ev, i), *e = json_array_get(ev, i + 1);

		assert_string_not_equal(str(b, "ph"), "E");
		if (strcmp(str(b, "ph"), "B"))
			continue;
		assert_non_null(e);
		assert_string_equal(str(e, "ph"), "E");
		assert_true(same(b, e, "pid") && same(b, e, "tid") && same(b, e, "cat") &&
			    same(b, e, "name"));
		json_object_set_new(b, "ph", json_string("X"));
		json_object_set_new(b, "dur",
				    json_real(json_real_value(json_object_get(e, "ts")) -
					      json_real_value(json_object_get(b, "ts"))));
		json_array_remove(ev, i + 1);
	}
	return ev;
}

static json_int_t num(const json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/* Events of phase ph (and name, when not NULL), counted; *last the last one. */
static size_t count(json_t *ev, const char *ph, const char *name, json_t **last)
{
	size_t i, n = 0;
	json_t *e;

	json_array_foreach(ev, i, e) {
		if (strcmp(str(e, "ph"), ph) || (name && strcmp(str(e, "name"), name)))
			continue;
		n++;
		if (last)
			*last = e;
	}
	return n;
}

/* ts in ns from the decimal microseconds (exactly three decimals are written). */
static __u64 ts_ns(const json_t *e, const char *k)
{
	return (__u64)(json_real_value(json_object_get(e, k)) * 1000.0 + 0.5);
}

static void slices_args_and_nesting(void **state)
{
	struct fixture f;
	const __u32 g[3] = { 4, 1, 1 };
	struct gp_api_call c;
	struct gp_timeline_counts tc;
	json_t *doc, *ev, *e = NULL, *args;

	start(&f, 0);
	at(&f, rec_alloc(GP_API_CUDA_MALLOC, T_TID, DEV, 1 << 20, 0));
	at(&f, rec_alloc(GP_API_CUDA_MALLOC_HOST, T_TID, HST, 4096, 0));
	at(&f, rec_memcpy(GP_API_CUDA_MEMCPY, DEV, HST, 4096, GP_MEMCPY_HTOD, 0, 500, 0));
	at(&f, rec_memcpy(GP_API_CUDA_MEMCPY, DEV, 0x1000, 100, GP_MEMCPY_HTOD, 0, 50,
			  21)); /* failed */
	c = rec_launch(GP_API_CUDA_LAUNCH_KERNEL, 1, 2, g, g, 0, S1, 0);
	at(&f, c);
	c = rec(GP_API_CU_LAUNCH_KERNEL, T_PID, T_TID, 0, 3,
		0); /* the runtime's driver call: nested */
	c.hdr.flags |= (__u32)GP_API_CUDA_LAUNCH_KERNEL << GP_EVF_PARENT_SHIFT;
	at(&f, c);
	at(&f, rec_ptr(GP_API_CUDA_FREE, T_TID, DEV, 0, 0));
	doc = finish(&f, &tc);
	ev = events(doc);

	assert_int_equal(tc.calls, 6);
	assert_int_equal(tc.kept, 6);
	assert_int_equal(tc.left_out, 0);
	assert_int_equal(count(ev, "X", "cuLaunchKernel", NULL), 0);
	assert_int_equal(count(ev, "X", "cudaMemcpy", NULL), 2);
	assert_int_equal(count(ev, "X", "cudaLaunchKernel", &e), 1);
	assert_string_equal(str(e, "cat"), "api");
	args = json_object_get(e, "args");
	assert_string_equal(str(args, "family"), "cudart");
	assert_string_equal(str(args, "kernel"), "k<\"q\\\xef\xbf\xbd\">");
	assert_string_equal(str(args, "stream"), "0x55550000a000");
	assert_string_equal(str(args, "op"), "kernel");
	assert_int_equal(num(e, "tid"), T_TID);

	/* the copies: bytes, direction, host memory; the failed one its code and name */
	size_t i;
	int seen = 0;

	json_array_foreach(ev, i, e) {
		if (strcmp(str(e, "name"), "cudaMemcpy"))
			continue;
		args = json_object_get(e, "args");
		if (num(args, "ret") == 0) {
			assert_int_equal(num(args, "bytes"), 4096);
			assert_string_equal(str(args, "direction"), "HtoD");
			assert_string_equal(str(args, "host_memory"), "pinned");
			assert_int_equal(ts_ns(e, "dur"), 500);
		} else {
			assert_int_equal(num(args, "ret"), 21);
			assert_string_equal(str(args, "error"), "cudaErrorInvalidMemcpyDirection");
		}
		seen++;
	}
	assert_int_equal(seen, 2);

	/* live device memory after the allocation and after the free */
	assert_int_equal(count(ev, "C", "device memory (live bytes)", &e), 2);
	assert_int_equal(num(json_object_get(e, "args"), "live_bytes"), 0);
	/* cumulative bytes of successful copies */
	count(ev, "C", "bytes copied (cumulative)", &e);
	assert_int_equal(num(json_object_get(e, "args"), "HtoD"), 4096);

	/* names: the process, its thread, the stream track (sorted after threads) */
	assert_int_equal(count(ev, "M", "process_name", &e), 1);
	assert_string_equal(str(json_object_get(e, "args"), "name"), "train");
	json_array_foreach(ev, i, e) {
		if (strcmp(str(e, "ph"), "M") || strcmp(str(e, "name"), "thread_name"))
			continue;
		if (num(e, "tid") == T_TID)
			assert_string_equal(str(json_object_get(e, "args"), "name"), "train");
		else
			assert_string_equal(str(json_object_get(e, "args"), "name"),
					    "stream 0x55550000a000 (host-observed)");
	}
	assert_int_equal(count(ev, "M", "thread_name", NULL), 2);
	assert_int_equal(num(json_object_get(doc, "otherData"), "calls_left_out"), 0);
	assert_int_equal(gp_model_drop_get(f.m, GP_TIMELINE_DROP), 0);
	json_decref(doc);
	gp_model_free(f.m);
}

/* The flow of id, start and finish: exactly one each. */
static void flow_ends(json_t *ev, json_int_t id, json_t **s, json_t **fin)
{
	size_t i, ns = 0, nf = 0;
	json_t *e;

	json_array_foreach(ev, i, e) {
		if (num(e, "id") != id)
			continue;
		if (!strcmp(str(e, "ph"), "s")) {
			*s = e;
			ns++;
		} else if (!strcmp(str(e, "ph"), "f")) {
			*fin = e;
			nf++;
		}
	}
	assert_int_equal(ns, 1);
	assert_int_equal(nf, 1);
}

static void flows_to_the_covering_synchronisation(void **state)
{
	struct fixture f;
	const __u32 g[3] = { 1, 1, 1 };
	struct gp_timeline_counts tc;
	json_t *doc, *ev, *e, *s = NULL, *fin = NULL;
	__u64 copy_ts, sync_ts, sync_end, dev_ts;
	size_t i;

	start(&f, 0);
	at(&f, rec_create(GP_API_CUDA_STREAM_CREATE, S1));
	at(&f, rec_create(GP_API_CUDA_STREAM_CREATE, S2));
	at(&f, rec_launch(GP_API_CUDA_LAUNCH_KERNEL, 1, 2, g, g, 0, S1, 0)); /* S1 item 0 */
	copy_ts = f.t;
	at(&f, rec_memcpy(GP_API_CUDA_MEMCPY_ASYNC, DEV, HST, 64, GP_MEMCPY_HTOD, S1, 5,
			  0));						     /* S1 item 1 */
	at(&f, rec_launch(GP_API_CUDA_LAUNCH_KERNEL, 1, 2, g, g, 0, S2, 0)); /* S2 item 0 */
	sync_ts = f.t;
	at(&f,
	   rec_h(GP_API_CUDA_STREAM_SYNCHRONIZE, T_TID + 1, S1, 0, 2000, 0)); /* covers S1 0..1 */
	sync_end = sync_ts + 2000;
	at(&f, rec_launch(GP_API_CUDA_LAUNCH_KERNEL, 1, 2, g, g, 0, S1, 0)); /* S1 item 2 */
	dev_ts = f.t;
	at(&f,
	   rec_h(GP_API_CUDA_DEVICE_SYNCHRONIZE, T_TID, 0, 0, 3000, 0)); /* S1 item 2, S2 item 0 */
	at(&f, rec_memset(GP_API_CUDA_MEMSET_ASYNC, DEV, 16, S2, 0)); /* S2 item 1: never synced */
	doc = finish(&f, &tc);
	ev = events(doc);

	/* the memset on S2 was never synchronised: its flow has no finish */
	assert_int_equal(count(ev, "s", NULL, NULL), 5);
	assert_int_equal(count(ev, "f", NULL, NULL), 4);
	assert_int_equal(count(ev, "I", NULL, NULL), 5);
	/* the copy on S1 ends on the stream synchronisation of the other thread, at its start */
	json_array_foreach(ev, i, e)
		if (!strcmp(str(e, "ph"), "X") && !strcmp(str(e, "name"), "cudaMemcpyAsync"))
			break;
	assert_non_null(e);
	assert_int_equal(ts_ns(e, "ts"), copy_ts);
	{
		json_int_t id = 0;
		json_t *x;
		size_t k;

		json_array_foreach(ev, k, x)
			if (!strcmp(str(x, "ph"), "s") && ts_ns(x, "ts") == ts_ns(e, "ts"))
				id = num(x, "id");
		flow_ends(ev, id, &s, &fin);
	}
	assert_int_equal(num(s, "tid"), T_TID);
	assert_int_equal(num(fin, "tid"), T_TID + 1);
	assert_string_equal(str(fin, "bp"), "e");
	assert_int_equal(ts_ns(fin, "ts"), sync_ts);
	assert_string_equal(str(fin, "cat"), str(s, "cat"));

	/* device synchronisation: flows from both streams end on it */
	size_t on_dev = 0;

	json_array_foreach(ev, i, e)
		if (!strcmp(str(e, "ph"), "f") && num(e, "tid") == T_TID &&
		    ts_ns(e, "ts") == dev_ts)
			on_dev++;
	assert_int_equal(on_dev, 2);

	/* windows on the stream tracks: S1 twice, S2 once synced, once not */
	assert_int_equal(count(ev, "X", "queued work, done by the synchronisation's return", NULL),
			 3);
	assert_int_equal(count(ev, "X", "queued work, no synchronisation recorded", &e), 1);
	assert_int_equal(num(json_object_get(e, "args"), "items"), 1);
	json_array_foreach(ev, i, e) {
		json_t *args = json_object_get(e, "args");

		if (strcmp(str(e, "name"), "queued work, done by the synchronisation's return") ||
		    strcmp(str(args, "synchronised_by"), "cudaStreamSynchronize"))
			continue;
		assert_int_equal(num(args, "items"), 2);
		assert_int_equal(ts_ns(e, "ts") + ts_ns(e, "dur"), sync_end);
	}
	json_decref(doc);
	gp_model_free(f.m);
}

static void cap_leaves_out_and_counts(void **state)
{
	struct fixture f;
	const __u32 g[3] = { 1, 1, 1 };
	struct gp_timeline_counts tc;
	json_t *doc, *ev;

	start(&f, 3);
	for (int i = 0; i < 4; i++)
		at(&f, rec_launch(GP_API_CUDA_LAUNCH_KERNEL, 1, 2, g, g, 0, S1, 0));
	at(&f, rec_h(GP_API_CUDA_STREAM_SYNCHRONIZE, T_TID, S1, 0, 100, 0));
	doc = finish(&f, &tc);
	ev = events(doc);
	assert_int_equal(tc.calls, 5);
	assert_int_equal(tc.kept, 3);
	assert_int_equal(tc.left_out, 2);
	assert_int_equal(gp_model_drop_get(f.m, GP_TIMELINE_DROP), 2);
	assert_int_equal(num(json_object_get(doc, "otherData"), "calls_left_out"), 2);
	assert_int_equal(num(json_object_get(doc, "otherData"), "max_events"), 3);
	assert_int_equal(count(ev, "X", "cudaLaunchKernel", NULL), 3);
	/* the three flows started have no finish: their synchronisation was left out */
	assert_int_equal(count(ev, "s", NULL, NULL), 3);
	assert_int_equal(count(ev, "f", NULL, NULL), 0);
	assert_int_equal(count(ev, "X", "queued work, no synchronisation recorded", NULL), 1);
	json_decref(doc);
	gp_model_free(f.m);
}

static struct gp_sched_slice slice(__u32 tid, __u64 start, __u64 end, __u16 left, __u32 flags,
				   __u32 minflt, __u32 n_start, __u32 n_end)
{
	struct gp_sched_slice sl = {
		.hdr = { .type = GP_EV_SCHED_SLICE,
			 .size = sizeof(sl),
			 .tgid = T_PID,
			 .tid = tid,
			 .flags = flags,
			 .ts_ns = start },
		.end_ns = end,
		.minor_faults = minflt,
		.cpu = 1,
		.left = left,
		.oncpu_threads_start = n_start,
		.oncpu_threads_end = n_end,
	};

	return sl;
}

/* --timeline-sched records: slices and the gaps between them on a track of their own, counters, flags. */
static void sched_slices_gaps_and_counters(void **state)
{
	struct fixture f;
	struct gp_timeline_counts tc;
	struct gp_sched_slice sl[] = {
		slice(T_TID, T0 + 1000, T0 + 5000, GP_SL_BLOCKED, 0, 3, 1, 0),
		slice(T_TID + 1, T0 + 2000, T0 + 9000, GP_SL_PREEMPTED, GP_SSF_FAULTS_UNKNOWN, 0, 2,
		      1),
		/* its arrival unseen: an estimated start before the previous end is moved up to it */
		slice(T_TID, T0 + 4000, T0 + 12000, GP_SL_EXITED,
		      GP_SSF_START_ESTIMATED | GP_SSF_UNCOUNTED, 2, 0, 0),
		slice(T_TID + 1, T0 + 20000, T0 + 21000, GP_SL_BLOCKED, 0, 0, 1, 0),
	};
	struct gp_sched_slice bad = slice(T_TID, T0 + 5, T0 + 4, GP_SL_BLOCKED, 0, 0, 0, 0);
	json_t *doc, *ev, *e, *last = NULL;
	size_t i, gaps_blocked = 0, gaps_runnable = 0, names = 0;

	start(&f, 0);
	for (i = 0; i < sizeof(sl) / sizeof(sl[0]); i++)
		assert_int_equal(gp_model_ingest(f.m, &sl[i], sizeof(sl[i])), 0);
	assert_int_equal(gp_model_ingest(f.m, &bad, sizeof(bad)),
			 -EINVAL); /* ends before it starts */
	assert_int_equal(gp_model_drop_get(f.m, "malformed_records"), 1);
	doc = finish(&f, &tc);
	ev = events(doc);
	assert_int_equal(tc.slices, 4);
	assert_int_equal(tc.slices_left_out, 0);
	assert_int_equal(count(ev, "X", "on CPU", NULL), 4);
	json_array_foreach(ev, i, e) {
		const json_t *args = json_object_get(e, "args");

		/* T_TID's estimated second slice starts where its first ended: no gap */
		gaps_blocked += !strcmp(str(e, "name"), "off CPU: blocked");
		if (!strcmp(str(e, "name"), "off CPU: runnable (preempted)")) {
			gaps_runnable++;
			assert_int_equal(ts_ns(e, "ts"), T0 + 9000);
			assert_int_equal(ts_ns(e, "dur"), 11000);
		}
		if (!strcmp(str(e, "name"), "on CPU") && num(e, "tid") == 0x60000000 &&
		    !strcmp(str(args, "left"), "exited")) {
			assert_int_equal(ts_ns(e, "ts"), T0 + 5000);
			assert_int_equal(ts_ns(e, "dur"), 7000);
			assert_string_equal(str(args, "start"),
					    "estimated: arrival not reported by the kernel");
			assert_true(json_is_false(json_object_get(args, "counted")));
		}
		if (!strcmp(str(e, "name"), "on CPU") && !strcmp(str(args, "left"), "preempted"))
			assert_string_equal(str(args, "page_faults"), "unknown");
		if (!strcmp(str(e, "ph"), "M") &&
		    strstr(str(json_object_get(e, "args"), "name"), "on/off CPU"))
			names++;
	}
	assert_int_equal(gaps_blocked, 0);
	assert_int_equal(gaps_runnable, 1);
	assert_int_equal(names, 2);
	/* two samples per counted slice; none for the one whose arrival was not counted */
	assert_int_equal(count(ev, "C", "on-CPU threads", NULL), 6);
	assert_int_equal(count(ev, "C", "page faults, tid 4242", &last), 2);
	assert_int_equal(num(json_object_get(last, "args"), "minor"), 5);
	assert_int_equal(num(json_object_get(doc, "otherData"), "sched_slices"), 4);
	assert_int_equal(gp_model_drop_get(f.m, GP_TIMELINE_SCHED_DROP), 0);
	json_decref(doc);
	gp_model_free(f.m);
}

static void every_report_lists_the_drop_and_stale_files_go(void **state)
{
	char dir[] = "/tmp/gp-test-trace-XXXXXX", path[96];
	struct gp_model *m = gp_model_new(NULL);
	FILE *f;

	assert_non_null(m);
	assert_int_equal(gp_model_drop_get(m, GP_TIMELINE_DROP), 0);
	bool listed = false;

	for (size_t i = 0; i < m->ndrops; i++)
		listed |= !strcmp(m->drops[i].name, GP_TIMELINE_DROP);
	assert_true(listed); /* at 0 in every report */
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/trace.json", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	gp_timeline_remove_stale(dir);
	assert_int_not_equal(access(path, F_OK), 0);
	assert_int_equal(rmdir(dir), 0);
	gp_model_free(m);
}

/* A process's name says its container, pod and pid in its namespace; a host process's: its name. */
static void process_names_say_the_container(void **state)
{
	static const struct {
		__u32 pid;
		const char *name;
	} want[] = {
		{ PL_WEB1, "basic_ops (container web-1, ns pid 1)" },
		{ PL_WEB2, "worker (container web-1, ns pid 7)" },
		{ PL_HOST, "host_job" },
		{ PL_K8S, "trainer (container 0badc0de0bad, pod ml/trainer-0, ns pid 1)" },
		{ PL_PODONLY, "sidecar (pod " PL_UID_C ", ns pid 3)" },
	};
	struct fixture f = { .dir = "/tmp/gp-test-trace-XXXXXX" };
	struct gp_timeline_counts tc;
	json_t *doc, *ev, *e;
	size_t i, seen = 0;

	assert_non_null(mkdtemp(f.dir));
	f.m = gp_model_new(NULL);
	assert_non_null(f.m);
	pl_processes(f.m, true, T0);
	f.tl = gp_timeline_session_open(f.dir, (struct gp_timeline_opts){ 0 }, f.m);
	assert_non_null(f.tl);
	f.t = T0 + 1000;
	pl_calls(f.m, true, &f.t);
	doc = finish(&f, &tc);
	ev = events(doc);
	assert_int_equal(count(ev, "M", "process_name", NULL), 5);
	json_array_foreach(ev, i, e) {
		if (strcmp(str(e, "ph"), "M") || strcmp(str(e, "name"), "process_name"))
			continue;
		for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
			if (num(e, "pid") == want[k].pid) {
				assert_string_equal(str(json_object_get(e, "args"), "name"),
						    want[k].name);
				seen++;
			}
	}
	assert_int_equal(seen, 5);
	json_decref(doc);
	gp_model_free(f.m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(slices_args_and_nesting),
		cmocka_unit_test(flows_to_the_covering_synchronisation),
		cmocka_unit_test(cap_leaves_out_and_counts),
		cmocka_unit_test(every_report_lists_the_drop_and_stale_files_go),
		cmocka_unit_test(sched_slices_gaps_and_counters),
		cmocka_unit_test(process_names_say_the_container),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
