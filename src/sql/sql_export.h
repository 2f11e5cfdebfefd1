/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sql_export.h — a capture as an SQLite database (docs/sql.md): every
 * record of the capture as rows, the model's tables at its end, indices and
 * the views that reproduce report.json's tables. The one service behind
 * `gpuprobed export`, `gpuprobed query` (its cache) and a session's --sqlite.
 */
#ifndef GP_SQL_EXPORT_H
#define GP_SQL_EXPORT_H

#include <stdbool.h>
#include <linux/types.h>

/* meta's schema_version: 2 added processes' ns_pid, container and pod columns; 3 the nsys-style
 * views; 4 recommendations and recommendation_sites */
#define GP_SQL_SCHEMA_VERSION 4

struct gp_sql_export_stats {
	__u64 ops;	      /* operations read from the capture */
	__u64 calls;	      /* rows of calls */
	__u64 malformed;      /* operations that did not decode: skipped */
	__u64 corrupt_chunks; /* chunks the reader skipped */
	bool complete;	      /* the capture's end was read */
};

struct gp_sql_export_opts {
	bool force;   /* replace an existing file */
	bool indices; /* index calls by time, process and thread, API, kernel, outer call */
};

/*
 * Exports the capture at cap_path into out_path, written beside it under a
 * temporary name and renamed at the end (an interrupted export leaves no
 * half file). An existing out_path is replaced only with o->force. What the
 * capture lacks (cut, corrupt chunks, operations that do not decode) is said
 * on stderr and in the database's meta table. 0, -EEXIST (out_path exists,
 * no force), or -errno after a message.
 */
int gp_sql_export(const char *cap_path, const char *out_path, const struct gp_sql_export_opts *o,
		  struct gp_sql_export_stats *st);

#endif /* GP_SQL_EXPORT_H */
