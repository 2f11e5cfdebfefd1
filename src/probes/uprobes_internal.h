/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * uprobes_internal.h — between uprobes.c (placing probes) and
 * probe_removal.c (taking them away), nobody else.
 */
#ifndef GP_UPROBES_INTERNAL_H
#define GP_UPROBES_INTERNAL_H

#include <stddef.h>

#include "probes/uprobes.h"

/*
 * uprobes.c: the advisory lock by which gpuprobed instances take turns at
 * placing and removing probes (uprobes.c says why). The lock's fd, or -1
 * when it cannot be had (said once; the work goes on unlocked).
 */
int gp_probes_lock(void);
void gp_probes_unlock(int fd); /* -1: a no-op */

/* probe_removal.c: removes the links of the probes [first, end), returns first; records stay. */
void gp_uprobes_detach_links(struct gp_uprobes *u, size_t first, size_t end);

#endif /* GP_UPROBES_INTERNAL_H */
