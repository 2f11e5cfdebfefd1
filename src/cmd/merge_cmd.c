/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * merge_cmd.c — `gpuprobed merge CAPTURE... [-o DIR]`: the captures of
 * several sessions (one per node, or per group of ranks) as one report.
 * Each capture is loaded into a model of its own (its pids and resolver
 * answers are its host's), with its timeline written aside; their clocks
 * are put on one axis (model/clock_align.c); then their processes move
 * into one model, each with its host and clock offset, whose reports are
 * written as `gpuprobed report` writes them, with "merge" saying what was
 * merged, how the clocks were aligned, and what a reader must know.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/capture_open.h"
#include "cmd/cli.h"
#include "cmd/commands.h"
#include "log.h"
#include "model/clock_align.h"
#include "report/report_files.h"
#include "timeline/timeline_session.h"
#include "timeline/trace_merge.h"

static const char usage_text[] =
	"Usage: gpuprobed merge CAPTURE... [-o DIR] [--no-timeline] [-v]\n"
	"\n"
	"One report of a job traced by several gpuprobed sessions (one per node, or per\n"
	"group of ranks): report.json, report.md and trace.json over every process of\n"
	"every capture, each with its host; NCCL communicators joined across them by\n"
	"comm_id (who entered each collective last, and how late). The captures' clocks\n"
	"are aligned on the CLOCK_REALTIME relation each recorded, then refined from the\n"
	"collectives they share; report.json \"merge\" gives the offsets used and their\n"
	"uncertainty. Captures of unrelated jobs merge with a note; a capture cut short\n"
	"merges what it holds; the same capture given twice is refused.\n"
	"\n"
	"  -o, --output DIR   write into DIR (default ./profile_output)\n"
	"      --no-timeline  do not write trace.json\n"
	"  -v, --verbose      more messages\n"
	"  -h, --help         this text\n"
	"\n"
	"Exit status: 0 when the reports were written, 1 when a file is not a capture\n"
	"this gpuprobed reads or a report could not be written, 2 on bad usage (the same\n"
	"capture twice included).\n";

#define PARTS_DIR ".merge-parts" /* the captures' own timelines, inside DIR while merging */

struct part {
	const char *path;
	struct gp_capture_reader *r;
	struct gp_answers *as;
	struct gp_model *m;
	char host[sizeof(((struct gp_cap_header *)0)->hostname) + 1];
	char trace_dir[PATH_MAX];
	bool traced; /* its trace.json was written */
};

static int usage(const char *fmt, const char *arg)
{
	return gp_usage_error("merge", fmt, arg);
}

/* Two files hold the same session: same host, same start on both of its clocks. */
static bool same_session(const struct gp_cap_header *a, const struct gp_cap_header *b)
{
	return a->start_mono_ns == b->start_mono_ns &&
	       a->start_boottime_ns == b->start_boottime_ns &&
	       !strncmp(a->hostname, b->hostname, sizeof(a->hostname));
}

static void remove_parts(const char *out_dir, size_t n)
{
	char path[PATH_MAX];

	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s/%zu/%s", out_dir, PARTS_DIR, i,
			 GP_TIMELINE_FILE);
		unlink(path);
		snprintf(path, sizeof(path), "%s/%s/%zu", out_dir, PARTS_DIR, i);
		rmdir(path);
	}
	snprintf(path, sizeof(path), "%s/%s", out_dir, PARTS_DIR);
	rmdir(path);
}

/* Part i being loaded: where its timeline goes, and the timeline. */
struct part_load {
	struct part *pt;
	size_t i;
	const char *out_dir;
	bool timeline;
	struct gp_timeline *tl;
};

/* Its model made: its timeline opened beside the others, as its observer. */
static int part_ready(void *ctx, struct gp_model *m)
{
	struct part_load *pl = ctx;
	struct part *pt = pl->pt;
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s/%s", pl->out_dir, PARTS_DIR);
	mkdir(dir, 0755);
	if ((size_t)snprintf(pt->trace_dir, sizeof(pt->trace_dir), "%s/%zu", dir, pl->i) >=
	    sizeof(pt->trace_dir))
		pl->timeline = false;
	if (pl->timeline && !mkdir(pt->trace_dir, 0755))
		pl->tl = gp_timeline_session_open(/* one file each: the merge reads it whole */
						  pt->trace_dir,
						  (struct gp_timeline_opts){
							  .file_bytes_max = GP_TIMELINE_ONE_FILE },
						  m);
	return 0;
}

/* Loads part i (its timeline beside it when wanted). 0, or -errno when nothing could be. */
static int load_part(struct part *pt, size_t i, const char *out_dir, bool timeline)
{
	const struct gp_cap_header *h = gp_capture_header(pt->r);
	struct part_load pl = { .pt = pt, .i = i, .out_dir = out_dir, .timeline = timeline };
	const struct gp_capture_open_opts opts = { .reader = pt->r,
						   .ctx = &pl,
						   .ready = part_ready,
						   .voice = GP_CAPTURE_REPORTING,
						   .finish = true };
	struct gp_capture_model cm;
	int err = gp_capture_open_model(pt->path, &opts, &cm, NULL, 0);

	pt->as = cm.answers; /* the part's, freed with it */
	pt->m = cm.model;
	if (err)
		return err;
	pt->traced =
		pl.tl && !gp_timeline_session_close(pl.tl, pt->trace_dir,
						    GP_TIMELINE_DEFAULT_MAX_EVENTS, pt->m, NULL);
	memcpy(pt->host, h->hostname, sizeof(h->hostname));
	if (pt->m->session.hostname && *pt->m->session.hostname)
		snprintf(pt->host, sizeof(pt->host), "%s", pt->m->session.hostname);
	return 0;
}

static char *note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *note(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	if (s)
		gp_warn("merge: %s", s);
	return s;
}

/* What a reader must know: old captures, cut ones, unrelated jobs. */
static size_t notes_of(const struct part *pts, const struct gp_merge_capture *mc, size_t n,
		       char **notes)
{
	size_t k = 0;
	bool unrelated = false;

	for (size_t i = 0; i < n; i++) {
		const struct gp_cap_header *h = gp_capture_header(pts[i].r);

		if (!h->start_realtime_ns || !h->start_mono_ns)
			notes[k++] = note(
				"%s: no CLOCK_REALTIME relation recorded (an older capture): its clock is "
				"aligned only by the collectives it shares with the others, if any",
				pts[i].path);
		if (!mc[i].complete)
			notes[k++] = note(
				"%s was cut (%s): merged what it holds; what it lost after that point is "
				"missing from every total of its processes",
				pts[i].path, mc[i].cut);
		if (mc[i].corrupt_chunks)
			notes[k++] =
				note("%s: %" PRIu64
				     " corrupt chunk(s) skipped (%s): their operations are missing",
				     pts[i].path, (uint64_t)mc[i].corrupt_chunks, mc[i].corruption);
		if (i && strcmp(mc[i].method, "collectives"))
			unrelated = true;
	}
	if (unrelated) {
		char list[1024] = "";
		size_t len = 0;

		for (size_t i = 1; i < n; i++)
			if (strcmp(mc[i].method, "collectives") && len < sizeof(list))
				len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
							len ? ", " : "", pts[i].path);
		notes[k++] = note(
			"%s share%s no NCCL communicator (with enough collectives) with %s: unrelated "
			"jobs, or ranks of different communicators; their clocks are aligned by the "
			"recorded CLOCK_REALTIME only (uncertainty unknown: as good as the hosts' time "
			"synchronisation)",
			list, strchr(list, ',') ? "" : "s", pts[0].path);
	}
	return k;
}

/* The merged report's source: every file read, their operations, chunks and damage added up. */
static int merged_source(struct gp_model *m, const struct part *pts,
			 const struct gp_merge_capture *mc, size_t n)
{
	struct gp_report_source src = { .kind = "merge", .complete = true };
	char *files = NULL;
	size_t len = 1;

	for (size_t i = 0; i < n; i++)
		len += strlen(pts[i].path) + 2;
	if (!(files = calloc(1, len)))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (i)
			strcat(files, ", ");
		strcat(files, pts[i].path);
		src.ops += mc[i].ops;
		src.chunks += mc[i].chunks;
		src.corrupt_chunks += mc[i].corrupt_chunks;
		src.complete = src.complete && mc[i].complete;
		if (!src.cut && mc[i].cut)
			src.cut = mc[i].cut;
		if (!src.corruption && mc[i].corruption)
			src.corruption = mc[i].corruption;
	}
	src.capture_file = files; /* every file read */
	gp_model_set_source(m, &src);
	free(files);
	return 0;
}

/* The captures' timelines joined into out_dir's, each shifted by its clock offset. */
static int merged_timeline(const char *out_dir, const struct part *pts,
			   const struct gp_merge_capture *mc, size_t n)
{
	struct gp_trace_part *tp = calloc(n, sizeof(*tp));
	size_t k = 0;
	int err = tp ? 0 : -ENOMEM;

	for (size_t i = 0; i < n && !err; i++) {
		char *p = NULL;

		if (!pts[i].traced)
			continue;
		if (asprintf(&p, "%s/%s", pts[i].trace_dir, GP_TIMELINE_FILE) < 0)
			err = -ENOMEM;
		else
			tp[k++] = (struct gp_trace_part){ .path = p,
							  .host = pts[i].host,
							  .offset_ns = mc[i].offset_ns };
	}
	if (!err)
		err = gp_trace_merge(out_dir, tp, k);
	for (size_t i = 0; i < k; i++)
		free((char *)tp[i].path);
	free(tp);
	return err;
}

static int merge(struct part *pts, size_t n, const char *out_dir, bool timeline,
		 const char *cmdline)
{
	struct gp_merge_capture *mc = calloc(n, sizeof(*mc));
	struct gp_clock_in *in = calloc(n, sizeof(*in));
	char **notes = calloc(3 * n + 1, sizeof(*notes)), hosts[1024] = "";
	struct gp_model *m = gp_model_new(NULL);
	size_t nnotes = 0, hl = 0;
	__u64 start = 0, end = 0;
	int err = -ENOMEM;

	if (!mc || !in || !notes || !m)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct gp_cap_header *h = gp_capture_header(pts[i].r);
		const struct gp_report_source *src = &pts[i].m->source;

		in[i] = (struct gp_clock_in){
			.m = pts[i].m,
			.realtime_known = h->start_realtime_ns && h->start_mono_ns,
			.wall_minus_mono_ns = (__s64)(h->start_realtime_ns - h->start_mono_ns)
		};
		mc[i] = (struct gp_merge_capture){ .path = pts[i].path,
						   .host = pts[i].host,
						   .ops = src->ops,
						   .chunks = src->chunks,
						   .corrupt_chunks = src->corrupt_chunks,
						   .processes = pts[i].m->nprocs,
						   .complete = src->complete,
						   .cut = src->cut,
						   .corruption = src->corruption };
	}
	if ((err = gp_clock_align(in, n, mc)))
		goto out;
	nnotes = notes_of(pts, mc, n, notes);
	for (size_t i = 0; i < n; i++) {
		const struct gp_model *pm = pts[i].m;
		__u64 s = pm->session.start_mono_ns + (__u64)mc[i].offset_ns;
		__u64 e = (pm->session.end_mono_ns ? pm->session.end_mono_ns : pm->last_event_ns) +
			  (__u64)mc[i].offset_ns;

		start = !i || s < start ? s : start;
		end = e > end ? e : end;
		if (!strstr(hosts, pts[i].host) && hl < sizeof(hosts))
			hl += (size_t)snprintf(hosts + hl, sizeof(hosts) - hl, "%s%s",
					       hl ? ", " : "", pts[i].host);
		gp_info("merge: %s (host %s): clock offset %+" PRId64 " ns by %s", pts[i].path,
			pts[i].host, (int64_t)mc[i].offset_ns, mc[i].method);
	}
	gp_model_set_session(
		m, &(struct gp_session_info){
			   .tool_version = GP_VERSION,
			   .command_line = cmdline,
			   .mode = "merge",
			   .hostname = hosts,
			   .kernel_release = pts[0].m->session.kernel_release,
			   .start_mono_ns = start,
			   .start_realtime_ns = in[0].realtime_known
							? start + (__u64)in[0].wall_minus_mono_ns
							: 0 });
	gp_model_set_session_end(m, end);
	for (size_t i = 0; i < n; i++)
		if ((err = gp_model_adopt(m, pts[i].m, pts[i].host, mc[i].offset_ns)))
			goto out;
	if ((err = merged_source(m, pts, mc, n)))
		goto out;
	struct gp_merge_info info = { .captures = mc,
				      .ncaptures = n,
				      .notes = (const char *const *)notes,
				      .nnotes = nnotes };

	gp_model_set_merge(m, &info);
	err = 0;
	if (timeline)
		err = merged_timeline(out_dir, pts, mc, n);
	else
		gp_timeline_remove_stale(out_dir);
	{
		int e = gp_write_reports(m, out_dir);

		err = err ? err : e;
	}
	gp_model_set_merge(m, NULL);
out:
	if (err == -ENOMEM)
		gp_err("merge: out of memory");
	gp_model_free(m);
	for (size_t i = 0; notes && i < nnotes; i++)
		free(notes[i]);
	free(notes);
	free(in);
	free(mc);
	return err;
}

int gp_cmd_merge(int argc, char **argv)
{
	enum { OPT_NO_TIMELINE = 256 };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "no-timeline", no_argument, NULL, OPT_NO_TIMELINE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *out_dir = "./profile_output";
	struct part *pts = NULL;
	char errmsg[4200], *cmdline = NULL;
	size_t n = 0, len = 0;
	bool timeline = true;
	int c, status = GP_EXIT_FAILURE;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (!*optarg)
				return usage("--output: empty directory name%s", "");
			out_dir = optarg;
			break;
		case OPT_NO_TIMELINE:
			timeline = false;
			break;
		default: {
			int rc = gp_cmd_common_option(c, "merge", usage_text, argv);

			if (rc != GP_CMD_GO_ON)
				return rc;
		}
		}
	}
	if (optind >= argc)
		return usage("no capture file given%s", "");
	n = (size_t)(argc - optind);
	pts = calloc(n, sizeof(*pts));
	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	cmdline = calloc(1, len + sizeof("gpuprobed "));
	if (!pts || !cmdline) {
		gp_err("out of memory");
		goto out;
	}
	strcpy(cmdline, "gpuprobed");
	for (int i = 0; i < argc; i++)
		strcat(strcat(cmdline, " "), argv[i]);
	for (size_t i = 0; i < n; i++) {
		pts[i].path = argv[optind + (int)i];
		pts[i].r = gp_capture_open(pts[i].path, errmsg, sizeof(errmsg));
		if (!pts[i].r) {
			gp_err("%s", errmsg);
			goto out;
		}
		for (size_t j = 0; j < i; j++)
			if (same_session(gp_capture_header(pts[j].r),
					 gp_capture_header(pts[i].r))) {
				char what[2 * PATH_MAX + 128];

				snprintf(
					what, sizeof(what),
					"'%s' and '%s' are the same capture (one session of host %.64s): "
					"give each capture once",
					pts[j].path, pts[i].path,
					gp_capture_header(pts[i].r)->hostname);
				status = usage("%s", what);
				goto out;
			}
	}
	if (gp_prepare_out_dir(out_dir))
		goto out;
	for (size_t i = 0; i < n; i++)
		if (load_part(&pts[i], i, out_dir, timeline)) {
			gp_err("out of memory");
			goto out;
		}
	if (!merge(pts, n, out_dir, timeline, cmdline))
		status = GP_EXIT_OK;
out:
	if (pts)
		remove_parts(out_dir, n);
	for (size_t i = 0; pts && i < n; i++) {
		gp_model_free(pts[i].m);
		gp_answers_free(pts[i].as);
		gp_capture_close(pts[i].r);
	}
	free(pts);
	free(cmdline);
	return status;
}
