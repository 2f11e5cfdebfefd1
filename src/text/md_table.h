/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * md_table.h — Markdown pipe tables with padded columns, so that report.md
 * reads as well in a terminal as rendered. Cells are added left to right
 * with printf formats; '|' in a cell is escaped.
 */
#ifndef GP_MD_TABLE_H
#define GP_MD_TABLE_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>

struct gp_md_table;

/* align: one char per column, 'l' or 'r'; head: ncols titles. NULL + errno. */
struct gp_md_table *gp_md_table_new(unsigned ncols, const char *const *head, const char *align);
void gp_md_table_free(struct gp_md_table *t);

/* Appends a cell to the current row; a row is complete after ncols cells. */
void gp_md_table_cell(struct gp_md_table *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Prints the table (nothing if it has no rows and print_empty is false). 0 or -ENOMEM. */
int gp_md_table_print(const struct gp_md_table *t, FILE *out);
size_t gp_md_table_rows(const struct gp_md_table *t);

/* "1,234,567" into buf (at least 32 bytes); returns buf. */
char *gp_md_num(char *buf, __u64 v);
char *gp_md_snum(char *buf, long long v);
/* "4 KiB", "1.5 MiB", "17 B": binary units, at most one decimal; buf >= 32 bytes. */
char *gp_md_bytes(char *buf, __u64 v);

#endif /* GP_MD_TABLE_H */
