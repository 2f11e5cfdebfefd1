/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nvml_sampler.h — a thread that samples NVML every interval (each
 * device's metrics and processes) into a queue; the session's loop drains
 * the queue into the model (gp_nvml_sampler_drain), so the model is only
 * ever written by the loop's thread.
 */
#ifndef GP_GPU_NVML_SAMPLER_H
#define GP_GPU_NVML_SAMPLER_H

#include <linux/types.h>

#include "model/model.h"

#define GP_NVML_DEFAULT_INTERVAL_MS 100

struct gp_nvml_sampler;

/*
 * Opens NVML (lib: a path, NULL: the soname) and starts sampling every interval_ms; the model
 * learns NVML's state (a line when it is absent or failing: never fatal) and the devices.
 * NULL when there is nothing to sample (said in the model), or on ENOMEM.
 */
struct gp_nvml_sampler *gp_nvml_sampler_start(struct gp_model *m, const char *lib,
					      unsigned interval_ms);
/* What the thread sampled since the last drain, into m. */
void gp_nvml_sampler_drain(struct gp_nvml_sampler *s, struct gp_model *m);
/* Stops the thread, drains, says its CPU time in the model, shuts NVML down, frees. NULL: no-op. */
void gp_nvml_sampler_stop(struct gp_nvml_sampler *s, struct gp_model *m);

#endif /* GP_GPU_NVML_SAMPLER_H */
