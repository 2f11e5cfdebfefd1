/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_md_gpus.c — report.md's "GPU devices": NVML's state in one line
 * when it is not there or failed; per device, the metrics' mean and
 * extremes; a lost device and failed calls, one line each; the processes
 * NVML listed, their device memory beside what their traced calls
 * allocated, their utilization beside the host's verdict.
 */
#include <errno.h>
#include <string.h>

#include "report/report_md.h"

static double num(const json_t *o, const char *key)
{
	return json_number_value(json_object_get(o, key));
}

/* "avg (max)" of a metric, scaled; "—" when it was never given. */
static void metric_cell(struct gp_md_table *t, const json_t *dev, const char *key, double scale)
{
	const json_t *m = json_object_get(json_object_get(dev, "metrics"), key);

	if (!json_is_object(m))
		gp_md_table_cell(t, "—");
	else
		gp_md_table_cell(t, "%.1f (%.1f)", num(m, "avg") / scale, num(m, "max") / scale);
}

static void error_lines(const json_t *errs, const char *who, FILE *out)
{
	const json_t *e;
	size_t i;

	json_array_foreach(errs, i, e)
		fprintf(out, "- %s: NVML call `%s` failed: %s (%lld), %lld time%s\n", who,
			gp_md_str(e, "call"), gp_md_str(e, "text"), (long long)gp_md_int(e, "code"),
			(long long)gp_md_int(e, "count"), gp_md_int(e, "count") == 1 ? "" : "s");
}

static int devices(const json_t *doc, const json_t *gpus, FILE *out)
{
	static const char *const head[] = { "GPU",	  "Name",	   "Samples",
					    "GPU util %", "Memory util %", "Memory used MiB",
					    "Total MiB",  "SM clock MHz",  "Power W",
					    "Temp C",	  "PCIe TX KB/s",  "PCIe RX KB/s" };
	struct gp_md_table *t = gp_md_table_new(12, head, "rlrrrrrrrrrr");
	const json_t *dev;
	size_t i;
	char n[32], when[64];
	int err;

	json_array_foreach(gpus, i, dev) {
		if (!t)
			break;
		gp_md_table_cell(t, "%lld", (long long)gp_md_int(dev, "index"));
		gp_md_table_cell(t, "%s",
				 *gp_md_str(dev, "name") ? gp_md_str(dev, "name") : "(unknown)");
		gp_md_table_cell(t, "%s", gp_md_n(n, dev, "samples"));
		metric_cell(t, dev, "gpu_util_pct", 1);
		metric_cell(t, dev, "memory_util_pct", 1);
		metric_cell(t, dev, "memory_used_bytes", 1048576.0);
		gp_md_table_cell(t, "%.0f", num(dev, "memory_total_bytes") / 1048576.0);
		metric_cell(t, dev, "sm_clock_mhz", 1);
		metric_cell(t, dev, "power_mw", 1000.0);
		metric_cell(t, dev, "temperature_c", 1);
		metric_cell(t, dev, "pcie_tx_kbps", 1);
		metric_cell(t, dev, "pcie_rx_kbps", 1);
	}
	err = gp_md_flush_table(t, out);
	fputs("\nEach cell: the time-weighted mean over the samples (the maximum in parentheses); "
	      "utilization is NVML's: the share of each sample's window with a kernel running (GPU) or "
	      "device memory read or written (memory).\n\n",
	      out);
	json_array_foreach(gpus, i, dev) {
		char who[32];

		snprintf(who, sizeof(who), "GPU %lld", (long long)gp_md_int(dev, "index"));
		if (gp_md_bool(dev, "lost")) {
			gp_md_rel_time(when, sizeof(when), doc, gp_md_int(dev, "lost_mono_ns"));
			fprintf(out,
				"- %s disappeared at %s (NVML: GPU is lost): its samples end there.\n",
				who, when);
		}
		error_lines(json_object_get(dev, "errors"), who, out);
	}
	return err;
}

static int processes(const json_t *gpus, FILE *out)
{
	static const char *const head[] = { "GPU",
					    "PID",
					    "Process",
					    "Device memory (NVML) max",
					    "Allocated by traced calls (peak)",
					    "Not by traced calls",
					    "SM util % avg (max)",
					    "Host" };
	struct gp_md_table *t = NULL;
	const json_t *dev, *p;
	size_t i, j;
	char n[32], m[32];

	json_array_foreach(gpus, i, dev) {
		json_array_foreach(json_object_get(dev, "processes"), j, p) {
			const json_t *h = json_object_get(p, "host");

			if (!t && !(t = gp_md_table_new(8, head, "rrlrrrrl")))
				return -ENOMEM;
			gp_md_table_cell(t, "%lld", (long long)gp_md_int(dev, "index"));
			gp_md_table_cell(t, "%lld", (long long)gp_md_int(p, "pid"));
			gp_md_table_cell(t, "%s",
					 gp_md_bool(p, "traced") ? gp_md_str(p, "comm")
								 : "(not traced)");
			gp_md_table_cell(t, "%s", gp_md_n(n, p, "memory_used_bytes_max"));
			if (gp_md_bool(p, "traced")) {
				gp_md_table_cell(t, "%s",
						 gp_md_n(n, p, "traced_allocated_peak_bytes"));
				gp_md_table_cell(
					t, "%s",
					gp_md_n(m, p, "not_allocated_by_traced_calls_bytes"));
			} else {
				gp_md_table_cell(t, "—");
				gp_md_table_cell(t, "—");
			}
			if (gp_md_int(p, "util_samples"))
				gp_md_table_cell(t, "%.1f (%lld)", num(p, "sm_util_avg"),
						 (long long)gp_md_int(p, "sm_util_max"));
			else
				gp_md_table_cell(t, "—");
			if (json_is_object(h) &&
			    json_is_number(json_object_get(h, "in_gpu_calls_share")))
				gp_md_table_cell(
					t, "%s: %.0f %% on CPU, %.0f %% waiting in GPU calls",
					gp_md_str(h, "verdict"), 100 * num(h, "on_cpu_share"),
					100 * num(h, "in_gpu_calls_share"));
			else
				gp_md_table_cell(t, "%s",
						 json_is_object(h) ? gp_md_str(h, "verdict") : "—");
		}
	}
	if (!t)
		return 0;
	fputs("Processes NVML listed on each device. \"Not by traced calls\" is the device memory NVML says "
	      "the process held at most less the peak its traced calls allocated there: the framework "
	      "allocator's cache and the CUDA context.\n\n",
	      out);
	{
		int err = gp_md_flush_table(t, out);

		fputc('\n', out);
		return err;
	}
}

int gp_md_gpus(const json_t *doc, FILE *out)
{
	const json_t *nv = json_object_get(doc, "nvml"), *gpus = json_object_get(doc, "gpus");
	const char *state = gp_md_str(nv, "state");
	int e1, e2;

	if (!json_is_object(nv))
		return 0;
	fputs("## GPU devices\n\n", out);
	if (!strcmp(state, "off")) {
		fputs("NVML was not sampled (--no-nvml, or a capture without NVML records).\n\n",
		      out);
		return 0;
	}
	if (strcmp(state, "ok")) {
		fprintf(out, "%s.\n\n", gp_md_str(nv, "note"));
		return 0;
	}
	fprintf(out, "Sampled through NVML every %lld ms (driver %s).\n\n",
		(long long)gp_md_int(nv, "interval_ms"),
		*gp_md_str(nv, "driver_version") ? gp_md_str(nv, "driver_version") : "unknown");
	error_lines(json_object_get(nv, "errors"), "NVML", out);
	if (!json_array_size(gpus)) {
		fputs("NVML listed no device.\n\n", out);
		return 0;
	}
	e1 = devices(doc, gpus, out);
	fputc('\n', out);
	e2 = processes(gpus, out);
	return e1 ? e1 : e2;
}
