/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * view_gpus.h — the GPU's side as readers see it (view.h includes it): NVML's
 * state, each device's sampled metrics, the processes NVML listed, its
 * failed calls.
 */
#ifndef GP_MODEL_VIEW_GPUS_H
#define GP_MODEL_VIEW_GPUS_H

#include "model/model.h"

struct gp_model;

/* ---- the GPU's side (gpus.c): NVML's devices, sampled ---------------------- */
struct gp_gpu_stat {
	__u64 n, min, max, last;
	__u64 last_ns;	 /* the time of the sample that gave last */
	double sum;	 /* of the values: the plain mean */
	double wsum, wt; /* weighted by each sample's window: the time mean */
};

/* One process on one device, as NVML listed it. */
struct gp_gpu_proc_row {
	__u32 pid;
	__u64 samples; /* memory samples */
	__u64 first_ns, last_ns;
	__u64 mem_last, mem_max; /* device memory NVML says it holds */
	__u64 util_samples;
	__u64 sm_sum, sm_max, mem_util_sum, mem_util_max;
	__u64 sm_last, mem_util_last, util_last_ns; /* the latest utilization NVML gave, and when */
};

struct gp_gpu_error_row {
	__u32 index; /* GP_GPU_NO_DEVICE: not a device's */
	char *call, *text;
	__s32 code;
	__u64 count, first_ns;
};

struct gp_gpu_device {
	__u32 index;
	char *name, *uuid;
	__u64 memory_total;
	__u64 samples, first_ns, last_ns;
	__u64 window_start_ns, window_ns; /* the first sample's window start; the windows' sum */
	struct gp_gpu_stat m[GP_GM_N];
	__u64 throttle_seen; /* every reason bit seen */
	bool lost;	     /* NVML said GPU_IS_LOST */
	__u64 lost_ns;
	struct gp_gpu_proc_row *procs;
	size_t nprocs, capprocs;
};

struct gp_gpus {
	int state; /* enum gp_nvml_state */
	char *note, *driver;
	__u64 interval_ns;
	__u64 sampler_cpu_ns; /* the sampling thread's CPU time (its cost) */
	struct gp_gpu_device *devs;
	size_t n, cap;
	struct gp_gpu_error_row *errors;
	size_t nerrors, caperrors;
};

const struct gp_gpu_device *gp_gpu_device_of(const struct gp_model *m,
					     __u32 index); /* NULL: none */
double gp_gpu_stat_mean(const struct gp_gpu_stat *st);	   /* time-weighted; 0 without samples */

#endif /* GP_MODEL_VIEW_GPUS_H */
