/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * daemon.h — gpuprobed --daemon: an always-on --all session configured by a
 * file (config.h), serving Prometheus metrics (metrics.h, metrics_http.h),
 * writing periodic reports into its state directory (bounded by size), with
 * memory bounded by configuration, SIGHUP to reload and SIGTERM to detach
 * and stop. Readiness and stopping are told to systemd (sd_notify).
 */
#ifndef GP_DAEMON_H
#define GP_DAEMON_H

#include "options/options.h"

/* Runs until SIGTERM/SIGINT; returns the exit status (1: the configuration or the start failed). */
int gp_daemon_run(const struct gp_options *cli);

#endif
