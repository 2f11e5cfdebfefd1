/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_metrics.c — the Prometheus page (src/daemon/metrics*.c) of a model
 * fed known records: exact sample lines for API calls, errors and time,
 * transfers by direction and host memory, device memory live and peak,
 * NCCL sums per op over communicators and dtypes, drops, probes; label
 * escaping; job_id and the kernel's CPU counters from a fake /proc; a
 * reused pid rendered once; NVML's gauges (the latest sample's values in
 * base units, absent when that sample lacked them, a lost device's only
 * its flag, processes only while listed); a process's container, pod and
 * namespace labels; and promtool's verdict on the whole page.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "records.h"
#include "places.h"
#include "daemon/metrics.h"

#define DEV	   0x600000000000ULL
#define HEAP	   0x55d0c0de0000ULL
#define COMM1	   0x55550000c000ULL
#define COMM2	   0x55550000d000ULL
#define STRM	   0x55550000a000ULL
#define OTHER_PID  5000
#define WEIRD_COMM "a\"b\\c\nd"

static char proc_root[] = "/tmp/gp_test_metrics_XXXXXX";

static void write_file(const char *rel, const char *data, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", proc_root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void mkdir_rel(const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", proc_root, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

/* A /proc of one process, 4242, with two threads. */
static int setup_proc(void **state)
{
	static const char environ_[] = "HOME=/root\0SLURM_JOB_ID=job \"7\"\0PATH=/bin\0";
	/* the name holds ") (" so the parser must use the last ')' */
	static const char stat[] = "4242 (tr) (ain) S 1 4242 4242 0 -1 4194304 "
				   "1234 0 56 0 250 50 0 0 20 0 3 0 1000 0 0\n";

	assert_non_null(mkdtemp(proc_root));
	mkdir_rel("4242");
	mkdir_rel("4242/task");
	mkdir_rel("4242/task/4242");
	mkdir_rel("4242/task/4243");
	write_file("4242/cgroup", "12:cpu:/old\n0::/system.slice/job-17.scope\n", 43);
	write_file("4242/environ", environ_, sizeof(environ_) - 1);
	write_file("4242/stat", stat, sizeof(stat) - 1);
	write_file("4242/task/4242/status",
		   "Name:\ttrain\nvoluntary_ctxt_switches:\t10\nnonvoluntary_ctxt_switches:\t3\n",
		   71);
	write_file("4242/task/4243/status",
		   "Name:\tloader\nvoluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t1\n",
		   71);
	return 0;
}

static int teardown_proc(void **state)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", proc_root);
	return system(cmd) == 0 ? 0 : -1;
}

/* ncclCommInitRank(out, nranks, id, rank 0): args[6] = the id's hash (GP_CK_NCCL_ID) */
static struct gp_api_call nccl_init(__u64 comm, int nranks, __u64 id_hash)
{
	struct gp_api_call c = rec(GP_API_NCCL_COMM_INIT_RANK, T_PID, T_TID, 100, 1000, 0);

	c.args[0] = 0x7ffc0000;
	c.args[1] = (__u64)nranks;
	c.args[2] = 0;
	c.args[6] = id_hash;
	c.out = comm;
	c.hdr.flags = GP_EVF_OUT_VALID;
	return c;
}

/* ncclAllReduce(send, recv, count, dtype, op, comm, [sp+8] stream), 20 ns on the host */
static struct gp_api_call all_reduce(__u64 comm, __u64 count, int dtype)
{
	struct gp_api_call c = rec(GP_API_NCCL_ALL_REDUCE, T_PID, T_TID, 10000, 20, 0);

	c.args[0] = DEV;
	c.args[1] = DEV + 0x100000;
	c.args[2] = count;
	c.args[3] = (__u64)dtype;
	c.args[5] = comm;
	c.args[6] = STRM;
	return c;
}

static struct gp_model *metrics_model(void)
{
	struct gp_model *m = gp_model_new(NULL);
	struct gp_api_call c;

	assert_non_null(m);
	assert_int_equal(gp_model_process_add(m, T_PID, WEIRD_COMM, "train", 1000, true), 0);
	/* cudaMalloc: 3 calls of 100 ns, one failed; 1 MiB stays, 4 KiB freed */
	c = rec_alloc(GP_API_CUDA_MALLOC, T_TID, DEV, 1 << 20, 0);
	feed(m, &c);
	c = rec_alloc(GP_API_CUDA_MALLOC, T_TID, DEV + (1 << 20), 4096, 0);
	feed(m, &c);
	c = rec_alloc(GP_API_CUDA_MALLOC, T_TID, 0, 1ULL << 40, 2);
	feed(m, &c);
	c = rec_ptr(GP_API_CUDA_FREE, T_TID, DEV + (1 << 20), 0, 0);
	feed(m, &c);
	/* copies: 2 x 1 MiB HtoD pageable (250 us, 1 ms), one DtoD of 4 KiB */
	c = rec_memcpy(GP_API_CUDA_MEMCPY, DEV, HEAP, 1 << 20, GP_MEMCPY_HTOD, 0, 250000, 0);
	feed(m, &c);
	c = rec_memcpy(GP_API_CUDA_MEMCPY_ASYNC, DEV, HEAP, 1 << 20, GP_MEMCPY_HTOD, STRM, 1000000,
		       0);
	feed(m, &c);
	c = rec_memcpy(GP_API_CUDA_MEMCPY, DEV + 4096, DEV, 4096, GP_MEMCPY_DTOD, 0, 3000, 0);
	feed(m, &c);
	/* NCCL: AllReduce over two communicators and two dtypes; one AllGather */
	c = nccl_init(COMM1, 4, 0x1111222233334444ULL);
	feed(m, &c);
	c = nccl_init(COMM2, 2, 0xaaaabbbbccccddddULL);
	feed(m, &c);
	c = all_reduce(COMM1, 1 << 20, 7); /* float32: 4 MiB */
	feed(m, &c);
	c = all_reduce(COMM1, 1000, 2); /* int32: 4000 B */
	feed(m, &c);
	c = all_reduce(COMM2, 256, 7); /* 1024 B */
	feed(m, &c);
	c = rec(GP_API_NCCL_ALL_GATHER, T_PID, T_TID, 20000, 30, 0);
	c.args[2] = 1000; /* int32 x 4 ranks = 16000 B */
	c.args[3] = 2;
	c.args[4] = COMM1;
	c.args[5] = STRM;
	feed(m, &c);

	/* an exited process: no /proc reading, job_id "" */
	assert_int_equal(gp_model_process_add(m, OTHER_PID, "old", "old", 1000, true), 0);
	assert_int_equal(gp_model_process_exited(m, OTHER_PID, 50000), 0);

	assert_int_equal(gp_model_probe_add(m, 0, "/lib/libcudart.so.13", 0, "cudaMalloc", 0x4a2b0,
					    GP_API_CUDA_MALLOC),
			 0);
	assert_int_equal(gp_model_probe_add(m, 1, "/opt/libcudart.so.13", 0, "cudaMalloc", 0x4a2b0,
					    GP_API_CUDA_MALLOC),
			 0);
	assert_int_equal(gp_model_probe_add(m, 2, "/opt/libcudart.so.13", 0, "cudaMemcpy", 0x5000,
					    GP_API_CUDA_MEMCPY),
			 0);
	gp_model_probe_hits(m, 0, 3, 3);
	gp_model_probe_hits(m, 1, 2, 2);
	gp_model_drop_set(m, "ringbuf_full", 2);
	return m;
}

static char *render_opts(const struct gp_model *m, const struct gp_metrics_opts *o,
			 const struct gp_metrics_self *self)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(gp_metrics_render(m, o, self, f), 0);
	fclose(f);
	return buf;
}

static char *render(const struct gp_model *m, enum gp_job_source src, const char *env,
		    const struct gp_metrics_self *self)
{
	const struct gp_metrics_opts o = { .job_source = src,
					   .job_env = env,
					   .proc_root = proc_root };

	return render_opts(m, &o, self);
}

/* Whether text holds line as a whole line. */
static bool has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *s = strstr(text, line); s; s = strstr(s + 1, line))
		if ((s == text || s[-1] == '\n') && s[n] == '\n')
			return true;
	return false;
}

#define ASSERT_LINE(text, line)                                                  \
	do {                                                                     \
		if (!has_line(text, line))                                       \
			fail_msg("missing line: %s\n--- page:\n%s", line, text); \
	} while (0)

static size_t count(const char *text, const char *needle)
{
	size_t n = 0;

	for (const char *s = strstr(text, needle); s; s = strstr(s + 1, needle))
		n++;
	return n;
}

#define P "pid=\"4242\",comm=\"a\\\"b\\\\c\\nd\""

static void per_process_samples(void **state)
{
	struct gp_model *m = metrics_model();
	char *t = render(m, GP_JOB_NONE, NULL, NULL);

	ASSERT_LINE(t, "# TYPE gpuprobed_api_calls_total counter");
	ASSERT_LINE(t, "gpuprobed_api_calls_total{" P ",api=\"cudaMalloc\",library=\"cudart\"} 3");
	ASSERT_LINE(t, "gpuprobed_api_errors_total{" P ",api=\"cudaMalloc\",library=\"cudart\"} 1");
	ASSERT_LINE(t, "gpuprobed_api_seconds_total{" P
		       ",api=\"cudaMalloc\",library=\"cudart\"} 0.000000300");
	ASSERT_LINE(t, "gpuprobed_api_calls_total{" P ",api=\"cudaMemcpy\",library=\"cudart\"} 2");
	ASSERT_LINE(t, "gpuprobed_api_seconds_total{" P
		       ",api=\"cudaMemcpy\",library=\"cudart\"} 0.000253000");
	/* the duration histogram: cudaMemcpy's 3 us and 250 us, by powers of two (x4 from 2^10 ns) */
	ASSERT_LINE(t, "# TYPE gpuprobed_api_call_duration_seconds histogram");
#define MC P ",api=\"cudaMemcpy\",library=\"cudart\""
	ASSERT_LINE(t, "gpuprobed_api_call_duration_seconds_bucket{" MC ",le=\"0.000001023\"} 0");
	ASSERT_LINE(t, "gpuprobed_api_call_duration_seconds_bucket{" MC ",le=\"0.000004095\"} 1");
	ASSERT_LINE(t, "gpuprobed_api_call_duration_seconds_bucket{" MC ",le=\"0.000065535\"} 1");
	ASSERT_LINE(t, "gpuprobed_api_call_duration_seconds_bucket{" MC ",le=\"0.000262143\"} 2");
	ASSERT_LINE(t, "gpuprobed_api_call_duration_seconds_bucket{" MC ",le=\"17.179869183\"} 2");
	ASSERT_LINE(t, "gpuprobed_api_call_duration_seconds_bucket{" MC ",le=\"+Inf\"} 2");
	ASSERT_LINE(t, "gpuprobed_api_call_duration_seconds_sum{" MC "} 0.000253000");
	ASSERT_LINE(t, "gpuprobed_api_call_duration_seconds_count{" MC "} 2");
#undef MC
	assert_int_equal(count(t, "gpuprobed_api_call_duration_seconds_bucket{" P
				  ",api=\"cudaMalloc\",library=\"cudart\""),
			 14);
	ASSERT_LINE(t, "gpuprobed_api_calls_total{" P ",api=\"ncclAllReduce\",library=\"nccl\"} 3");
	ASSERT_LINE(t,
		    "gpuprobed_api_errors_total{" P ",api=\"ncclAllReduce\",library=\"nccl\"} 0");

	ASSERT_LINE(t, "gpuprobed_transfer_bytes_total{" P
		       ",direction=\"HtoD\",host_memory=\"pageable\"} 2097152");
	ASSERT_LINE(t, "gpuprobed_transfers_total{" P
		       ",direction=\"HtoD\",host_memory=\"pageable\"} 2");
	ASSERT_LINE(t, "gpuprobed_transfer_seconds_total{" P
		       ",direction=\"HtoD\",host_memory=\"pageable\"} 0.001250000");
	ASSERT_LINE(t, "gpuprobed_transfer_bytes_total{" P
		       ",direction=\"DtoD\",host_memory=\"device\"} 4096");
	assert_int_equal(count(t, "gpuprobed_transfers_total{"), 2);

	ASSERT_LINE(t, "gpuprobed_device_memory_bytes{" P "} 1048576");
	ASSERT_LINE(t, "gpuprobed_device_memory_peak_bytes{" P "} 1052672");

	/* AllReduce: 4 MiB + 4000 (two dtypes) on one communicator, 1024 on the other: by comm_id */
#define C1 ",comm_id=\"1111222233334444\""
#define C2 ",comm_id=\"aaaabbbbccccdddd\""
	ASSERT_LINE(t, "gpuprobed_nccl_calls_total{" P ",op=\"AllReduce\"" C1 "} 2");
	ASSERT_LINE(t, "gpuprobed_nccl_bytes_total{" P ",op=\"AllReduce\"" C1 "} 4198304");
	ASSERT_LINE(t, "gpuprobed_nccl_seconds_total{" P ",op=\"AllReduce\"" C1 "} 0.000000040");
	ASSERT_LINE(t, "gpuprobed_nccl_calls_total{" P ",op=\"AllReduce\"" C2 "} 1");
	ASSERT_LINE(t, "gpuprobed_nccl_bytes_total{" P ",op=\"AllReduce\"" C2 "} 1024");
	ASSERT_LINE(t, "gpuprobed_nccl_calls_total{" P ",op=\"AllGather\"" C1 "} 1");
	ASSERT_LINE(t, "gpuprobed_nccl_bytes_total{" P ",op=\"AllGather\"" C1 "} 16000");
	assert_int_equal(count(t, "gpuprobed_nccl_calls_total{"), 3);
	assert_null(strstr(t, "0x5555")); /* no communicator handle anywhere */

	ASSERT_LINE(t, "gpuprobed_process_exited{" P "} 0");
	ASSERT_LINE(t, "gpuprobed_process_exited{pid=\"5000\",comm=\"old\"} 1");
	ASSERT_LINE(t, "gpuprobed_traced_processes 1");

	/* daemon-wide */
	ASSERT_LINE(t, "gpuprobed_drops_total{cause=\"ringbuf_full\"} 2");
	ASSERT_LINE(t, "gpuprobed_drops_total{cause=\"depth_overflow\"} 0");
	ASSERT_LINE(t, "gpuprobed_drops_total{cause=\"malformed_records\"} 0");
	ASSERT_LINE(t, "gpuprobed_probes 3");
	ASSERT_LINE(t, "gpuprobed_probe_hits_total{api=\"cudaMalloc\"} 5");
	ASSERT_LINE(t, "gpuprobed_probe_hits_total{api=\"cudaMemcpy\"} 0");
	assert_null(strstr(t, "job_id"));
	assert_null(strstr(t, "gpuprobed_build_info")); /* no self: no daemon families */
	/* each family once, its samples right after it */
	assert_int_equal(count(t, "# TYPE gpuprobed_api_calls_total "), 1);
	free(t);
	gp_model_free(m);
}

static void proc_counters(void **state)
{
	struct gp_model *m = metrics_model();
	char *t = render(m, GP_JOB_NONE, NULL, NULL);
	long hz = sysconf(_SC_CLK_TCK);
	char line[256];

	/* 250 + 50 ticks */
	snprintf(line, sizeof(line), "gpuprobed_process_cpu_seconds_total{" P "} %llu.%09llu",
		 300ull / (unsigned long long)hz,
		 300ull % (unsigned long long)hz * 1000000000ull / (unsigned long long)hz);
	ASSERT_LINE(t, line);
	ASSERT_LINE(t, "gpuprobed_process_context_switches_total{" P ",kind=\"voluntary\"} 15");
	ASSERT_LINE(t, "gpuprobed_process_context_switches_total{" P ",kind=\"involuntary\"} 4");
	ASSERT_LINE(t, "gpuprobed_process_page_faults_total{" P ",kind=\"minor\"} 1234");
	ASSERT_LINE(t, "gpuprobed_process_page_faults_total{" P ",kind=\"major\"} 56");
	/* the exited process: its pid is not looked up again */
	assert_null(strstr(t, "gpuprobed_process_cpu_seconds_total{pid=\"5000\""));
	assert_null(strstr(t, "gpuprobed_process_page_faults_total{pid=\"5000\""));
	free(t);
	gp_model_free(m);
}

/* A render of m through the pool (process_labels = group). */
static char *render_pooled(const struct gp_model *m, struct gp_metrics_pool *pool)
{
	const struct gp_metrics_opts o = { .proc_root = proc_root, .pool = pool };

	return render_opts(m, &o, NULL);
}

/*
 * process_labels = group: two processes of one name are one series, their sum, without pid; the
 * live one's CPU time (the fake /proc's 3 s) stays in its group once it has exited; every count
 * stays once the model has forgotten both; gauges (memory, exited) are the members' now.
 */
static void pooled_groups(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	struct gp_metrics_pool *pool = gp_metrics_pool_new();
	struct gp_api_call c;
	size_t evicted;
	char *t;

	assert_non_null(m);
	assert_non_null(pool);
	assert_int_equal(gp_model_process_add(m, T_PID, "twin", "twin", 1000, true), 0);
	assert_int_equal(gp_model_process_add(m, OTHER_PID, "twin", "twin", 1000, true), 0);
	c = rec_alloc(GP_API_CUDA_MALLOC, T_TID, DEV, 1 << 20, 0);
	feed(m, &c);
	c = rec_alloc(GP_API_CUDA_MALLOC, OTHER_PID, DEV + (2 << 20), 4096, 0);
	c.hdr.tgid = OTHER_PID;
	c.dur_ns = 300;
	feed(m, &c);
	t = render_pooled(m, pool);
	ASSERT_LINE(
		t,
		"gpuprobed_api_calls_total{comm=\"twin\",api=\"cudaMalloc\",library=\"cudart\"} 2");
	ASSERT_LINE(t, "gpuprobed_process_cpu_seconds_total{comm=\"twin\"} 3.000000000");
	ASSERT_LINE(t, "gpuprobed_process_exited{comm=\"twin\"} 0");
	ASSERT_LINE(t, "gpuprobed_traced_processes 2");
	assert_null(strstr(t, "pid=\""));
	free(t);
	/* both exit: the CPU time read while one lived stays; the gauges say what is there now */
	assert_int_equal(gp_model_process_exited(m, T_PID, 50000), 0);
	assert_int_equal(gp_model_process_exited(m, OTHER_PID, 50000), 0);
	t = render_pooled(m, pool);
	ASSERT_LINE(
		t,
		"gpuprobed_api_calls_total{comm=\"twin\",api=\"cudaMalloc\",library=\"cudart\"} 2");
	ASSERT_LINE(t, "gpuprobed_process_cpu_seconds_total{comm=\"twin\"} 3.000000000");
	ASSERT_LINE(t, "gpuprobed_process_exited{comm=\"twin\"} 2");
	ASSERT_LINE(t, "gpuprobed_traced_processes 0");
	free(t);
	/* forgotten: the counters stay, the gauges go */
	gp_model_forget_exited(m, 60000, 100, &evicted);
	assert_int_equal(m->nprocs, 0);
	t = render_pooled(m, pool);
	ASSERT_LINE(
		t,
		"gpuprobed_api_calls_total{comm=\"twin\",api=\"cudaMalloc\",library=\"cudart\"} 2");
	ASSERT_LINE(
		t,
		"gpuprobed_api_seconds_total{comm=\"twin\",api=\"cudaMalloc\",library=\"cudart\"} 0.000000400");
	ASSERT_LINE(t, "gpuprobed_process_cpu_seconds_total{comm=\"twin\"} 3.000000000");
	assert_null(strstr(t, "gpuprobed_process_exited{"));
	assert_null(strstr(t, "gpuprobed_device_memory_bytes{"));
	free(t);
	gp_metrics_pool_free(pool);
	gp_model_free(m);
}

static void job_ids(void **state)
{
	struct gp_model *m = metrics_model();
	char *t = render(m, GP_JOB_CGROUP, NULL, NULL);

	ASSERT_LINE(t, "gpuprobed_device_memory_bytes{" P
		       ",job_id=\"/system.slice/job-17.scope\"} 1048576");
	ASSERT_LINE(t, "gpuprobed_process_exited{pid=\"5000\",comm=\"old\",job_id=\"\"} 1");
	free(t);
	t = render(m, GP_JOB_ENV, "SLURM_JOB_ID", NULL);
	ASSERT_LINE(t, "gpuprobed_device_memory_bytes{" P ",job_id=\"job \\\"7\\\"\"} 1048576");
	free(t);
	/* a variable the process does not have, and a process /proc does not know */
	t = render(m, GP_JOB_ENV, "SLURM_JOB", NULL);
	ASSERT_LINE(t, "gpuprobed_device_memory_bytes{" P ",job_id=\"\"} 1048576");
	free(t);
	/* a hybrid machine: v2's path is the root, the systemd hierarchy's says the job */
	write_file("4242/cgroup", "12:cpu:/old\n1:name=systemd:/system.slice/job-18.scope\n0::/\n",
		   59);
	t = render(m, GP_JOB_CGROUP, NULL, NULL);
	ASSERT_LINE(t, "gpuprobed_device_memory_bytes{" P
		       ",job_id=\"/system.slice/job-18.scope\"} 1048576");
	free(t);
	write_file("4242/cgroup", "12:cpu:/old\n0::/system.slice/job-17.scope\n",
		   43); /* as the others read it */
	gp_model_free(m);
}

static void reused_pid_once(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	char *t;

	assert_non_null(m);
	assert_int_equal(gp_model_process_add(m, 6000, "w", "w", 1000, true), 0);
	assert_int_equal(gp_model_process_exited(m, 6000, 2000), 0);
	assert_int_equal(gp_model_process_add(m, 6000, "w", "w", 3000, true), 0);
	assert_int_equal(m->nprocs, 2);
	t = render(m, GP_JOB_NONE, NULL, NULL);
	assert_int_equal(count(t, "gpuprobed_process_exited{pid=\"6000\""), 1);
	ASSERT_LINE(t, "gpuprobed_process_exited{pid=\"6000\",comm=\"w\"} 0");
	free(t);
	gp_model_free(m);
}

static void daemon_samples(void **state)
{
	struct gp_model *m = metrics_model();
	struct gp_metrics_self self = {
		.start_realtime_ns = 1700000000123456789ULL,
		.processes_evicted = 4,
		.reloads = 2,
		.reload_failures = 1,
		.reports_written = 7,
		.reports_removed = 3,
	};
	struct gp_sampling smp = {
		.budget = 0.01, .duty = 0.5, .overhead = 0.0125, .overhead_full = 0.025
	};
	char *t;

	gp_model_set_sampling(m, &smp);
	/* 9 of cudaMemcpy's 2 calls "estimated" (the model takes what it is told; only the line matters) */
	assert_int_equal(gp_model_api_estimated(m, T_PID, GP_API_CUDA_MEMCPY, 9), 0);
	t = render(m, GP_JOB_NONE, NULL, &self);

	ASSERT_LINE(t, "gpuprobed_start_time_seconds 1700000000.123456789");
	ASSERT_LINE(t, "gpuprobed_processes_evicted_total 4");
	ASSERT_LINE(t, "gpuprobed_config_reloads_total{result=\"ok\"} 2");
	ASSERT_LINE(t, "gpuprobed_config_reloads_total{result=\"failed\"} 1");
	ASSERT_LINE(t, "gpuprobed_reports_written_total 7");
	ASSERT_LINE(t, "gpuprobed_reports_removed_total 3");
	ASSERT_LINE(t, "gpuprobed_overhead_estimate_ratio 0.0125");
	ASSERT_LINE(t, "gpuprobed_overhead_unsampled_estimate_ratio 0.025");
	ASSERT_LINE(t, "gpuprobed_overhead_budget_ratio 0.01");
	ASSERT_LINE(t, "gpuprobed_duty_cycle_ratio 0.5");
	ASSERT_LINE(t, "gpuprobed_counts_estimated 1");
	ASSERT_LINE(t, "gpuprobed_api_estimated_calls_total{" P
		       ",api=\"cudaMemcpy\",library=\"cudart\"} 9");
	assert_int_equal(count(t, "\ngpuprobed_api_estimated_calls_total{"),
			 1); /* only where some were */
	{
		/* the version compiled into metrics.o (objects are not rebuilt for each commit's version) */
		const char *b = strstr(t, "\ngpuprobed_build_info{version=\"");
		const char *e = b ? strchr(b + 1, '\n') : NULL;

		assert_non_null(b);
		assert_non_null(e);
		assert_true(e - b > 35 && !strncmp(e - 4, "\"} 1", 4));
	}
	assert_non_null(strstr(t, "\ngpuprobed_cpu_seconds_total "));
	assert_non_null(strstr(t, "\ngpuprobed_resident_memory_bytes "));
	free(t);
	/* an unknown estimate is absent, not a made-up number; no budget: no budget series */
	smp = (struct gp_sampling){ .duty = 1, .overhead = -1, .overhead_full = -1 };
	gp_model_set_sampling(m, &smp);
	t = render(m, GP_JOB_NONE, NULL, &self);
	assert_null(strstr(t, "\ngpuprobed_overhead_estimate_ratio "));
	assert_null(strstr(t, "\ngpuprobed_overhead_budget_ratio "));
	ASSERT_LINE(t, "# TYPE gpuprobed_overhead_estimate_ratio gauge");
	ASSERT_LINE(t, "gpuprobed_duty_cycle_ratio 1");
	free(t);
	gp_model_free(m);
}

/* Two devices, 0 sampled twice (its second sample without power), 1 lost; two processes on 0. */
static void feed_gpus(struct gp_model *m)
{
	struct gp_gpu_sample s = { .index = 0, .mono_ns = 1000000000, .window_ns = 100000000 };

	gp_model_gpu_nvml(m, GP_NVML_OK, NULL, "580.65", 100000000, 0);
	assert_int_equal(gp_model_gpu_device(m, 0, "NVIDIA \"H100\"", "GPU-0000", 80ULL << 30), 0);
	assert_int_equal(gp_model_gpu_device(m, 1, "NVIDIA H100", "GPU-1111", 80ULL << 30), 0);
	for (int g = 0; g < GP_GM_N; g++) {
		s.v[g] = 10 + (__u64)g;
		s.valid |= 1u << g;
	}
	s.v[GP_GM_POWER] = 123456; /* mW */
	s.v[GP_GM_PCIE_RX] = 3;	   /* KB/s */
	assert_int_equal(gp_model_gpu_sample(m, &s), 0);
	assert_int_equal(gp_model_gpu_process(m, 0, T_PID, s.mono_ns, 5ULL << 20, 7, 8), 0);
	assert_int_equal(gp_model_gpu_process(m, 0, OTHER_PID, s.mono_ns, 1ULL << 20, 1, 2), 0);
	s.mono_ns += 100000000;
	s.valid &= ~(1u << GP_GM_POWER);
	s.v[GP_GM_UTIL_GPU] = 55;
	assert_int_equal(gp_model_gpu_sample(m, &s), 0);
	/* the other process is no longer listed; this one's utilization NVML did not give */
	assert_int_equal(gp_model_gpu_process(m, 0, T_PID, s.mono_ns, 6ULL << 20,
					      GP_NVML_UNKNOWN_UTIL, GP_NVML_UNKNOWN_UTIL),
			 0);
	s.index = 1;
	assert_int_equal(gp_model_gpu_sample(m, &s), 0);
	assert_int_equal(gp_model_gpu_error(m, 1, "nvmlDeviceGetUtilizationRates",
					    GP_NVML_ERROR_GPU_IS_LOST, "GPU is lost",
					    s.mono_ns + 1),
			 0);
	assert_int_equal(
		gp_model_gpu_error(m, 0, "nvmlDeviceGetPowerUsage", 3, "Not Supported", s.mono_ns),
		0);
}

#define G0 "gpu=\"0\",uuid=\"GPU-0000\",model_name=\"NVIDIA \\\"H100\\\"\""
#define G1 "gpu=\"1\",uuid=\"GPU-1111\",model_name=\"NVIDIA H100\""

static void gpu_gauges(void **state)
{
	struct gp_model *m = metrics_model();
	char *t;

	t = render(m, GP_JOB_NONE, NULL, NULL);
	ASSERT_LINE(t, "gpuprobed_nvml_up 0"); /* never started: off */
	assert_null(strstr(t, "\ngpuprobed_gpu_utilization_ratio{"));
	free(t);
	feed_gpus(m);
	t = render(m, GP_JOB_NONE, NULL, NULL);
	ASSERT_LINE(t, "gpuprobed_nvml_up 1");
	ASSERT_LINE(t, "gpuprobed_gpu_utilization_ratio{" G0 "} 0.55"); /* the latest sample's */
	ASSERT_LINE(t, "gpuprobed_gpu_mem_copy_utilization_ratio{" G0 "} 0.11");
	ASSERT_LINE(t, "gpuprobed_gpu_fb_used_bytes{" G0 "} 12");
	ASSERT_LINE(t, "gpuprobed_gpu_sm_clock_hertz{" G0 "} 13000000");
	ASSERT_LINE(t, "gpuprobed_gpu_mem_clock_hertz{" G0 "} 14000000");
	assert_null(strstr(
		t,
		"\ngpuprobed_gpu_power_usage_watts{")); /* not in the latest: absent, not stale */
	ASSERT_LINE(t, "gpuprobed_gpu_temp_celsius{" G0 "} 16");
	ASSERT_LINE(t,
		    "gpuprobed_gpu_pcie_tx_bytes_per_second{" G0 "} 17408"); /* 17 KB/s of 1024 B */
	ASSERT_LINE(t, "gpuprobed_gpu_pcie_rx_bytes_per_second{" G0 "} 3072");
	ASSERT_LINE(t, "gpuprobed_gpu_clock_throttle_reasons{" G0 "} 19");
	ASSERT_LINE(t, "gpuprobed_gpu_fb_total_bytes{" G0 "} 85899345920");
	ASSERT_LINE(t, "gpuprobed_gpu_samples_total{" G0 "} 2");
	ASSERT_LINE(t, "gpuprobed_gpu_samples_total{" G1 "} 1");
	ASSERT_LINE(t, "gpuprobed_gpu_lost{" G0 "} 0");
	ASSERT_LINE(t, "gpuprobed_gpu_lost{" G1 "} 1");
	assert_null(strstr(t, "gpuprobed_gpu_utilization_ratio{" G1)); /* lost: its flag only */
	assert_null(strstr(t, "gpuprobed_gpu_fb_total_bytes{" G1));
	ASSERT_LINE(
		t,
		"gpuprobed_nvml_errors_total{gpu=\"1\",call=\"nvmlDeviceGetUtilizationRates\",code=\"15\"} 1");
	ASSERT_LINE(
		t,
		"gpuprobed_nvml_errors_total{gpu=\"0\",call=\"nvmlDeviceGetPowerUsage\",code=\"3\"} 1");
	ASSERT_LINE(t, "gpuprobed_gpu_process_fb_used_bytes{" G0
		       ",pid=\"4242\",comm=\"a\\\"b\\\\c\\nd\"} 6291456");
	/* the other process was not in the latest listing; this one's utilization was not given */
	assert_null(strstr(t, "gpuprobed_gpu_process_fb_used_bytes{" G0 ",pid=\"5000\""));
	assert_null(strstr(t, "\ngpuprobed_gpu_process_sm_utilization_ratio{"));
	assert_null(strstr(t, "\ngpuprobed_gpu_process_mem_utilization_ratio{"));
	free(t);
	/* a later listing with utilization: the gauges follow the latest */
	assert_int_equal(gp_model_gpu_process(m, 0, T_PID, 1300000000, 6ULL << 20, 40, 30), 0);
	t = render(m, GP_JOB_NONE, NULL, NULL);
	ASSERT_LINE(t, "gpuprobed_gpu_process_sm_utilization_ratio{" G0
		       ",pid=\"4242\",comm=\"a\\\"b\\\\c\\nd\"} 0.40");
	ASSERT_LINE(t, "gpuprobed_gpu_process_mem_utilization_ratio{" G0
		       ",pid=\"4242\",comm=\"a\\\"b\\\\c\\nd\"} 0.30");
	free(t);
	/* power in watts, exactly */
	{
		struct gp_gpu_sample s = { .index = 0,
					   .mono_ns = 1400000000,
					   .window_ns = 200000000,
					   .valid = 1u << GP_GM_POWER,
					   .v[GP_GM_POWER] = 123456 };

		assert_int_equal(gp_model_gpu_sample(m, &s), 0);
	}
	t = render(m, GP_JOB_NONE, NULL, NULL);
	ASSERT_LINE(t, "gpuprobed_gpu_power_usage_watts{" G0 "} 123.456");
	assert_null(
		strstr(t, "\ngpuprobed_gpu_utilization_ratio{")); /* that sample gave power only */
	free(t);
	gp_model_free(m);
}

#define WEB1 ",container=\"web-1\""

/* Where each process runs, in every series of the process: its container, pod and namespace. */
static void container_labels(void **state)
{
	struct gp_model *m = pl_model(NULL, NULL, true);
	char *t;

	/* a name that needs escaping, and a pod's */
	assert_int_equal(gp_model_process_add(m, 7000, "odd", "odd", 1000, true), 0);
	pl_place(m, 7000, 1, "docker", PL_ID_A, "we\"b\\1", PL_UID_C, "p\nq", "n\"s", NULL);
	assert_int_equal(gp_model_gpu_process(m, 0, PL_WEB1, 1000, 1 << 20, 5, 6), 0);
	t = render(m, GP_JOB_CGROUP, NULL, NULL);

	/* two processes of one container: the same container label, told apart by pid */
	ASSERT_LINE(t, "gpuprobed_api_calls_total{pid=\"4242\",comm=\"basic_ops\"" WEB1
		       ",job_id=\"/system.slice/job-17.scope\""
		       ",api=\"cudaMemcpy\",library=\"cudart\"} 1");
	ASSERT_LINE(t, "gpuprobed_api_calls_total{pid=\"4250\",comm=\"worker\"" WEB1
		       ",job_id=\"\",api=\"cudaMemcpy\",library=\"cudart\"} 1");
	ASSERT_LINE(t, "gpuprobed_transfer_bytes_total{pid=\"4250\",comm=\"worker\"" WEB1
		       ",job_id=\"\",direction=\"DtoH\",host_memory=\"pageable\"} 4096");
	ASSERT_LINE(t, "gpuprobed_device_memory_bytes{pid=\"4250\",comm=\"worker\"" WEB1
		       ",job_id=\"\"} 0");
	/* on the host: none of the three */
	ASSERT_LINE(t, "gpuprobed_process_exited{pid=\"5000\",comm=\"host_job\",job_id=\"\"} 0");
	/* no name known: the id's first 12 hex digits; the pod's name and namespace */
	ASSERT_LINE(t, "gpuprobed_process_exited{pid=\"6000\",comm=\"trainer\","
		       "container=\"0badc0de0bad\",pod=\"trainer-0\",namespace=\"ml\","
		       "job_id=\"\"} 0");
	/* in a pod, container not known, nor the pod's names: none either */
	ASSERT_LINE(t, "gpuprobed_process_exited{pid=\"6100\",comm=\"sidecar\",job_id=\"\"} 0");
	/* escaped as the format requires */
	ASSERT_LINE(t, "gpuprobed_process_exited{pid=\"7000\",comm=\"odd\","
		       "container=\"we\\\"b\\\\1\",pod=\"p\\nq\",namespace=\"n\\\"s\","
		       "job_id=\"\"} 0");
	/* NVML's view of a process: the same place labels */
	assert_non_null(strstr(t, ",pid=\"4242\",comm=\"basic_ops\"" WEB1 "} 1048576\n"));
	free(t);
	gp_model_free(m);
}

/* promtool check metrics: the page parses and passes its lint without a word. */
static void promtool_clean(void **state)
{
	struct gp_model *m = metrics_model();
	struct gp_metrics_self self = { .start_realtime_ns = 1 };
	char path[600], cmd[800], out[4096];

	feed_gpus(m);
	/* its place labels filled in */
	pl_place(m, T_PID, 1, "podman", PL_ID_A, "web-1", PL_UID_B, "trainer-0", "ml", PL_CG_A);
	size_t n;
	FILE *f, *pf;
	char *t;

	if (system("command -v promtool >/dev/null 2>&1")) {
		/* skipped with its reason: promtool comes from Debian's prometheus package (make deps) */
		print_message(
			"skipped: promtool is not installed (make deps installs the prometheus package), "
			"so the page's lint is not checked\n");
		gp_model_free(m);
		skip(); /* why: promtool is not installed (said above) */
	}
	for (int src = GP_JOB_NONE; src <= GP_JOB_ENV; src++) {
		t = render(m, (enum gp_job_source)src, "SLURM_JOB_ID", &self);
		snprintf(path, sizeof(path), "%s/page.txt", proc_root);
		f = fopen(path, "w");
		assert_non_null(f);
		fputs(t, f);
		fclose(f);
		snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s' 2>&1", path);
		pf = popen(cmd, "r");
		assert_non_null(pf);
		n = fread(out, 1, sizeof(out) - 1, pf);
		out[n] = '\0';
		if (pclose(pf) != 0 || n)
			fail_msg("promtool check metrics (job source %d): %s\n--- page:\n%s", src,
				 out, t);
		free(t);
	}
	gp_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(per_process_samples),
		cmocka_unit_test(proc_counters),
		cmocka_unit_test(job_ids),
		cmocka_unit_test(pooled_groups),
		cmocka_unit_test(reused_pid_once),
		cmocka_unit_test(daemon_samples),
		cmocka_unit_test(gpu_gauges),
		cmocka_unit_test(container_labels),
		cmocka_unit_test(promtool_clean),
	};

	return cmocka_run_group_tests(tests, setup_proc, teardown_proc);
}
