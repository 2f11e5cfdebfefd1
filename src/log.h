/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * log.h — the one way gpuprobed talks to its user on stderr.
 * Levels are syslog's; -v raises the level to LOG_INFO, -vv to LOG_DEBUG.
 * Messages name the object and the cause, e.g.
 *   "attach libcudart.so.13:cudaMemcpy (pid 4242): Permission denied".
 */
#ifndef GP_LOG_H
#define GP_LOG_H

#include <syslog.h>

extern int gp_log_level;	 /* messages above this level are not printed */
extern int gp_log_syslog_prefix; /* prefix "<N>" for journald (daemon mode) */

void gp_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define gp_err(...)    gp_log(LOG_ERR, __VA_ARGS__)
#define gp_warn(...)   gp_log(LOG_WARNING, __VA_ARGS__)
#define gp_notice(...) gp_log(LOG_NOTICE, __VA_ARGS__)
#define gp_info(...)   gp_log(LOG_INFO, __VA_ARGS__)
#define gp_debug(...)  gp_log(LOG_DEBUG, __VA_ARGS__)

#endif
