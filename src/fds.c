/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* fds.c — what a forked helper keeps of its descriptors (see fds.h). */
#include "fds.h"

#include <sys/syscall.h>
#include <unistd.h>

static void close_range_of(unsigned int from, unsigned int to)
{
	long max = sysconf(_SC_OPEN_MAX);

	if (from > to || !syscall(SYS_close_range, from, to, 0))
		return;
	if (max <= 0 || max > 1 << 20)
		max = 1 << 20;
	for (unsigned int fd = from; fd <= to && fd < (unsigned long)max; fd++)
		close((int)fd);
}

void gp_fds_close_all_but(int *keep, size_t n, int from)
{
	unsigned int next = from > 0 ? (unsigned int)from : 0;

	for (size_t i = 1; i < n; i++) /* insertion sort: a few, or a session's probes once */
		for (size_t j = i; j > 0 && keep[j] < keep[j - 1]; j--) {
			int t = keep[j];

			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < 0 || (unsigned int)keep[i] < next)
			continue;
		if ((unsigned int)keep[i] > next)
			close_range_of(next, (unsigned int)keep[i] - 1);
		next = (unsigned int)keep[i] + 1;
	}
	close_range_of(next, ~0u);
}
