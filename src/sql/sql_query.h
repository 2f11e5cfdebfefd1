/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sql_query.h — SQL run over an exported capture (read-only) and its
 * result printed: an aligned table, CSV (RFC 4180) or JSON (an array of
 * objects per statement); and the export cache `gpuprobed query` keeps
 * beside a capture.
 */
#ifndef GP_SQL_QUERY_H
#define GP_SQL_QUERY_H

#include <stdio.h>

enum gp_sql_format { GP_SQL_TABLE, GP_SQL_CSV, GP_SQL_JSON };

/*
 * Runs every statement of sql over the database at db_path, opened read-only,
 * printing each result to out. 0; -EINVAL after SQLite's own message on
 * stderr (a bad statement); -errno otherwise.
 */
int gp_sql_query(const char *db_path, const char *sql, enum gp_sql_format fmt, FILE *out);

/* Whether path starts like an SQLite database (1), not (0), or -errno. */
int gp_sql_is_database(const char *path);

/*
 * The database for a capture: CAPTURE.sqlite beside it, exported now
 * unless one is there, newer than the capture and made from it at its
 * present size. *db_path is malloc'ed. 0, or -errno after a message.
 */
int gp_sql_cached_export(const char *cap_path, char **db_path);

#endif /* GP_SQL_QUERY_H */
