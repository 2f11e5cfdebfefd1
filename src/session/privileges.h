/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * privileges.h — does this process hold what tracing needs? Checked up front
 * so that a non-root run gets one clear sentence instead of a libbpf error.
 */
#ifndef GP_PRIVILEGES_H
#define GP_PRIVILEGES_H

#include <stdbool.h>
#include <stddef.h>

/*
 * 0 when the effective capabilities allow loading BPF programs, creating
 * uprobes and reading other processes' memory maps; otherwise -EPERM with
 * what is missing written into missing (e.g. "CAP_BPF, CAP_PERFMON").
 */
int gp_check_privileges(char *missing, size_t len);

/* CAP_SYS_ADMIN is effective (perf_event_open under kernel.perf_event_paranoid 3). */
bool gp_has_sys_admin(void);

#endif
