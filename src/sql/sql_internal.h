/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sql_internal.h — what the files of src/sql share while one export runs:
 * the database, its prepared statements, the ids given to the model's rows
 * (kernels, stacks) at first sight, the interned strings.
 */
#ifndef GP_SQL_INTERNAL_H
#define GP_SQL_INTERNAL_H

#include <sqlite3.h>
#include <stdbool.h>
#include <linux/types.h>

#include "model/view.h"

/* A string interned in the strings table. */
struct gp_sql_str {
	struct gp_sql_str *next; /* hash chain */
	char *s;
	__s64 id;
};

/* An inner call waiting for its outer call (the model's rule: nesting.c). */
struct gp_sql_waiting {
	struct gp_api_call c;
};

struct gp_sql_exp {
	sqlite3 *db;
	const struct gp_model *m;
	sqlite3_stmt *ins_call, *ins_xfer, *ins_alloc, *free_alloc, *ins_nccl, *ins_slice, *ins_str;
	__s64 next_call;        /* id of the next calls row */
	__s64 next_kernel, next_stack, next_str;
	struct gp_u64map kernel_ids; /* struct gp_kernel * -> id */
	struct gp_u64map stack_ids;  /* struct gp_stack * -> id */
	struct gp_u64map strs;       /* hash -> struct gp_sql_str chain */
	struct gp_u64map live;       /* hash(pid, ptr) -> allocation's call id + 1 (as a pointer value) */
	struct gp_sql_waiting *waiting; /* inner calls, oldest first */
	size_t nwaiting, waiting_cap;
	struct { int fam; __s32 code; } *errs;
	size_t nerrs, errs_cap;
	/* the outermost call being ingested, as the model's observer saw it */
	bool seen;
	struct gp_call_view v;
	struct gp_op op;
	int failed;             /* first SQLite error, as -errno */
};

/* sql_schema.c */
int gp_sql_schema_create(sqlite3 *db);   /* tables */
int gp_sql_schema_finish(sqlite3 *db);   /* indices, views */

/* sql_model_rows.c: the tables written from the model at the capture's end */
int gp_sql_model_rows(struct gp_sql_exp *x);

/* sqlite_export.c */
__s64 gp_sql_intern(struct gp_sql_exp *x, const char *s); /* 0 for NULL (a NULL column), -1 on failure */
__s64 gp_sql_id_of(struct gp_sql_exp *x, struct gp_u64map *map, const void *row, __s64 *next);
int gp_sql_exec(sqlite3 *db, const char *sql);
int gp_sql_step(struct gp_sql_exp *x, sqlite3_stmt *st); /* steps and resets: bind every parameter each time */
void gp_sql_bind_opt(sqlite3_stmt *st, int i, bool has, __s64 v); /* v or NULL */
void gp_sql_bind_text(sqlite3_stmt *st, int i, const char *s);    /* s or NULL */
sqlite3_stmt *gp_sql_prepare(sqlite3 *db, const char *sql);

#endif /* GP_SQL_INTERNAL_H */
