/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_model_cpu.c — CPU, scheduling and page-fault statistics through
 * gp_model_ingest(): thread accounts (GP_EV_THREAD_CPU) summed per process,
 * what happened inside calls (the attribution fields of GP_EV_API_CALL) per
 * API, per thread and for synchronisation calls, the verdict and its
 * thresholds (looking at the threads that made GPU calls), and the "cpu"
 * section of report.json and report.md.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "records.h"
#include "scenario.h"

#define MS    1000000ull
#define START (1000 * MS)

static struct gp_thread_cpu thread_rec(__u32 tid, __u64 start, __u64 end, __u64 oncpu, __u64 offcpu,
				       __u64 vol, __u64 invol, __u64 minf, __u64 majf, __u32 flags)
{
	struct gp_thread_cpu r;

	memset(&r, 0, sizeof(r));
	r.hdr.type = GP_EV_THREAD_CPU;
	r.hdr.size = sizeof(r);
	r.hdr.tgid = T_PID;
	r.hdr.tid = tid;
	r.hdr.ts_ns = start;
	r.end_ns = end;
	r.oncpu_ns = oncpu;
	r.offcpu_ns = offcpu;
	r.vol_switches = vol;
	r.invol_switches = invol;
	r.minor_faults = minf;
	r.major_faults = majf;
	r.flags = flags;
	snprintf(r.comm, sizeof(r.comm), "t%u", tid);
	return r;
}

static void feed_thread(struct gp_model *m, const struct gp_thread_cpu *r)
{
	assert_int_equal(gp_model_ingest(m, r, sizeof(*r)), 0);
}

/* A call of api on tid during which the thread was off-CPU offcpu ns, switched and faulted. */
static void feed_call(struct gp_model *m, enum gp_api_id api, __u32 tid, __u64 dur, __u64 offcpu,
		      __u32 vol, __u32 invol, __u32 minf, __u32 majf)
{
	struct gp_api_call c = rec(api, T_PID, tid, START + 10 * MS, dur, 0);

	c.offcpu_ns = offcpu;
	c.vol_switches = vol;
	c.invol_switches = invol;
	c.minor_faults = minf;
	c.major_faults = majf;
	feed(m, &c);
}

static struct gp_model *model(void)
{
	struct gp_model *m = gp_model_new(NULL);

	assert_non_null(m);
	assert_int_equal(gp_model_process_add(m, T_PID, "train", "train --steps 3", START, false),
			 0);
	return m;
}

static void thread_accounts_add_up(void **state)
{
	struct gp_model *m = model();
	struct gp_cpu_summary s;
	struct gp_thread_cpu r;

	r = thread_rec(T_TID, START, START + 1000 * MS, 600 * MS, 400 * MS, 10, 5, 100, 1, 0);
	feed_thread(m, &r);
	r = thread_rec(5001, START + 100 * MS, START + 300 * MS, 50 * MS, 150 * MS, 3, 0, 20, 0,
		       GP_TCF_STARTED | GP_TCF_EXITED);
	feed_thread(m, &r);
	r = thread_rec(5002, START, START + 1000 * MS, 0, 1000 * MS, 0, 0, 0, 0,
		       GP_TCF_FAULTS_UNKNOWN);
	feed_thread(m, &r);
	/* a tid reused within the session: both threads' accounts add up */
	r = thread_rec(5001, START + 500 * MS, START + 600 * MS, 10 * MS, 90 * MS, 1, 1, 5, 0,
		       GP_TCF_STARTED | GP_TCF_EXITED);
	feed_thread(m, &r);

	gp_cpu_summarize(proc(m, T_PID), START, START + 1000 * MS, &s);
	assert_true(s.known);
	assert_int_equal(s.threads, 3);
	assert_int_equal(s.threads_faults_unknown, 1);
	assert_int_equal(s.wall_ns, 1000 * MS);
	assert_int_equal(s.cpu_ns, 660 * MS);
	assert_int_equal(s.all.offcpu_ns, 1640 * MS);
	assert_int_equal(s.all.vol_switches, 14);
	assert_int_equal(s.all.invol_switches, 6);
	assert_int_equal(s.all.minor_faults, 125);
	assert_int_equal(s.all.major_faults, 1);

	const struct gp_thread *t = gp_u64map_get(&proc(m, T_PID)->threads, 5001);

	assert_non_null(t);
	assert_int_equal(t->cpu.start_ns, START + 100 * MS);
	assert_int_equal(t->cpu.end_ns, START + 600 * MS);
	assert_string_equal(t->name, "t5001");
	gp_model_free(m);
}

static void attribution_per_api_thread_and_sync(void **state)
{
	struct gp_model *m = model();
	const struct gp_process *p;
	const struct gp_thread *t;

	feed_call(m, GP_API_CUDA_STREAM_SYNCHRONIZE, T_TID, 50 * MS, 48 * MS, 1, 0, 0, 0);
	feed_call(m, GP_API_CUDA_STREAM_SYNCHRONIZE, T_TID, 30 * MS, 29 * MS, 2, 1, 0, 0);
	feed_call(m, GP_API_CUDA_MEMCPY, T_TID, 5 * MS, 1 * MS, 0, 2, 1024, 0);
	feed_call(m, GP_API_CUDA_DEVICE_SYNCHRONIZE, 5001, 20 * MS, 19 * MS, 1, 0, 0, 0);

	p = proc(m, T_PID);
	assert_int_equal(p->api[GP_API_CUDA_STREAM_SYNCHRONIZE]->inside.offcpu_ns, 77 * MS);
	assert_int_equal(p->api[GP_API_CUDA_STREAM_SYNCHRONIZE]->inside.vol_switches, 3);
	assert_int_equal(p->api[GP_API_CUDA_STREAM_SYNCHRONIZE]->inside.invol_switches, 1);
	assert_int_equal(p->api[GP_API_CUDA_MEMCPY]->inside.minor_faults, 1024);
	assert_int_equal(p->in_calls.offcpu_ns, 97 * MS);
	assert_int_equal(p->in_calls.minor_faults, 1024);
	/* cudaMemcpy is not a synchronisation call */
	assert_int_equal(p->in_sync_calls.offcpu_ns, 96 * MS);
	assert_int_equal(p->in_sync_calls.minor_faults, 0);
	t = gp_u64map_get(&p->threads, T_TID);
	assert_int_equal(t->in_calls.offcpu_ns, 78 * MS);
	assert_int_equal(t->in_calls.invol_switches, 3);
	gp_model_free(m);
}

/* One GPU-calling thread with the given split of a 1 s window, plus an idle helper thread. */
static enum gp_verdict verdict_of(__u64 oncpu, __u64 offcpu, __u64 offcpu_in_calls,
				  enum gp_api_id api)
{
	struct gp_model *m = model();
	struct gp_cpu_summary s;
	struct gp_thread_cpu r;

	r = thread_rec(T_TID, START, START + 1000 * MS, oncpu, offcpu, 1, 1, 0, 0, 0);
	feed_thread(m, &r);
	r = thread_rec(7777, START, START + 1000 * MS, 0, 1000 * MS, 0, 0, 0, 0, GP_TCF_NEVER_RAN);
	feed_thread(m, &r);
	feed_call(m, api, T_TID, offcpu_in_calls + MS, offcpu_in_calls, 1, 0, 0, 0);
	gp_cpu_summarize(proc(m, T_PID), START, START + 1000 * MS, &s);
	/* the idle helper is not what the verdict looks at */
	assert_int_equal(s.focus_threads, 1);
	assert_int_equal(s.focus_wall_ns, 1000 * MS);
	if (offcpu_in_calls)
		assert_int_equal(s.top_api, api);
	gp_model_free(m);
	return s.verdict;
}

static void verdict_thresholds(void **state)
{
	/* on-CPU >= 70 % of the window: CPU-bound, whatever the rest */
	assert_int_equal(verdict_of(700 * MS, 300 * MS, 300 * MS, GP_API_CUDA_STREAM_SYNCHRONIZE),
			 GP_VERDICT_CPU_BOUND);
	assert_int_equal(verdict_of(699 * MS, 301 * MS, 301 * MS, GP_API_CUDA_STREAM_SYNCHRONIZE),
			 GP_VERDICT_WAITING_GPU);
	/* off-CPU mostly inside GPU calls (>= 50 %): waiting on the GPU */
	assert_int_equal(verdict_of(100 * MS, 900 * MS, 450 * MS, GP_API_CUDA_DEVICE_SYNCHRONIZE),
			 GP_VERDICT_WAITING_GPU);
	assert_int_equal(verdict_of(100 * MS, 900 * MS, 449 * MS, GP_API_CUDA_DEVICE_SYNCHRONIZE),
			 GP_VERDICT_WAITING_OTHER);
	assert_int_equal(verdict_of(100 * MS, 900 * MS, 0, GP_API_CUDA_MEMCPY),
			 GP_VERDICT_WAITING_OTHER);
}

/* A thread that wants the CPU but gets only part of it is CPU-bound, not waiting on I/O. */
static void runnable_wait_counts_as_cpu_bound(void **state)
{
	struct gp_model *m = model();
	struct gp_cpu_summary s;
	struct gp_thread_cpu r =
		thread_rec(T_TID, START, START + 1000 * MS, 400 * MS, 600 * MS, 0, 90, 0, 0, 0);
	char *md;

	r.runnable_ns = 350 * MS; /* preempted: runnable, waiting for a CPU */
	feed_thread(m, &r);
	feed_call(m, GP_API_CUDA_LAUNCH_KERNEL, T_TID, MS, 0, 0, 0, 0, 0);
	gp_cpu_summarize(proc(m, T_PID), START, START + 1000 * MS, &s);
	assert_int_equal(s.runnable_ns, 350 * MS);
	assert_int_equal(s.verdict, GP_VERDICT_CPU_BOUND);
	md = sink_output(gp_report_md_write, m);
	assert_non_null(strstr(md, "the CPUs are oversubscribed"));
	assert_non_null(strstr(md, "of which runnable, waiting for a CPU"));
	free(md);
	gp_model_free(m);
}

static void no_accounts_no_verdict(void **state)
{
	struct gp_model *m = model();
	struct gp_cpu_summary s;

	feed_call(m, GP_API_CUDA_MEMCPY, T_TID, MS, 0, 0, 0, 0, 0);
	gp_cpu_summarize(proc(m, T_PID), START, START + 1000 * MS, &s);
	assert_false(s.known);
	assert_int_equal(s.verdict, GP_VERDICT_UNKNOWN);
	gp_model_free(m);
}

static void sinks(void **state)
{
	struct gp_model *m = model();
	struct gp_session_info info = { .tool_version = "t",
					.command_line = "gpuprobed --pid 4242",
					.mode = "pid",
					.hostname = "h",
					.kernel_release = "k",
					.start_mono_ns = START,
					.start_realtime_ns = 1 };
	struct gp_thread_cpu r =
		thread_rec(T_TID, START, START + 1000 * MS, 100 * MS, 900 * MS, 9, 2, 3000, 0, 0);
	json_t *doc, *p, *cpu, *th;
	json_error_t jerr;
	char *json, *md;

	gp_model_set_session(m, &info);
	gp_model_set_session_end(m, START + 1000 * MS);
	feed_thread(m, &r);
	feed_call(m, GP_API_CUDA_STREAM_SYNCHRONIZE, T_TID, 800 * MS, 790 * MS, 8, 0, 0, 0);
	feed_call(m, GP_API_CUDA_MEMCPY, T_TID, 20 * MS, 5 * MS, 1, 1, 2048, 0);

	json = sink_output(gp_report_json_write, m);
	doc = json_loads(json, 0, &jerr);
	assert_non_null(doc);
	p = json_array_get(json_object_get(doc, "processes"), 0);
	cpu = json_object_get(p, "cpu");
	assert_true(json_is_object(cpu));
	assert_int_equal(json_integer_value(json_object_get(cpu, "cpu_ns")), 100 * MS);
	assert_int_equal(json_integer_value(json_object_get(cpu, "offcpu_ns")), 900 * MS);
	assert_int_equal(json_integer_value(json_object_get(cpu, "minor_faults")), 3000);
	assert_int_equal(json_integer_value(json_object_get(cpu, "offcpu_in_gpu_sync_ns")),
			 790 * MS);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(cpu, "in_gpu_calls"),
							    "minor_faults")),
			 2048);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(cpu, "verdict"), "kind")),
		"waiting_on_gpu");
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(cpu, "verdict"), "top_api")),
		"cudaStreamSynchronize");
	th = json_array_get(json_object_get(p, "threads"), 0);
	assert_int_equal(json_integer_value(json_object_get(th, "voluntary_switches")), 9);
	assert_int_equal(json_integer_value(
				 json_object_get(json_object_get(th, "in_gpu_calls"), "offcpu_ns")),
			 795 * MS);
	{
		const json_t *rows = json_object_get(p, "cuda_api"), *row;
		size_t i;
		bool seen = false;

		json_array_foreach(rows, i, row)
			if (!strcmp(json_string_value(json_object_get(row, "name")),
				    "cudaMemcpy")) {
				assert_int_equal(
					json_integer_value(json_object_get(row, "minor_faults")),
					2048);
				seen = true;
			}
		assert_true(seen);
	}
	json_decref(doc);
	free(json);

	md = sink_output(gp_report_md_write, m);
	assert_non_null(strstr(md, "### CPU, scheduling and page faults"));
	assert_non_null(strstr(md, "**Verdict: waiting on the GPU"));
	assert_non_null(strstr(md, "most in cudaStreamSynchronize"));
	assert_non_null(strstr(md, "Inside GPU calls, per API"));
	assert_non_null(strstr(md, "Minor page faults"));
	free(md);
	gp_model_free(m);
}

static void every_bpf_drop_has_a_name(void **state)
{
	for (unsigned d = 0; d < GP_BPF_DROP_MAX; d++)
		assert_non_null(gp_bpf_drop_name((enum gp_bpf_drop)d));
	assert_null(gp_bpf_drop_name(GP_BPF_DROP_MAX));
}

static void malformed_thread_record(void **state)
{
	struct gp_model *m = model();
	struct gp_thread_cpu r = thread_rec(T_TID, START, START + MS, 0, 0, 0, 0, 0, 0, 0);

	r.hdr.size = sizeof(r) - 8;
	assert_int_equal(gp_model_ingest(m, &r, sizeof(r)), -EINVAL);
	assert_int_equal(gp_model_ingest(m, &r, 10), -EINVAL);
	gp_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(thread_accounts_add_up),
		cmocka_unit_test(attribution_per_api_thread_and_sync),
		cmocka_unit_test(verdict_thresholds),
		cmocka_unit_test(runnable_wait_counts_as_cpu_bound),
		cmocka_unit_test(no_accounts_no_verdict),
		cmocka_unit_test(sinks),
		cmocka_unit_test(every_bpf_drop_has_a_name),
		cmocka_unit_test(malformed_thread_record),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
