/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * replay_cmd.c — `gpuprobed replay CAPTURE [--pid P] [--speed X]
 * [--what-if WHAT[,WHAT...]] [--rounds N] [--kernel-times FILE] [--dry-run]
 * [-o DIR]`.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
#include "cmd/commands.h"
#include "log.h"
#include "replay/replay.h"
#include "replay/replay_report.h"
#include "report/report_files.h"

static const char usage_text[] =
	"Usage: gpuprobed replay CAPTURE [--pid PID] [--speed X] [--what-if WHAT[,WHAT...]]\n"
	"                        [--rounds N] [--kernel-times FILE] [--dry-run] [-o DIR]\n"
	"\n"
	"Rebuild the GPU work of each process of a capture (DIR/capture.gpz of a traced\n"
	"session) per host thread and per stream: allocations, copies, memsets, kernels,\n"
	"event records and waits, synchronisations, and the host's think time between\n"
	"calls; re-issue it through the CUDA runtime this process loads (libcudart.so.13,\n"
	".so.12 or .so, found through LD_LIBRARY_PATH), one host thread per original\n"
	"thread, keeping each stream's order and the dependencies between streams.\n"
	"Kernels are stood in for (their code is not in the capture). Prints original and\n"
	"replayed wall time and per-stream time; writes DIR/replay.json. See docs/replay.md.\n"
	"\n"
	"  -p, --pid PID          replay this process only (default: every process)\n"
	"      --speed X          divide the host's think time by X (default 1; GPU time\n"
	"                         is not scaled)\n"
	"      --what-if WHAT     replay as captured and changed, alternately, and print\n"
	"                         the median saving and the range of the rounds' savings.\n"
	"                         WHAT: pinned (pageable copies staged in pinned memory),\n"
	"                         async-copies (synchronous copies queued on their\n"
	"                         stream), no-redundant-sync (synchronisations that wait\n"
	"                         for nothing new dropped); comma-separated; or none (the\n"
	"                         plan unchanged: what the measurement itself adds)\n"
	"      --rounds N         with --what-if: N rounds (odd, 1 to 99; default 5) of\n"
	"                         one baseline and one changed replay each, after a\n"
	"                         discarded warm-up replay of each\n"
	"      --kernel-times FILE  kernel durations, name=microseconds per line or\n"
	"                         comma-separated, over those inferred from the capture\n"
	"      --dry-run          write the plan into replay.json, issue nothing\n"
	"  -o, --output DIR       write replay.json into DIR (default ./profile_output)\n"
	"  -v, --verbose          more messages\n"
	"  -h, --help             this text\n"
	"\n"
	"Exit status: 0 when every process was replayed, 1 on a runtime failure (not a\n"
	"capture, no CUDA runtime, a replayed call failed), 2 on bad usage.\n";

static int usage(const char *fmt, const char *arg)
{
	return gp_usage_error("replay", fmt, arg);
}

struct replay_opts {
	const char *path, *out_dir, *kernel_times;
	long pid; /* -1: every process */
	double speed;
	unsigned what;
	long rounds; /* 0: not given */
	bool dry_run;
};

static int parse(int argc, char **argv, struct replay_opts *o)
{
	enum { OPT_SPEED = 256, OPT_WHAT_IF, OPT_ROUNDS, OPT_KERNEL_TIMES, OPT_DRY_RUN };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "speed", required_argument, NULL, OPT_SPEED },
		{ "what-if", required_argument, NULL, OPT_WHAT_IF },
		{ "rounds", required_argument, NULL, OPT_ROUNDS },
		{ "kernel-times", required_argument, NULL, OPT_KERNEL_TIMES },
		{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
		{ "output", required_argument, NULL, 'o' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char errmsg[256], *end;
	int c;

	*o = (struct replay_opts){ .out_dir = "./profile_output", .pid = -1, .speed = 1.0 };
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":p:o:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			errno = 0;
			o->pid = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || o->pid <= 0 || o->pid > 4194304)
				return usage("--pid: '%s' is not a process id", optarg);
			break;
		case OPT_SPEED:
			errno = 0;
			o->speed = strtod(optarg, &end);
			if (errno || end == optarg || *end || !isfinite(o->speed) ||
			    o->speed <= 0 || o->speed > 1e6)
				return usage("--speed: '%s' is not a number above 0", optarg);
			break;
		case OPT_WHAT_IF:
			if (gp_whatif_parse(optarg, &o->what, errmsg, sizeof(errmsg)))
				return usage("%s", errmsg);
			break;
		case OPT_ROUNDS:
			errno = 0;
			o->rounds = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || o->rounds < 1 ||
			    o->rounds > GP_WHATIF_ROUNDS_MAX || !(o->rounds & 1))
				return usage("--rounds: '%s' is not an odd number from 1 to 99",
					     optarg);
			break;
		case OPT_KERNEL_TIMES:
			o->kernel_times = optarg;
			break;
		case OPT_DRY_RUN:
			o->dry_run = true;
			break;
		case 'o':
			if (!*optarg)
				return usage("--output: empty directory name%s", "");
			o->out_dir = optarg;
			break;
		default: {
			int rc = gp_cmd_common_option(c, "replay", usage_text, argv);

			if (rc != GP_CMD_GO_ON)
				return rc;
		}
		}
	}
	if ((c = gp_cmd_one_capture(argc, argv, "replay")) != GP_CMD_GO_ON)
		return c;
	if (o->dry_run && o->what)
		return usage("--dry-run issues nothing: --what-if needs a replay%s", "");
	if (o->rounds && !o->what)
		return usage("--rounds: rounds of what? (it goes with --what-if)%s", "");
	o->path = argv[optind];
	return -1;
}

static int load_kernel_times(const char *path, struct gp_kernel_times *kt)
{
	char errmsg[512], *text = NULL;
	size_t len = 0;
	FILE *f = fopen(path, "r");
	int rc;

	if (!f) {
		gp_err("--kernel-times %s: %s", path, strerror(errno));
		return -errno;
	}
	if (getdelim(&text, &len, '\0', f) < 0 && ferror(f)) {
		gp_err("--kernel-times %s: %s", path, strerror(errno));
		fclose(f);
		free(text);
		return -EIO;
	}
	fclose(f);
	rc = gp_kernel_times_parse(text ? text : "", kt, errmsg, sizeof(errmsg));
	if (rc)
		gp_err("--kernel-times %s: %s", path, errmsg);
	free(text);
	return rc;
}

int gp_cmd_replay(int argc, char **argv)
{
	struct replay_opts o;
	struct gp_kernel_times kt = { 0 };
	struct gp_rplan plan = { 0 };
	struct gp_replay_outcome *out = NULL;
	struct gp_cuda cu;
	size_t n = 0;
	char errmsg[1024];
	int status = parse(argc, argv, &o), rc;

	if (status >= 0)
		return status;
	status = GP_EXIT_FAILURE;
	if (o.kernel_times && load_kernel_times(o.kernel_times, &kt))
		return GP_EXIT_FAILURE;
	if ((rc = gp_replay_plan_file(o.path, o.kernel_times ? &kt : NULL, &plan, errmsg,
				      sizeof(errmsg)))) {
		gp_err("%s", errmsg);
		goto out;
	}
	if (o.pid >= 0 && !gp_rplan_process(&plan, (__u32)o.pid)) {
		gp_err("pid %ld is not in %s", o.pid, o.path);
		goto out;
	}
	if (!(out = calloc(plan.nprocs ? plan.nprocs : 1, sizeof(*out)))) {
		gp_err("out of memory");
		goto out;
	}
	for (size_t i = 0; i < plan.nprocs; i++)
		if ((o.pid < 0 && plan.procs[i]->nops) || plan.procs[i]->pid == (__u32)o.pid)
			out[n++] = (struct gp_replay_outcome){ .p = plan.procs[i], .what = o.what };
	if (!n) {
		gp_err("%s: no process in it made a GPU call to replay", o.path);
		goto out;
	}
	if (gp_prepare_out_dir(o.out_dir))
		goto out;
	if (!o.dry_run) {
		if (gp_cuda_open(&cu, errmsg, sizeof(errmsg))) {
			gp_err("%s", errmsg);
			goto out;
		}
		gp_info("replaying through %s", cu.rt_name);
		for (size_t i = 0; i < n; i++) { /* one process after the other, in this process */
			out[i].stats.rounds =
				o.rounds ? (unsigned)o.rounds : GP_WHATIF_ROUNDS_DEFAULT;
			rc = o.what ? gp_whatif_measure(&cu, out[i].p, o.speed, o.what,
							&out[i].stats, &out[i].base,
							&out[i].changed, errmsg, sizeof(errmsg))
				    : gp_replay_run(&cu, out[i].p, o.speed, 0, &out[i].base, errmsg,
						    sizeof(errmsg));
			if (rc) {
				gp_err("%s", errmsg);
				goto out;
			}
			out[i].ran = true;
		}
		gp_cuda_close(&cu);
	}
	gp_replay_print(stdout, out, n);
	if (gp_replay_report_write(o.out_dir, o.path, o.speed, o.what, out, n, errmsg,
				   sizeof(errmsg))) {
		gp_err("%s", errmsg);
		goto out;
	}
	status = GP_EXIT_OK;
	for (size_t i = 0; i < n; i++) {
		const struct gp_replay_outcome *oi = &out[i];

		if (oi->what && oi->stats.errors) { /* every replay of every round counts */
			gp_err("pid %u: %llu replayed calls failed over %u rounds and the warm-up; first: %s",
			       oi->p->pid, (unsigned long long)oi->stats.errors, oi->stats.rounds,
			       oi->stats.first_error);
			status = GP_EXIT_FAILURE;
		} else if (!oi->what && oi->base.errors) {
			gp_err("pid %u: %llu replayed calls failed; first: %s", oi->p->pid,
			       (unsigned long long)oi->base.errors, oi->base.first_error);
			status = GP_EXIT_FAILURE;
		}
	}
out:
	for (size_t i = 0; out && i < n; i++) {
		gp_replay_result_release(&out[i].base);
		gp_replay_result_release(&out[i].changed);
	}
	free(out);
	gp_rplan_release(&plan);
	gp_kernel_times_release(&kt);
	return status;
}
