/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * replay_whatif.c — the what-if changes by name; their effect measured in
 * rounds of alternating baseline and changed replays after a warm-up, and
 * summarised as the median saving and the range of the rounds' savings
 * (gp_whatif_measure); the same as a function for callers other than the
 * command line (gp_replay_what_if).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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
	if (!strcmp(s, "none")) {
		*what = GP_WHATIF_NONE;
		return 0;
	}
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
			if (n == 4 && !strncmp(s, "none", 4))
				snprintf(
					errmsg, errlen,
					"--what-if none replays the plan unchanged: it takes no other change");
			else
				snprintf(
					errmsg, errlen,
					"unknown --what-if change '%.*s' (known: pinned, async-copies, "
					"no-redundant-sync, none)",
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
	if (what & GP_WHATIF_NONE) {
		snprintf(buf, len, "none");
		return;
	}
	for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++)
		if ((what & changes[i].bit) && off < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "," : "",
						changes[i].name);
}

static __s64 saving(const struct gp_whatif_round *r)
{
	return (__s64)r->baseline_ns - (__s64)r->changed_ns;
}

void gp_whatif_summarize(struct gp_whatif_stats *st)
{
	unsigned order[GP_WHATIF_ROUNDS_MAX];
	unsigned n = st->rounds < GP_WHATIF_ROUNDS_MAX ? st->rounds : GP_WHATIF_ROUNDS_MAX;

	st->median = 0;
	st->saving_ns = st->saving_min_ns = st->saving_max_ns = 0;
	if (!n)
		return;
	/* insertion sort of the rounds by saving; ties keep round order */
	for (unsigned i = 0; i < n; i++) {
		unsigned j = i;

		for (; j > 0 && saving(&st->round[order[j - 1]]) > saving(&st->round[i]); j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	st->median = order[n / 2];
	st->saving_ns = saving(&st->round[st->median]);
	st->saving_min_ns = saving(&st->round[order[0]]);
	st->saving_max_ns = saving(&st->round[order[n - 1]]);
}

/* One replay; its failed calls are added to st (the first one named). */
static int run_once(const struct gp_cuda *cu, const struct gp_rprocess *p, double speed,
		    unsigned what, struct gp_whatif_stats *st, struct gp_replay_result *res,
		    char *errmsg, size_t errlen)
{
	int rc = gp_replay_run(cu, p, speed, what, res, errmsg, errlen);

	if (rc)
		return rc;
	if (res->errors && !st->errors)
		snprintf(st->first_error, sizeof(st->first_error), "%s", res->first_error);
	st->errors += res->errors;
	return 0;
}

int gp_whatif_measure(const struct gp_cuda *cu, const struct gp_rprocess *p, double speed,
		      unsigned what, struct gp_whatif_stats *st, struct gp_replay_result *base,
		      struct gp_replay_result *chg, char *errmsg, size_t errlen)
{
	unsigned n = st->rounds;
	struct gp_replay_result warm, (*res)[2];
	int rc = 0;

	memset(base, 0, sizeof(*base));
	memset(chg, 0, sizeof(*chg));
	if (!(n & 1) || n > GP_WHATIF_ROUNDS_MAX) {
		snprintf(errmsg, errlen, "%u rounds: an odd number from 1 to %d", n,
			 GP_WHATIF_ROUNDS_MAX);
		return -EINVAL;
	}
	if (!(res = calloc(n, sizeof(*res)))) {
		snprintf(errmsg, errlen, "out of memory");
		return -ENOMEM;
	}
	st->errors = 0;
	st->first_error[0] = '\0';
	/*
	 * Warm-up, discarded: the first replay in a process pays one-off costs
	 * (first touches of the runtime's and driver's paths and memory, lazy
	 * binding) that a later one does not; a changed plan may take paths the
	 * baseline does not, so it is warmed up too.
	 */
	for (int w = 0; w < 2 && !rc; w++) {
		if (w && (what & GP_WHATIF_NONE))
			break;
		rc = run_once(cu, p, speed, w ? what : 0, st, &warm, errmsg, errlen);
		gp_replay_result_release(&warm);
	}
	for (unsigned i = 0; i < n && !rc; i++) {
		bool changed_first = i & 1;

		for (int k = 0; k < 2 && !rc; k++) {
			bool changed = (k == 0) == changed_first;

			rc = run_once(cu, p, speed, changed ? what : 0, st, &res[i][changed],
				      errmsg, errlen);
		}
		if (rc)
			break;
		st->round[i] = (struct gp_whatif_round){ .baseline_ns = res[i][0].wall_ns,
							 .changed_ns = res[i][1].wall_ns,
							 .changed_first = changed_first };
	}
	if (!rc) {
		gp_whatif_summarize(st);
		*base = res[st->median][0];
		*chg = res[st->median][1];
		memset(&res[st->median], 0, sizeof(res[st->median]));
	}
	for (unsigned i = 0; i < n; i++) {
		gp_replay_result_release(&res[i][0]);
		gp_replay_result_release(&res[i][1]);
	}
	free(res);
	return rc;
}

int gp_replay_what_if(const char *path, __u32 pid, unsigned what, struct gp_whatif_stats *st,
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
	rc = gp_whatif_measure(&cu, p, 1.0, what, st, &base, &chg, errmsg, errlen);
	if (!rc) {
		gp_replay_result_release(&base);
		gp_replay_result_release(&chg);
	}
	gp_cuda_close(&cu);
	gp_rplan_release(&plan);
	return rc;
}
