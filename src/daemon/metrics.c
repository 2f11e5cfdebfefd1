/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * metrics.c — renders the model as Prometheus text exposition (0.0.4):
 * per process API calls, transfers, device memory, NCCL operations and the
 * kernel's CPU counters, NVML's view of each device and of the processes
 * on it (DCGM-exporter's fields under gpuprobed's prefix), then the
 * daemon's own health. One family at a
 * time (HELP, TYPE, then its samples for every process), so a family's
 * samples stay together as the format requires. Labels are only bounded
 * names (APIs, directions, ops, causes; a process's container and pod, one
 * each per process kept): never kernels, stacks, streams or communicator
 * handles, whose number has no bound. docs/metrics.md says
 * what each number means.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "processes/containers.h"
#include "daemon/metrics.h"
#include "model/view.h"
#include "text/labels.h"
#include "text/text_clean.h"
#include "proc_maps.h"

/* What the kernel says of a live process (/proc/PID/stat, task/N/status). */
struct proc_counts {
	bool stat_ok, switches_ok;
	__u64 utime, stime; /* clock ticks */
	__u64 minflt, majflt;
	__u64 vol, invol;
};

struct render {
	FILE *out;
	const struct gp_model *m;
	const struct gp_metrics_opts *o;
	const char *proc_root;
	char **labels;            /* [proc index]: its escaped label text; NULL: not rendered */
	struct proc_counts *pc;   /* [proc index] */
};

/* ---- the text format ------------------------------------------------------ */

/* A label value: \ " and newline escaped; bytes that are not UTF-8 text become U+FFFD. */
static void put_value(FILE *f, const char *s)
{
	while (*s) {
		size_t n;

		if (*s == '\\' || *s == '"') {
			fputc('\\', f);
			fputc(*s++, f);
			continue;
		}
		if (*s == '\n') {
			fputs("\\n", f);
			s++;
			continue;
		}
		n = gp_text_char_len(s);
		if (!n) {
			fputs(GP_TEXT_REPLACEMENT, f);
			s++;
			continue;
		}
		fwrite(s, 1, n, f);
		s += n;
	}
}

static void family(struct render *r, const char *name, const char *type, const char *help)
{
	/* our HELP texts hold no backslash or newline: nothing to escape */
	fprintf(r->out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{plabels[,k=v]: the sample's start; end it with one of the close_* below. */
static void open_sample(struct render *r, const char *name, const char *plabels)
{
	fprintf(r->out, "%s{%s", name, plabels);
}

static void label(struct render *r, bool comma, const char *key, const char *value)
{
	fprintf(r->out, "%s%s=\"", comma ? "," : "", key);
	put_value(r->out, value);
	fputc('"', r->out);
}

static void close_u64(struct render *r, __u64 v)
{
	fprintf(r->out, "} %llu\n", (unsigned long long)v);
}

/* nanoseconds as seconds, exactly (no float rounding) */
static void close_ns(struct render *r, __u64 ns)
{
	fprintf(r->out, "} %llu.%09llu\n", (unsigned long long)(ns / 1000000000ull),
		(unsigned long long)(ns % 1000000000ull));
}

static void plain_u64(struct render *r, const char *name, __u64 v)
{
	fprintf(r->out, "%s %llu\n", name, (unsigned long long)v);
}

static void plain_double(struct render *r, const char *name, double v)
{
	fprintf(r->out, "%s %.9g\n", name, v);
}

/* ---- /proc ---------------------------------------------------------------- */

/* The job of a live process: its cgroup v2 path, or the value of job_env; "" when unknown. */
static char *job_id(struct render *r, const struct gp_process *p)
{
	char path[4096];
	size_t len = 0;
	char *buf, *res = NULL;

	if (p->exited)
		return strdup("");
	if (r->o->job_source == GP_JOB_CGROUP) {
		snprintf(path, sizeof(path), "%s/%u/cgroup", r->proc_root, p->pid);
		buf = gp_read_whole_file(path, &len);
		if (buf) {
			struct gp_place pl;

			/* v2's path, or on a hybrid or v1 machine the systemd (else another) hierarchy's */
			gp_place_from_cgroup(buf, &pl);
			res = strdup(pl.cgroup);
		}
		free(buf);
	} else if (r->o->job_source == GP_JOB_ENV && r->o->job_env && *r->o->job_env) {
		size_t klen = strlen(r->o->job_env);

		snprintf(path, sizeof(path), "%s/%u/environ", r->proc_root, p->pid);
		buf = gp_read_whole_file(path, &len);
		/* NUL-separated NAME=value entries */
		for (size_t i = 0; buf && i < len; i += strlen(buf + i) + 1)
			if (!strncmp(buf + i, r->o->job_env, klen) && buf[i + klen] == '=') {
				res = strdup(buf + i + klen + 1);
				break;
			}
		free(buf);
	}
	return res ? res : strdup("");
}

static void read_stat(struct render *r, __u32 pid, struct proc_counts *pc)
{
	char path[4096];
	char *buf, *s;
	unsigned long long v[13];

	snprintf(path, sizeof(path), "%s/%u/stat", r->proc_root, pid);
	buf = gp_read_whole_file(path, NULL);
	/* the name (field 2) may hold spaces and parentheses: fields 3.. follow its last ')' */
	s = buf ? strrchr(buf, ')') : NULL;
	if (s && sscanf(s + 1, " %*c %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
			&v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10],
			&v[11]) == 12) {
		/* v[i] is field i + 4: minflt 10, majflt 12, utime 14, stime 15 */
		pc->minflt = v[6];
		pc->majflt = v[8];
		pc->utime = v[10];
		pc->stime = v[11];
		pc->stat_ok = true;
	}
	free(buf);
}

/* Context switches summed over the live threads (status is per thread). */
static void read_switches(struct render *r, __u32 pid, struct proc_counts *pc)
{
	char path[4096];
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "%s/%u/task", r->proc_root, pid);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		char *buf, *s;
		unsigned long long vol, invol;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%u/task/%s/status", r->proc_root, pid, e->d_name);
		buf = gp_read_whole_file(path, NULL);
		s = buf ? strstr(buf, "\nvoluntary_ctxt_switches:") : NULL;
		if (s && sscanf(s, "\nvoluntary_ctxt_switches: %llu\nnonvoluntary_ctxt_switches: %llu", &vol,
				&invol) == 2) {
			pc->vol += vol;
			pc->invol += invol;
			pc->switches_ok = true;
		}
		free(buf);
	}
	closedir(d);
}

/* ---- labels of the processes --------------------------------------------- */

static void opt_label(FILE *f, const char *key, const char *value)
{
	if (!value || !*value)
		return; /* "" is no label to Prometheus: absent, as rules and their tests see it */
	fprintf(f, ",%s=\"", key);
	put_value(f, value);
	fputc('"', f);
}

/* container, pod, namespace: where p runs, each absent on the host or when not known. */
static void place_labels(FILE *f, const struct gp_process *p)
{
	char c[256] = "";

	if (!p)
		return;
	gp_container_label(p, c, sizeof(c));
	opt_label(f, "container", c);
	opt_label(f, "pod", p->place.pod_name);
	opt_label(f, "namespace", p->place.pod_namespace);
}

static int process_labels(struct render *r, size_t i)
{
	const struct gp_process *p = r->m->procs[i];
	char *buf = NULL, *job = NULL;
	size_t len = 0;
	FILE *f;

	/* a reused pid: only its newest entry, or two series would share one label set */
	if (gp_u64map_get(&r->m->by_pid, p->pid) != p)
		return 0;
	if (r->o->job_source != GP_JOB_NONE && !(job = job_id(r, p)))
		return -ENOMEM;
	f = open_memstream(&buf, &len);
	if (!f) {
		free(job);
		return -ENOMEM;
	}
	fprintf(f, "pid=\"%u\",comm=\"", p->pid);
	put_value(f, p->comm ? p->comm : "");
	fputc('"', f);
	place_labels(f, p);
	if (job) {
		fputs(",job_id=\"", f);
		put_value(f, job);
		fputc('"', f);
	}
	free(job);
	if (fclose(f)) {
		free(buf);
		return -ENOMEM;
	}
	r->labels[i] = buf;
	if (!p->exited) {
		read_stat(r, p->pid, &r->pc[i]);
		read_switches(r, p->pid, &r->pc[i]);
	}
	return 0;
}

/* Loops over the rendered processes: p, its index i and its labels L. */
#define FOR_PROCS(r, i, p, L)                                                              \
	for (size_t i = 0; i < (r)->m->nprocs; i++)                                        \
		for (const struct gp_process *p = (r)->m->procs[i]; p; p = NULL)           \
			for (const char *L = (r)->labels[i]; L; L = NULL)

/* A process's two samples of name told apart by kind (voluntary/involuntary, minor/major). */
static void kind_pair(struct render *r, const char *name, const char *plabels, const char *k1, __u64 v1,
		      const char *k2, __u64 v2)
{
	open_sample(r, name, plabels);
	label(r, true, "kind", k1);
	close_u64(r, v1);
	open_sample(r, name, plabels);
	label(r, true, "kind", k2);
	close_u64(r, v2);
}

/* ---- per process families ------------------------------------------------- */

enum api_field { API_CALLS, API_ERRORS, API_SECONDS, API_ESTIMATED };

static void api_family(struct render *r, const char *name, enum api_field fld, const char *help)
{
	family(r, name, "counter", help);
	FOR_PROCS(r, i, p, L)
		for (unsigned a = 1; a < GP_API_MAX; a++) {
			const struct gp_api_stats *st = p->api[a];

			if (!st || !st->time.count || (fld == API_ESTIMATED && !st->estimated_calls))
				continue;
			open_sample(r, name, L);
			label(r, true, "api", gp_apis[a].symbol);
			label(r, true, "library", gp_family_name(gp_apis[a].family));
			if (fld == API_SECONDS)
				close_ns(r, st->time.sum);
			else
				close_u64(r, fld == API_CALLS ? st->time.count
					     : fld == API_ERRORS ? st->errors : st->estimated_calls);
		}
}

enum xfer_field { XF_BYTES, XF_CALLS, XF_SECONDS };

static void xfer_family(struct render *r, const char *name, enum xfer_field fld, const char *help)
{
	family(r, name, "counter", help);
	FOR_PROCS(r, i, p, L)
		for (int d = 0; d < GP_DIR_MAX; d++)
			for (int h = 0; h < GP_HM_MAX; h++) {
				const struct gp_xfer_row *x = p->xfer[d][h];
				__u64 calls = x[0].calls + x[1].calls;

				if (!calls)
					continue;
				open_sample(r, name, L);
				label(r, true, "direction", gp_dir_name(d));
				label(r, true, "host_memory", gp_hostmem_name(h));
				if (fld == XF_SECONDS)
					close_ns(r, x[0].total_ns + x[1].total_ns);
				else
					close_u64(r, fld == XF_CALLS ? calls : x[0].bytes + x[1].bytes);
			}
}

static void memory_families(struct render *r)
{
	family(r, "gpuprobed_device_memory_bytes", "gauge",
	       "Device and managed memory the process has allocated and not freed (as seen by the traced calls).");
	FOR_PROCS(r, i, p, L) {
		open_sample(r, "gpuprobed_device_memory_bytes", L);
		close_u64(r, p->mem.total.live_bytes);
	}
	family(r, "gpuprobed_device_memory_peak_bytes", "gauge",
	       "Most device and managed memory the process had allocated at once while traced.");
	FOR_PROCS(r, i, p, L) {
		open_sample(r, "gpuprobed_device_memory_peak_bytes", L);
		close_u64(r, p->mem.total.peak_bytes);
	}
}

enum nccl_field { NC_CALLS, NC_BYTES, NC_SECONDS };

/* The comm_id label of a communicator: its 16 hex digits, "" (absent) when not known. */
static void comm_id_label(const struct gp_nccl_comm *cm, char id[17])
{
	id[0] = 0;
	if (cm->comm_id_known)
		snprintf(id, 17, "%016" PRIx64, (uint64_t)cm->comm_id);
}

static bool same_comm_id(const struct gp_nccl_comm *a, const struct gp_nccl_comm *b)
{
	return a->comm_id_known == b->comm_id_known && (!a->comm_id_known || a->comm_id == b->comm_id);
}

static void nccl_family(struct render *r, const char *name, enum nccl_field fld, const char *help)
{
	family(r, name, "counter", help);
	FOR_PROCS(r, i, p, L) {
		if (!p->nccl)
			continue;
		/* by comm_id (handles are not labels): communicators without one are summed together */
		for (size_t c = 0; c < p->nccl->ncomms; c++) {
			const struct gp_nccl_comm *cm = p->nccl->comms[c];
			__u64 sum[GP_NCCL_OP_MAX][3] = { { 0 } };
			char id[17];
			bool first = true;

			for (size_t e = 0; e < c && first; e++)
				first = !same_comm_id(p->nccl->comms[e], cm);
			if (!first)
				continue; /* summed with the earlier one */
			for (size_t e = c; e < p->nccl->ncomms; e++) {
				const struct gp_nccl_comm *ce = p->nccl->comms[e];

				if (!same_comm_id(ce, cm))
					continue;
				for (size_t k = 0; k < ce->nrows; k++) {
					const struct gp_nccl_row *row = ce->rows[k];

					if ((unsigned)row->op >= GP_NCCL_OP_MAX)
						continue;
					sum[row->op][NC_CALLS] += row->calls;
					sum[row->op][NC_BYTES] += row->bytes;
					sum[row->op][NC_SECONDS] += row->host_ns;
				}
			}
			comm_id_label(cm, id);
			for (int op = 0; op < GP_NCCL_OP_MAX; op++) {
				if (!sum[op][NC_CALLS])
					continue;
				open_sample(r, name, L);
				label(r, true, "op", gp_nccl_op_name(op));
				if (id[0])
					label(r, true, "comm_id", id);
				if (fld == NC_SECONDS)
					close_ns(r, sum[op][fld]);
				else
					close_u64(r, sum[op][fld]);
			}
		}
	}
}

/* A communicator's series of its own (comm_id, rank): known id and rank, the first of its process. */
static bool rank_series(const struct gp_process *p, size_t c, char id[17], char rank[12], char nranks[12])
{
	const struct gp_nccl_comm *cm = p->nccl->comms[c];

	if (!cm->comm_id_known || cm->rank < 0)
		return false;
	for (size_t e = 0; e < c; e++)
		if (p->nccl->comms[e]->comm_id_known && p->nccl->comms[e]->comm_id == cm->comm_id &&
		    p->nccl->comms[e]->rank == cm->rank)
			return false;
	comm_id_label(cm, id);
	snprintf(rank, 12, "%d", cm->rank);
	snprintf(nranks, 12, "%d", cm->nranks);
	return true;
}

/* One sample per rank of each communicator: its collectives entered, or how long it has waited (now). */
static void rank_family(struct render *r, const char *name, bool waiting, __u64 now)
{
	char id[17], rank[12], nranks[12];

	FOR_PROCS(r, i, p, L) {
		for (size_t c = 0; p->nccl && c < p->nccl->ncomms; c++) {
			const struct gp_nccl_comm *cm = p->nccl->comms[c];

			if (!rank_series(p, c, id, rank, nranks))
				continue;
			open_sample(r, name, L);
			label(r, true, "comm_id", id);
			label(r, true, "rank", rank);
			label(r, true, "nranks", nranks);
			if (waiting)
				close_ns(r, !p->exited && cm->wait_since_ns && now > cm->wait_since_ns ?
						    now - cm->wait_since_ns : 0);
			else
				close_u64(r, cm->collectives + (cm->inflight ? 1 : 0));
		}
	}
}

/*
 * Per rank of each communicator (the stall detector's, src/session/stalls.c): collectives entered
 * (returned, and the one in progress), and how long it has waited on its current one.
 */
static void nccl_rank_families(struct render *r)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	family(r, "gpuprobed_nccl_collectives_entered_total", "counter",
	       "Collectives (not Send/Recv) this rank of the communicator has entered: its last sequence number.");
	rank_family(r, "gpuprobed_nccl_collectives_entered_total", false, 0);
	family(r, "gpuprobed_nccl_waiting_seconds", "gauge",
	       "How long this rank has waited on its current collective (inside the NCCL call, or blocked in a "
	       "synchronisation awaiting it); 0 when not waiting.");
	rank_family(r, "gpuprobed_nccl_waiting_seconds", true, (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec);
}

static void cpu_families(struct render *r)
{
	long hz = sysconf(_SC_CLK_TCK);

	if (hz <= 0)
		hz = 100;
	family(r, "gpuprobed_process_cpu_seconds_total", "counter",
	       "User and system CPU time of the live process since it started (/proc/PID/stat).");
	FOR_PROCS(r, i, p, L) {
		const struct proc_counts *pc = &r->pc[i];
		__u64 ticks = pc->utime + pc->stime;

		if (!pc->stat_ok)
			continue;
		open_sample(r, "gpuprobed_process_cpu_seconds_total", L);
		/* ticks to nanoseconds first: exact for every usual tick rate */
		close_ns(r, ticks / (__u64)hz * 1000000000ull + ticks % (__u64)hz * 1000000000ull / (__u64)hz);
	}
	family(r, "gpuprobed_process_context_switches_total", "counter",
	       "Context switches of the live process's current threads since they started (/proc/PID/task/*/status).");
	FOR_PROCS(r, i, p, L) {
		const struct proc_counts *pc = &r->pc[i];

		if (!pc->switches_ok)
			continue;
		kind_pair(r, "gpuprobed_process_context_switches_total", L, "voluntary", pc->vol, "involuntary",
			  pc->invol);
	}
	family(r, "gpuprobed_process_page_faults_total", "counter",
	       "Page faults of the live process since it started (/proc/PID/stat).");
	FOR_PROCS(r, i, p, L) {
		const struct proc_counts *pc = &r->pc[i];

		if (!pc->stat_ok)
			continue;
		kind_pair(r, "gpuprobed_process_page_faults_total", L, "minor", pc->minflt, "major", pc->majflt);
	}
}

/* A gauge whose one sample is there only when shown (an unknown value is absent, not made up). */
static void gauge(struct render *r, const char *name, const char *help, bool shown, double v)
{
	family(r, name, "gauge", help);
	if (shown)
		plain_double(r, name, v);
}

/* The probes' cost and the overhead budget's duty cycle (the session keeps them in the model). */
static void sampling_families(struct render *r)
{
	const struct gp_sampling *s = &r->m->sampling;

	gauge(r, "gpuprobed_overhead_estimate_ratio",
	      "Estimated cost of the probes in the last second as a fraction of the traced processes' CPU time, "
	      "as attached (absent when unknown).",
	      s->set && s->overhead >= 0, s->overhead);
	gauge(r, "gpuprobed_overhead_unsampled_estimate_ratio",
	      "The same had every probe been attached all the time (absent when unknown).",
	      s->set && s->overhead_full >= 0, s->overhead_full);
	gauge(r, "gpuprobed_overhead_budget_ratio", "The configured overhead budget (overhead_budget); absent when off.",
	      s->set && s->budget > 0, s->budget);
	gauge(r, "gpuprobed_duty_cycle_ratio",
	      "Fraction of the current second the hot probes are attached (1 without an overhead budget).", true,
	      s->set ? s->duty : 1);
	family(r, "gpuprobed_counts_estimated", "gauge",
	       "1 when some counts were scaled up from a duty cycle below 1 (estimates, not exact counts), else 0.");
	plain_u64(r, "gpuprobed_counts_estimated", r->m->estimated_calls > 0);
}

static void process_families(struct render *r)
{
	__u64 live = 0;

	api_family(r, "gpuprobed_api_calls_total", API_CALLS,
		   "Calls of a traced API made outside any other traced call (a runtime call's own driver calls are not counted again).");
	api_family(r, "gpuprobed_api_errors_total", API_ERRORS,
		   "Of gpuprobed_api_calls_total, the calls that returned an error.");
	api_family(r, "gpuprobed_api_seconds_total", API_SECONDS,
		   "Host-observed time inside those calls, entry to return (not GPU time).");
	api_family(r, "gpuprobed_api_estimated_calls_total", API_ESTIMATED,
		   "Of gpuprobed_api_calls_total, the calls not seen but estimated: the overhead budget attached the "
		   "probe for part of the time and the counts were scaled up (absent while every call was seen).");
	xfer_family(r, "gpuprobed_transfer_bytes_total", XF_BYTES,
		    "Bytes copied by copy calls, by direction and by the kind of host memory involved.");
	xfer_family(r, "gpuprobed_transfers_total", XF_CALLS,
		    "Copy calls, by direction and by the kind of host memory involved.");
	xfer_family(r, "gpuprobed_transfer_seconds_total", XF_SECONDS,
		    "Host-observed time inside copy calls (asynchronous copies return before the copy is done).");
	memory_families(r);
	nccl_family(r, "gpuprobed_nccl_calls_total", NC_CALLS,
		    "NCCL collective and point-to-point calls, by operation, over all communicators.");
	nccl_family(r, "gpuprobed_nccl_bytes_total", NC_BYTES,
		    "Bytes of those calls as nccl-tests counts them (the message size), by operation.");
	nccl_family(r, "gpuprobed_nccl_seconds_total", NC_SECONDS,
		    "Host-observed time inside those calls (enqueueing, not the collective's GPU time).");
	nccl_rank_families(r);
	cpu_families(r);
	family(r, "gpuprobed_process_exited", "gauge", "1 when the traced process has exited (its series stay for the grace period), else 0.");
	FOR_PROCS(r, i, p, L) {
		open_sample(r, "gpuprobed_process_exited", L);
		close_u64(r, p->exited);
		live += !p->exited;
	}
	family(r, "gpuprobed_traced_processes", "gauge", "Traced processes that are alive.");
	plain_u64(r, "gpuprobed_traced_processes", live);
}

/* ---- NVML: the devices and the processes on them --------------------------- */

/* How a metric's value becomes the gauge's: as sampled, mW as W, KB/s (of 1024 B) as B/s. */
enum gpu_scale { GS_RAW, GS_MILLI, GS_KIB };

/*
 * The device gauges: DCGM-exporter's fields (its DCGM_FI_DEV_* name in the
 * help) under gpuprobed's prefix, in base units (docs/metrics.md says why).
 */
static const struct {
	enum gp_gpu_metric metric;
	const char *name;
	enum gpu_scale scale;
	const char *help;
} gpu_gauges[] = {
	{ GP_GM_UTIL_GPU, "gpuprobed_gpu_util", GS_RAW,
	  "GPU utilization in percent over the last sample's window (DCGM_FI_DEV_GPU_UTIL)." },
	{ GP_GM_UTIL_MEM, "gpuprobed_gpu_mem_copy_util", GS_RAW,
	  "Memory utilization in percent over the last sample's window (DCGM_FI_DEV_MEM_COPY_UTIL)." },
	{ GP_GM_MEM_USED, "gpuprobed_gpu_fb_used_bytes", GS_RAW,
	  "Device memory in use, bytes (DCGM_FI_DEV_FB_USED, in MiB there)." },
	{ GP_GM_SM_CLOCK, "gpuprobed_gpu_sm_clock_mhz", GS_RAW, "SM clock, MHz (DCGM_FI_DEV_SM_CLOCK)." },
	{ GP_GM_MEM_CLOCK, "gpuprobed_gpu_mem_clock_mhz", GS_RAW, "Memory clock, MHz (DCGM_FI_DEV_MEM_CLOCK)." },
	{ GP_GM_POWER, "gpuprobed_gpu_power_usage_watts", GS_MILLI, "Power draw, watts (DCGM_FI_DEV_POWER_USAGE)." },
	{ GP_GM_TEMP, "gpuprobed_gpu_temp_celsius", GS_RAW, "GPU temperature, degrees C (DCGM_FI_DEV_GPU_TEMP)." },
	{ GP_GM_PCIE_TX, "gpuprobed_gpu_pcie_tx_bytes_per_second", GS_KIB,
	  "PCIe bytes per second sent by the device (DCGM_FI_PROF_PCIE_TX_BYTES)." },
	{ GP_GM_PCIE_RX, "gpuprobed_gpu_pcie_rx_bytes_per_second", GS_KIB,
	  "PCIe bytes per second received by the device (DCGM_FI_PROF_PCIE_RX_BYTES)." },
	{ GP_GM_THROTTLE, "gpuprobed_gpu_clock_throttle_reasons", GS_RAW,
	  "Clock throttle reasons, NVML's bit mask (DCGM_FI_DEV_CLOCK_THROTTLE_REASONS)." },
};

/* The labels of a device: DCGM-exporter's (gpu, UUID, modelName) in snake case, as promtool wants. */
static void gpu_labels(struct render *r, const struct gp_gpu_device *d)
{
	char idx[16];

	snprintf(idx, sizeof(idx), "%u", d->index);
	label(r, false, "gpu", idx);
	label(r, true, "uuid", d->uuid ? d->uuid : "");
	label(r, true, "model_name", d->name ? d->name : "");
}

static void close_scaled(struct render *r, __u64 v, enum gpu_scale scale)
{
	if (scale == GS_MILLI) /* exactly: no float rounding */
		fprintf(r->out, "} %llu.%03llu\n", (unsigned long long)(v / 1000), (unsigned long long)(v % 1000));
	else
		close_u64(r, scale == GS_KIB ? v * 1024 : v);
}

/* Loops over the devices NVML still answers for (a lost one has only gpuprobed_gpu_lost). */
#define FOR_LIVE_GPUS(r, d)                                                                         \
	for (size_t gi_ = 0; gi_ < (r)->m->gpus.n; gi_++)                                           \
		for (const struct gp_gpu_device *d = &(r)->m->gpus.devs[gi_]; d && !d->lost; d = NULL)

/* The rows of the processes NVML listed in the device's latest sample (not the ones gone since). */
#define FOR_GPU_PROCS(d, row)                                                                       \
	for (size_t pi_ = 0; pi_ < (d)->nprocs; pi_++)                                              \
		for (const struct gp_gpu_proc_row *row = &(d)->procs[pi_]; row && row->last_ns >= (d)->last_ns; \
		     row = NULL)

enum gpu_proc_field { GP_MEM, GP_SM, GP_MEMUTIL };

static void gpu_proc_family(struct render *r, const char *name, enum gpu_proc_field fld, const char *help)
{
	family(r, name, "gauge", help);
	FOR_LIVE_GPUS(r, d)
		FOR_GPU_PROCS(d, row) {
			const struct gp_process *p = gp_u64map_get(&r->m->by_pid, row->pid);
			char pid[16];

			/* a utilization NVML did not give with the latest listing is absent, not 0 */
			if (fld != GP_MEM && (!row->util_samples || row->util_last_ns != row->last_ns))
				continue;
			snprintf(pid, sizeof(pid), "%u", row->pid);
			open_sample(r, name, "");
			gpu_labels(r, d);
			label(r, true, "pid", pid);
			label(r, true, "comm", p && p->comm ? p->comm : "");
			place_labels(r->out, p);
			close_u64(r, fld == GP_MEM ? row->mem_last : fld == GP_SM ? row->sm_last : row->mem_util_last);
		}
}

static void gpu_families(struct render *r)
{
	const struct gp_gpus *g = &r->m->gpus;

	family(r, "gpuprobed_nvml_up", "gauge",
	       "1 when NVML is sampled, 0 when it is off, absent or failed (the report's nvml.note says why).");
	plain_u64(r, "gpuprobed_nvml_up", g->state == GP_NVML_OK);
	for (size_t i = 0; i < sizeof(gpu_gauges) / sizeof(gpu_gauges[0]); i++) {
		family(r, gpu_gauges[i].name, "gauge", gpu_gauges[i].help);
		FOR_LIVE_GPUS(r, d) {
			const struct gp_gpu_stat *st = &d->m[gpu_gauges[i].metric];

			if (!st->n || st->last_ns != d->last_ns)
				continue; /* the latest sample did not give it: absent, not stale */
			open_sample(r, gpu_gauges[i].name, "");
			gpu_labels(r, d);
			close_scaled(r, st->last, gpu_gauges[i].scale);
		}
	}
	family(r, "gpuprobed_gpu_fb_total_bytes", "gauge", "Device memory in all, bytes (DCGM_FI_DEV_FB_TOTAL).");
	FOR_LIVE_GPUS(r, d) {
		open_sample(r, "gpuprobed_gpu_fb_total_bytes", "");
		gpu_labels(r, d);
		close_u64(r, d->memory_total);
	}
	family(r, "gpuprobed_gpu_samples_total", "counter", "NVML samples taken of the device.");
	for (size_t i = 0; i < g->n; i++) {
		open_sample(r, "gpuprobed_gpu_samples_total", "");
		gpu_labels(r, &g->devs[i]);
		close_u64(r, g->devs[i].samples);
	}
	family(r, "gpuprobed_gpu_lost", "gauge", "1 once NVML said the device is lost (GPU_IS_LOST), else 0.");
	for (size_t i = 0; i < g->n; i++) {
		open_sample(r, "gpuprobed_gpu_lost", "");
		gpu_labels(r, &g->devs[i]);
		close_u64(r, g->devs[i].lost);
	}
	family(r, "gpuprobed_nvml_errors_total", "counter",
	       "NVML calls that failed, by device (\"\": none), call and NVML's return code.");
	for (size_t i = 0; i < g->nerrors; i++) {
		const struct gp_gpu_error_row *e = &g->errors[i];
		char idx[16] = "", code[16];

		if (e->index != GP_GPU_NO_DEVICE)
			snprintf(idx, sizeof(idx), "%u", e->index);
		snprintf(code, sizeof(code), "%d", e->code);
		open_sample(r, "gpuprobed_nvml_errors_total", "");
		label(r, false, "gpu", idx);
		label(r, true, "call", e->call);
		label(r, true, "code", code);
		close_u64(r, e->count);
	}
	gpu_proc_family(r, "gpuprobed_gpu_process_fb_used_bytes", GP_MEM,
			"Device memory NVML says the process holds on the device, bytes (its context and the "
			"allocator's cache included).");
	gpu_proc_family(r, "gpuprobed_gpu_process_sm_util", GP_SM,
			"The process's SM utilization on the device in percent, as NVML last gave it.");
	gpu_proc_family(r, "gpuprobed_gpu_process_mem_util", GP_MEMUTIL,
			"The process's memory utilization on the device in percent, as NVML last gave it.");
}

/* ---- the daemon ------------------------------------------------------------- */

static void model_families(struct render *r)
{
	const struct gp_model *m = r->m;
	__u64 hits[GP_API_MAX] = { 0 }, nprobes = 0;
	bool probed[GP_API_MAX] = { false };

	family(r, "gpuprobed_drops_total", "counter",
	       "Events lost or not understood, by cause (every cause listed, also at 0; docs/report-format.md \"drops\").");
	for (size_t i = 0; i < m->ndrops; i++) {
		open_sample(r, "gpuprobed_drops_total", "");
		label(r, false, "cause", m->drops[i].name);
		close_u64(r, m->drops[i].count);
	}
	for (unsigned i = 0; i < GP_MAX_PROBES; i++) {
		const struct gp_probe *pr = m->probes[i];

		if (!pr)
			continue;
		nprobes++;
		if ((unsigned)pr->api < GP_API_MAX) {
			hits[pr->api] += pr->entry_hits;
			probed[pr->api] = true;
		}
	}
	family(r, "gpuprobed_probes", "gauge", "Probe pairs (uprobe and uretprobe) attached now.");
	plain_u64(r, "gpuprobed_probes", nprobes);
	family(r, "gpuprobed_probe_hits_total", "counter",
	       "Entries into probed functions as the kernel counted them (before any loss), by API.");
	for (unsigned a = 1; a < GP_API_MAX; a++) {
		if (!probed[a])
			continue;
		open_sample(r, "gpuprobed_probe_hits_total", "");
		label(r, false, "api", gp_apis[a].symbol);
		close_u64(r, hits[a]);
	}
}

static void self_families(struct render *r, const struct gp_metrics_self *self)
{
	struct rusage ru;
	char *statm;
	unsigned long long size, resident;

	if (!getrusage(RUSAGE_SELF, &ru)) {
		__u64 ns = ((__u64)ru.ru_utime.tv_sec + (__u64)ru.ru_stime.tv_sec) * 1000000000ull +
			   ((__u64)ru.ru_utime.tv_usec + (__u64)ru.ru_stime.tv_usec) * 1000ull;

		family(r, "gpuprobed_cpu_seconds_total", "counter", "CPU time gpuprobed itself used, user and system.");
		fputs("gpuprobed_cpu_seconds_total", r->out);
		fprintf(r->out, " %llu.%09llu\n", (unsigned long long)(ns / 1000000000ull),
			(unsigned long long)(ns % 1000000000ull));
	}
	statm = gp_read_whole_file("/proc/self/statm", NULL);
	if (statm && sscanf(statm, "%llu %llu", &size, &resident) == 2) {
		family(r, "gpuprobed_resident_memory_bytes", "gauge", "Resident memory of gpuprobed itself.");
		plain_u64(r, "gpuprobed_resident_memory_bytes", resident * (__u64)sysconf(_SC_PAGESIZE));
	}
	free(statm);
	family(r, "gpuprobed_start_time_seconds", "gauge", "When gpuprobed started, seconds since the Unix epoch.");
	fprintf(r->out, "gpuprobed_start_time_seconds %llu.%09llu\n",
		(unsigned long long)(self->start_realtime_ns / 1000000000ull),
		(unsigned long long)(self->start_realtime_ns % 1000000000ull));
	family(r, "gpuprobed_processes_evicted_total", "counter",
	       "Processes forgotten before their time to stay under max_processes.");
	plain_u64(r, "gpuprobed_processes_evicted_total", self->processes_evicted);
	family(r, "gpuprobed_config_reloads_total", "counter", "Configuration reloads (SIGHUP), by result.");
	fprintf(r->out, "gpuprobed_config_reloads_total{result=\"ok\"} %llu\n",
		(unsigned long long)self->reloads);
	fprintf(r->out, "gpuprobed_config_reloads_total{result=\"failed\"} %llu\n",
		(unsigned long long)self->reload_failures);
	family(r, "gpuprobed_reports_written_total", "counter", "Periodic and exit reports written.");
	plain_u64(r, "gpuprobed_reports_written_total", self->reports_written);
	family(r, "gpuprobed_reports_removed_total", "counter",
	       "Reports removed to keep the reports directory under its bound.");
	plain_u64(r, "gpuprobed_reports_removed_total", self->reports_removed);
	sampling_families(r);
	family(r, "gpuprobed_build_info", "gauge", "Always 1; the version of gpuprobed in its label.");
	fputs("gpuprobed_build_info{", r->out);
	label(r, false, "version", GP_VERSION);
	fputs("} 1\n", r->out);
}

int gp_metrics_render(const struct gp_model *m, const struct gp_metrics_opts *o,
		      const struct gp_metrics_self *self, FILE *out)
{
	static const struct gp_metrics_opts no_opts = { .job_source = GP_JOB_NONE };
	struct render r = { .out = out, .m = m, .o = o ? o : &no_opts };
	int err = 0;

	r.proc_root = r.o->proc_root ? r.o->proc_root : "/proc";
	r.labels = calloc(m->nprocs ? m->nprocs : 1, sizeof(*r.labels));
	r.pc = calloc(m->nprocs ? m->nprocs : 1, sizeof(*r.pc));
	if (!r.labels || !r.pc) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < m->nprocs && !err; i++)
		err = process_labels(&r, i);
	if (err)
		goto out;
	process_families(&r);
	gpu_families(&r);
	model_families(&r);
	if (self)
		self_families(&r, self);
	if (fflush(out) || ferror(out))
		err = errno ? -errno : -EIO;
out:
	for (size_t i = 0; r.labels && i < m->nprocs; i++)
		free(r.labels[i]);
	free(r.labels);
	free(r.pc);
	return err;
}
