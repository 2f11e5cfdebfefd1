/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * md_out.h — what every piece of report.md uses: the document's fields read
 * with a default when absent or null, numbers with thousands separators,
 * times since the session started, tables printed and freed.
 */
#ifndef GP_MD_OUT_H
#define GP_MD_OUT_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "text/md_table.h"

json_int_t gp_md_int(const json_t *o, const char *key);	 /* 0 when absent or null */
const char *gp_md_str(const json_t *o, const char *key); /* "" when absent or null */
bool gp_md_bool(const json_t *o, const char *key);
char *gp_md_n(char *buf, const json_t *o,
	      const char *key); /* gp_md_int with thousands separators */
/* "+1.234567 s" since the session start (or the raw monotonic ns when unknown). */
void gp_md_rel_time(char *buf, size_t len, const json_t *doc, json_int_t mono_ns);
/* Prints and frees t; -ENOMEM when t is NULL or failed. */
int gp_md_flush_table(struct gp_md_table *t, FILE *out);

#endif /* GP_MD_OUT_H */
