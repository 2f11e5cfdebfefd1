/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* report_files.c — report.json and report.md into a directory (see report_files.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "report_files.h"

typedef int (*report_writer)(const struct gp_model *m, FILE *out);

static int write_one(const struct gp_model *m, const char *dir, const char *name,
		     report_writer writer)
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
	err = writer(m, f);
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

int gp_write_reports(const struct gp_model *m, const char *dir)
{
	int err = write_one(m, dir, "report.json", gp_report_json_write);
	int err2 = write_one(m, dir, "report.md", gp_report_md_write);

	if (!err && !err2)
		gp_notice("report: %s/report.md (and report.json)", dir);
	return err ? err : err2;
}
