/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * metrics_gpu.c — NVML's part of the /metrics page (see metrics_internal.h):
 * each device's gauges (DCGM-exporter's fields under gpuprobed's prefix, in
 * base units), its samples, losses and NVML's errors, and the processes
 * NVML lists on each device with their memory and utilization.
 */
#include <stdio.h>

#include "daemon/metrics_internal.h"

/* ---- NVML: the devices and the processes on them --------------------------- */

/*
 * How a metric's value becomes the gauge's, in base units: as sampled, mW as W, KB/s (of 1024 B)
 * as B/s, percent as a ratio, MHz as Hz.
 */
enum gpu_scale { GS_RAW, GS_MILLI, GS_KIB, GS_PERCENT, GS_MEGA };

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
	{ GP_GM_UTIL_GPU, "gpuprobed_gpu_utilization_ratio", GS_PERCENT,
	  "Share of the last sample's window a kernel ran, 0 to 1 (DCGM_FI_DEV_GPU_UTIL, in percent there)." },
	{ GP_GM_UTIL_MEM, "gpuprobed_gpu_mem_copy_utilization_ratio", GS_PERCENT,
	  "Share of the last sample's window device memory was read or written, 0 to 1 (DCGM_FI_DEV_MEM_COPY_UTIL, in percent there)." },
	{ GP_GM_MEM_USED, "gpuprobed_gpu_fb_used_bytes", GS_RAW,
	  "Device memory in use, bytes (DCGM_FI_DEV_FB_USED, in MiB there)." },
	{ GP_GM_SM_CLOCK, "gpuprobed_gpu_sm_clock_hertz", GS_MEGA,
	  "SM clock, hertz (DCGM_FI_DEV_SM_CLOCK, in MHz there)." },
	{ GP_GM_MEM_CLOCK, "gpuprobed_gpu_mem_clock_hertz", GS_MEGA,
	  "Memory clock, hertz (DCGM_FI_DEV_MEM_CLOCK, in MHz there)." },
	{ GP_GM_POWER, "gpuprobed_gpu_power_usage_watts", GS_MILLI,
	  "Power draw, watts (DCGM_FI_DEV_POWER_USAGE)." },
	{ GP_GM_TEMP, "gpuprobed_gpu_temp_celsius", GS_RAW,
	  "GPU temperature, degrees C (DCGM_FI_DEV_GPU_TEMP)." },
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

/* Exactly: decimal digits, no float rounding. */
static void close_scaled(struct render *r, __u64 v, enum gpu_scale scale)
{
	if (scale == GS_MILLI)
		fprintf(r->out, "} %llu.%03llu\n", (unsigned long long)(v / 1000),
			(unsigned long long)(v % 1000));
	else if (scale == GS_PERCENT)
		fprintf(r->out, "} %llu.%02llu\n", (unsigned long long)(v / 100),
			(unsigned long long)(v % 100));
	else
		close_u64(r, scale == GS_KIB ? v * 1024 : scale == GS_MEGA ? v * 1000000 : v);
}

/* Loops over the devices NVML still answers for (a lost one has only gpuprobed_gpu_lost). */
#define FOR_LIVE_GPUS(r, d)                                                                  \
	for (size_t gi_ = 0; gi_ < (r)->m->gpus.n; gi_++)                                    \
		for (const struct gp_gpu_device *d = &(r)->m->gpus.devs[gi_]; d && !d->lost; \
		     d = NULL)

/* The rows of the processes NVML listed in the device's latest sample (not the ones gone since). */
#define FOR_GPU_PROCS(d, row)                                              \
	for (size_t pi_ = 0; pi_ < (d)->nprocs; pi_++)                     \
		for (const struct gp_gpu_proc_row *row = &(d)->procs[pi_]; \
		     row && row->last_ns >= (d)->last_ns; row = NULL)

enum gpu_proc_field { GP_MEM, GP_SM, GP_MEMUTIL };

static void gpu_proc_family(struct render *r, const char *name, enum gpu_proc_field fld,
			    const char *help)
{
	family(r, name, "gauge", help);
	FOR_LIVE_GPUS(r, d)
	FOR_GPU_PROCS(d, row)
	{
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
		gp_metrics_place_labels(r->out, p);
		close_scaled(r,
			     fld == GP_MEM  ? row->mem_last
			     : fld == GP_SM ? row->sm_last
					    : row->mem_util_last,
			     fld == GP_MEM ? GS_RAW : GS_PERCENT);
	}
}

void gp_metrics_gpu_families(struct render *r)
{
	const struct gp_gpus *g = &r->m->gpus;

	family(r, "gpuprobed_nvml_up", "gauge",
	       "1 when NVML is sampled, 0 when it is off, absent or failed (the report's nvml.note says why).");
	plain_u64(r, "gpuprobed_nvml_up", g->state == GP_NVML_OK);
	for (size_t i = 0; i < sizeof(gpu_gauges) / sizeof(gpu_gauges[0]); i++) {
		family(r, gpu_gauges[i].name, "gauge", gpu_gauges[i].help);
		FOR_LIVE_GPUS(r, d)
		{
			const struct gp_gpu_stat *st = &d->m[gpu_gauges[i].metric];

			if (!st->n || st->last_ns != d->last_ns)
				continue; /* the latest sample did not give it: absent, not stale */
			open_sample(r, gpu_gauges[i].name, "");
			gpu_labels(r, d);
			close_scaled(r, st->last, gpu_gauges[i].scale);
		}
	}
	family(r, "gpuprobed_gpu_fb_total_bytes", "gauge",
	       "Device memory in all, bytes (DCGM_FI_DEV_FB_TOTAL).");
	FOR_LIVE_GPUS(r, d)
	{
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
	family(r, "gpuprobed_gpu_lost", "gauge",
	       "1 once NVML said the device is lost (GPU_IS_LOST), else 0.");
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
	gpu_proc_family(
		r, "gpuprobed_gpu_process_fb_used_bytes", GP_MEM,
		"Device memory NVML says the process holds on the device, bytes (its context and the "
		"allocator's cache included).");
	gpu_proc_family(
		r, "gpuprobed_gpu_process_sm_utilization_ratio", GP_SM,
		"The process's SM utilization on the device, 0 to 1, as NVML last gave it (in percent).");
	gpu_proc_family(
		r, "gpuprobed_gpu_process_mem_utilization_ratio", GP_MEMUTIL,
		"The process's memory utilization on the device, 0 to 1, as NVML last gave it (in percent).");
}
