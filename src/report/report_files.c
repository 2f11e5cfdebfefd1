/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_files.c — report.json, report.md and the call-stack files (folded
 * stacks per weight, flamegraph.svg, speedscope.json, profile.pb.gz) into a directory (see
 * report_files.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "stack_formats/stack_paths.h"
#include "report/report.h"
#include "report/report_files.h"

/* Writes one file's content; ctx is the writer's own. */
typedef int (*file_writer)(const void *ctx, FILE *out);

static int write_one(const void *ctx, const char *dir, const char *name, file_writer writer)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	FILE *f;
	int err;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	f = fopen(tmp, "we");
	if (!f) {
		err = -errno;
		gp_err("write %s: %s", path, strerror(-err));
		return err;
	}
	err = writer(ctx, f);
	if (fflush(f) || ferror(f))
		err = -(errno ? errno : EIO);
	if (fsync(fileno(f)) && !err)
		err = -errno;
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		gp_err("write %s: %s", path, strerror(-err));
		unlink(tmp);
	}
	return err;
}

/* The stack files, each written from one set of paths, or from the model (write_model). */
struct paths_file {
	const char *name;
	enum gp_weight weight;
	int (*write)(const struct gp_paths *p, enum gp_weight w, FILE *out);
	int (*write_model)(const struct gp_model *m, FILE *out);
};

static int write_svg(const struct gp_paths *p, enum gp_weight w, FILE *out)
{
	return gp_flamegraph_svg_write(p, w, "GPU work by call stack (calls)", out);
}

static int write_speedscope(const struct gp_paths *p, enum gp_weight w, FILE *out)
{
	return gp_speedscope_write(p, "gpuprobed: GPU work by call stack", out);
}

static const struct paths_file stack_files[] = {
	{ "stacks.folded", GP_W_CALLS, gp_folded_write },
	{ "stacks.bytes.folded", GP_W_BYTES, gp_folded_write },
	{ "stacks.host_ns.folded", GP_W_HOST_NS, gp_folded_write },
	{ "flamegraph.svg", GP_W_CALLS, write_svg },
	{ "speedscope.json", GP_W_CALLS, write_speedscope },
	{ "profile.pb.gz", GP_W_CALLS, NULL, gp_pprof_write },
};

struct paths_job {
	const struct gp_model *model;
	const struct gp_paths *paths;
	const struct paths_file *file;
};

static int paths_writer(const void *ctx, FILE *out)
{
	const struct paths_job *job = ctx;

	if (job->file->write_model)
		return job->file->write_model(job->model, out);
	return job->file->write(job->paths, job->file->weight, out);
}

static int json_writer(const void *doc, FILE *out)
{
	return gp_report_json_dump(doc, out);
}

static int gp_md_writer(const void *doc, FILE *out)
{
	return gp_report_md_render(doc, out);
}

/* Writes the stack files, or removes those of an earlier run when stacks were off. */
static int write_stack_files(const struct gp_model *m, const char *dir)
{
	struct gp_paths paths;
	int err = 0;

	if (!gp_model_stacks_captured(m)) {
		for (size_t i = 0; i < sizeof(stack_files) / sizeof(stack_files[0]); i++) {
			char path[PATH_MAX];

			snprintf(path, sizeof(path), "%s/%s", dir, stack_files[i].name);
			unlink(path); /* not this session's: they would pass for it */
		}
		return 0;
	}
	err = gp_paths_from_model(m, &paths);
	if (err) {
		gp_err("call stacks (stacks*.folded, flamegraph.svg, speedscope.json, profile.pb.gz not "
		       "written): %s",
		       strerror(-err));
		return err;
	}
	for (size_t i = 0; i < sizeof(stack_files) / sizeof(stack_files[0]); i++) {
		struct paths_job job = { .model = m, .paths = &paths, .file = &stack_files[i] };
		int e = write_one(&job, dir, stack_files[i].name, paths_writer);

		if (!err)
			err = e;
	}
	gp_paths_release(&paths);
	return err;
}

int gp_write_reports(const struct gp_model *m, const char *dir)
{
	json_t *doc = gp_report_doc(m); /* once, for both */
	int err = doc ? write_one(doc, dir, "report.json", json_writer) : -(errno ? errno : ENOMEM);
	int err2 = doc ? write_one(doc, dir, "report.md", gp_md_writer) : err;
	int err3 = write_stack_files(m, dir);

	char trace[PATH_MAX], trace_files[64];

	snprintf(trace, sizeof(trace), "%s/trace.json",
		 dir); /* the timeline, closed before the reports */
	if (m->session.timeline_files > 1)
		snprintf(trace_files, sizeof(trace_files), ", trace.json to trace.%u.json",
			 m->session.timeline_files - 1);
	else
		snprintf(trace_files, sizeof(trace_files), "%s",
			 access(trace, F_OK) ? "" : ", trace.json");
	if (!err && !err2)
		gp_notice(
			"report: %s/report.md (and report.json%s%s)", dir, trace_files,
			gp_model_stacks_captured(m)
				? ", flamegraph.svg, speedscope.json, stacks*.folded, profile.pb.gz"
				: "");
	if (!doc)
		gp_err("report %s/report.json, report.md: %s", dir, strerror(-err));
	json_decref(doc);
	return err ? err : err2 ? err2 : err3;
}

/* Output directory: created if missing, and proven writable before we attach. */
int gp_prepare_out_dir(const char *dir)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	size_t len;
	int fd;

	len = (size_t)snprintf(path, sizeof(path), "%s", dir);
	if (len >= sizeof(path)) {
		gp_err("output directory %s: name too long", dir);
		return -ENAMETOOLONG;
	}
	/* mkdir -p */
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST) {
			gp_err("output directory %s: cannot create %s: %s", dir, path,
			       strerror(errno));
			return -errno;
		}
		*p = '/';
	}
	if (mkdir(path, 0755) && errno != EEXIST) {
		gp_err("output directory %s: %s", dir, strerror(errno));
		return -errno;
	}
	snprintf(tmp, sizeof(tmp), "%s/.gpuprobed-write-test-XXXXXX", dir);
	fd = mkstemp(tmp);
	if (fd < 0) {
		gp_err("output directory %s: not writable: %s", dir, strerror(errno));
		return -errno;
	}
	close(fd);
	unlink(tmp);
	return 0;
}
