/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * metrics.c — the /metrics page: the model as Prometheus text exposition
 * (0.0.4), in this order: per process API calls, transfers, device memory,
 * NCCL operations and the kernel's CPU counters (metrics_process.c, over
 * what metrics_collect.c read of each process first), NVML's view of each
 * device and of the processes on it (metrics_gpu.c), then the daemon's own
 * health, here. One family at a time (HELP, TYPE, then its samples for
 * every process), so a family's samples stay together as the format
 * requires. Labels are only bounded names (APIs, directions, ops, causes; a
 * process's container and pod, one each per process kept): never kernels,
 * stacks, streams or communicator handles, whose number has no bound.
 * docs/metrics.md says what each number means.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "analysis/advice.h"
#include "daemon/metrics.h"
#include "daemon/metrics_internal.h"
#include "model/view.h"
#include "text/text_clean.h"
#include "proc_maps.h"

/* ---- the text format ------------------------------------------------------ */

/* A label value: \ " and newline escaped; bytes that are not UTF-8 text become U+FFFD. */
void gp_metrics_put_value(FILE *f, const char *s)
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

/* ---- the daemon ------------------------------------------------------------- */

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
	gauge(r, "gpuprobed_overhead_budget_ratio",
	      "The configured overhead budget (overhead_budget); absent when off.",
	      s->set && s->budget > 0, s->budget);
	gauge(r, "gpuprobed_duty_cycle_ratio",
	      "Fraction of the current second the hot probes are attached (1 without an overhead budget).",
	      true, s->set ? s->duty : 1);
	family(r, "gpuprobed_counts_estimated", "gauge",
	       "1 when some counts were scaled up from a duty cycle below 1 (estimates, not exact counts), else 0.");
	plain_u64(r, "gpuprobed_counts_estimated", r->m->estimated_calls > 0);
}

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

		family(r, "gpuprobed_cpu_seconds_total", "counter",
		       "CPU time gpuprobed itself used, user and system.");
		fputs("gpuprobed_cpu_seconds_total", r->out);
		fprintf(r->out, " %llu.%09llu\n", (unsigned long long)(ns / 1000000000ull),
			(unsigned long long)(ns % 1000000000ull));
	}
	statm = gp_read_whole_file("/proc/self/statm", NULL);
	if (statm && sscanf(statm, "%llu %llu", &size, &resident) == 2) {
		family(r, "gpuprobed_resident_memory_bytes", "gauge",
		       "Resident memory of gpuprobed itself.");
		plain_u64(r, "gpuprobed_resident_memory_bytes",
			  resident * (__u64)sysconf(_SC_PAGESIZE));
	}
	free(statm);
	family(r, "gpuprobed_start_time_seconds", "gauge",
	       "When gpuprobed started, seconds since the Unix epoch.");
	fprintf(r->out, "gpuprobed_start_time_seconds %llu.%09llu\n",
		(unsigned long long)(self->start_realtime_ns / 1000000000ull),
		(unsigned long long)(self->start_realtime_ns % 1000000000ull));
	family(r, "gpuprobed_processes_evicted_total", "counter",
	       "Processes forgotten before their time to stay under max_processes.");
	plain_u64(r, "gpuprobed_processes_evicted_total", self->processes_evicted);
	family(r, "gpuprobed_config_reloads_total", "counter",
	       "Configuration reloads (SIGHUP), by result.");
	fprintf(r->out, "gpuprobed_config_reloads_total{result=\"ok\"} %llu\n",
		(unsigned long long)self->reloads);
	fprintf(r->out, "gpuprobed_config_reloads_total{result=\"failed\"} %llu\n",
		(unsigned long long)self->reload_failures);
	family(r, "gpuprobed_reports_written_total", "counter",
	       "Periodic and exit reports written.");
	plain_u64(r, "gpuprobed_reports_written_total", self->reports_written);
	family(r, "gpuprobed_reports_removed_total", "counter",
	       "Reports removed to keep the reports directory under its bound.");
	plain_u64(r, "gpuprobed_reports_removed_total", self->reports_removed);
	sampling_families(r);
	family(r, "gpuprobed_build_info", "gauge",
	       "Always 1; the version of gpuprobed in its label.");
	fputs("gpuprobed_build_info{", r->out);
	label(r, false, "version", GP_VERSION);
	fputs("} 1\n", r->out);
}

int gp_metrics_render(const struct gp_model *m, const struct gp_metrics_opts *o,
		      const struct gp_metrics_self *self, FILE *out)
{
	static const struct gp_metrics_opts no_opts = { .job_source = GP_JOB_NONE };
	struct render r = { .out = out, .m = m, .o = o ? o : &no_opts };
	struct gp_findings findings = { 0 };
	int err = 0;

	r.proc_root = r.o->proc_root ? r.o->proc_root : "/proc";
	r.labels = calloc(m->nprocs ? m->nprocs : 1, sizeof(*r.labels));
	r.pc = calloc(m->nprocs ? m->nprocs : 1, sizeof(*r.pc));
	if (!r.labels || !r.pc) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < m->nprocs && !err; i++)
		err = gp_metrics_collect(&r, i);
	if (!err && !gp_advise(m, &findings)) /* as a report finds them; out of memory: none */
		r.findings = &findings;
	if (err)
		goto out;
	if (r.o->pool)
		err = gp_metrics_pooled_families(&r);
	else
		gp_metrics_process_families(&r);
	if (err)
		goto out;
	gp_metrics_gpu_families(&r);
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
	gp_findings_release(&findings);
	return err;
}
