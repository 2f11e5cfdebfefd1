/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * replay_whatif.c — the what-if changes by name, and the measured effect of
 * a set of them as a function (gp_replay_what_if) for callers other than
 * the command line.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "replay/replay.h"
#include "replay/replay_run.h"

static const struct {
	const char *name;
	unsigned bit;
} changes[] = {
	{ "pinned", GP_WHATIF_PINNED },
	{ "async-copies", GP_WHATIF_ASYNC_COPIES },
	{ "no-redundant-sync", GP_WHATIF_NO_REDUNDANT_SYNC },
};

int gp_whatif_parse(const char *s, unsigned *what, char *errmsg, size_t errlen)
{
	*what = 0;
	while (1) {
		size_t n = strcspn(s, ",");
		bool known = false;

		for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
			if (strlen(changes[i].name) == n && !strncmp(s, changes[i].name, n)) {
				*what |= changes[i].bit;
				known = true;
			}
		}
		if (!known) {
			snprintf(errmsg, errlen, "unknown --what-if change '%.*s' (known: pinned, async-copies, no-redundant-sync)",
				 (int)(n > 100 ? 100 : n), s);
			return -EINVAL;
		}
		if (!s[n])
			return 0;
		s += n + 1;
	}
}

void gp_whatif_name(unsigned what, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++)
		if ((what & changes[i].bit) && off < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "," : "", changes[i].name);
}

int gp_replay_what_if(const char *path, __u32 pid, unsigned what, __u64 *baseline_ns, __u64 *changed_ns,
		      char *errmsg, size_t errlen)
{
	struct gp_rplan plan;
	struct gp_cuda cu;
	struct gp_replay_result base, chg;
	const struct gp_rprocess *p;
	int rc;

	if ((rc = gp_replay_plan_file(path, NULL, &plan, errmsg, errlen)))
		return rc;
	if (!(p = gp_rplan_process(&plan, pid))) {
		snprintf(errmsg, errlen, "pid %u is not in %s", pid, path);
		gp_rplan_release(&plan);
		return -ENOENT;
	}
	if ((rc = gp_cuda_open(&cu, errmsg, errlen))) {
		gp_rplan_release(&plan);
		return rc;
	}
	rc = gp_replay_run(&cu, p, 1.0, 0, &base, errmsg, errlen);
	if (!rc) {
		rc = gp_replay_run(&cu, p, 1.0, what, &chg, errmsg, errlen);
		if (!rc) {
			*baseline_ns = base.wall_ns;
			*changed_ns = chg.wall_ns;
			gp_replay_result_release(&chg);
		}
		gp_replay_result_release(&base);
	}
	gp_cuda_close(&cu);
	gp_rplan_release(&plan);
	return rc;
}
