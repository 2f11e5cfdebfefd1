/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_files.h — write every report of a model into a directory, each file
 * atomically (written beside, then renamed), so a reader never sees half a
 * report and a failed write never destroys the previous one.
 */
#ifndef GP_REPORT_FILES_H
#define GP_REPORT_FILES_H

#include "model/model.h"

/* Creates dir (and its parents) and checks it is writable. 0, or -errno after one message. */
int gp_prepare_out_dir(const char *dir);

/* 0, or -errno after one message naming the file and the cause. */
int gp_write_reports(const struct gp_model *m, const char *dir);

#endif
