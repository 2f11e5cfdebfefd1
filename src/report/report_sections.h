/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_sections.h — the registry of a process's report sections: for
 * each, its member of processes[] in report.json (in the document's order)
 * and how report.md renders it (in report.md's order). Adding a section to
 * the report is adding a row (report_sections.c).
 */
#ifndef GP_REPORT_SECTIONS_H
#define GP_REPORT_SECTIONS_H

#include <stdio.h>

#include <jansson.h>
#include <linux/types.h>

struct gp_doc;
struct gp_process;

struct gp_report_section {
	const char *key; /* the member of processes[]; NULL: report.md only, from other members */
	/* the member's value ([from, to): the process's traced window); NULL with key NULL */
	json_t *(*build)(struct gp_doc *d, const struct gp_process *p, __u64 from, __u64 to);
	/* report.md's section; NULL: in report.json only (or shown by another section) */
	int (*render)(const json_t *doc, const json_t *p, FILE *out);
	unsigned md_order; /* report.md renders sections by this, 1 first (0: not rendered) */
};

extern const struct gp_report_section gp_report_sections[];
extern const size_t gp_report_nsections;

/* The section report.md renders after the one of *order (0: the first); NULL after the last. */
const struct gp_report_section *gp_next_md_section(unsigned *order);

#endif
