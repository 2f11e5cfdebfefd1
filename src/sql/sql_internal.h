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

/* A column's value in a buffered row: NULL (zeroed), an integer or a static text. */
enum { GP_SQL_NULL, GP_SQL_INT, GP_SQL_TEXT };

struct gp_sql_val {
	union {
		__s64 i;
		const char *s;
	};
	int kind;
};

/*
 * The rows of one table buffered and written GP_SQL_BATCH at a time by one
 * multi-row INSERT (sql_rows.c), by the writer thread while it runs.
 */
#define GP_SQL_BATCH 64

struct gp_sql_chunk;
struct gp_sql_writer;

struct gp_sql_rows {
	const char *table;	  /* for messages */
	sqlite3_stmt *one, *many; /* a row; GP_SQL_BATCH rows (NULL: one statement a row) */
	int ncols, cap;		  /* rows per chunk: GP_SQL_BATCH, or 1 */
	/*
	 * Column 1 is the table's INTEGER PRIMARY KEY, its value kept in the row
	 * but bound as NULL: SQLite gives the next rowid, which appends without
	 * the search that a given one costs, and which is that value because the
	 * rows are written in its order (checked after each chunk).
	 */
	bool auto_id;
	struct gp_sql_chunk *cur; /* the rows being filled */
	struct gp_sql_val *
		prev; /* the last full batch's values: what many's parameters hold once it is written */
};

struct gp_sql_exp {
	sqlite3 *db;
	const struct gp_model *m;
	sqlite3_stmt *ins_str;
	struct gp_sql_rows calls, cpu, xfers, slices, allocs, frees, nccl; /* cpu: call_cpu */
	struct gp_sql_writer *writer; /* writes the rows while the records are read, or NULL */
	__s64 next_call;	      /* id of the next calls row */
	__s64 next_kernel, next_stack, next_str;
	struct gp_u64map kernel_ids; /* struct gp_kernel * -> id */
	struct gp_u64map stack_ids;  /* struct gp_stack * -> id */
	struct gp_u64map strs;	     /* hash -> struct gp_sql_str chain */
	struct gp_u64map live; /* hash(pid, ptr) -> allocation's call id + 1 (as a pointer value) */
	struct gp_sql_waiting *waiting; /* inner calls, oldest first */
	size_t nwaiting, waiting_cap;
	struct {
		int fam;
		__s32 code;
	} * errs;
	size_t nerrs, errs_cap;
	/* the outermost call being ingested, as the model's observer saw it */
	bool seen;
	struct gp_call_view v;
	struct gp_op op;
	int failed; /* first SQLite error, as -errno */
};

/* sql_schema.c */
/* tables (indices: and the time index of calls); after the rows, the other indices and the views */
int gp_sql_schema_create(sqlite3 *db, bool indices);
int gp_sql_schema_finish(sqlite3 *db, bool indices);
/* The views with Nsight Systems' names and columns (sql_nsys_views.c), after the rows. */
int gp_sql_nsys_views(sqlite3 *db);

/* sql_model_rows.c: the tables written from the model at the capture's end */
int gp_sql_model_rows(struct gp_sql_exp *x);

/* sql_findings.c: the recommendations (analysis/'s findings), at the capture's end too */
int gp_sql_findings_rows(struct gp_sql_exp *x);

/* sqlite_export.c */
__s64 gp_sql_intern(struct gp_sql_exp *x,
		    const char *s); /* 0 for NULL (a NULL column), -1 on failure */
__s64 gp_sql_id_of(struct gp_sql_exp *x, struct gp_u64map *map, const void *row, __s64 *next);
int gp_sql_exec(sqlite3 *db, const char *sql);
int gp_sql_step(struct gp_sql_exp *x,
		sqlite3_stmt *st); /* steps and resets: bind every parameter each time */
void gp_sql_bind_opt(sqlite3_stmt *st, int i, bool has, __s64 v); /* v or NULL */
void gp_sql_bind_text(sqlite3_stmt *st, int i, const char *s);	  /* s or NULL */
sqlite3_stmt *gp_sql_prepare(sqlite3 *db, const char *sql);

/* sql_rows.c */
int gp_sql_rows_init(struct gp_sql_exp *x, struct gp_sql_rows *r, const char *table, int ncols);
int gp_sql_rows_init_stmt(struct gp_sql_exp *x, struct gp_sql_rows *r, const char *table,
			  const char *sql, int ncols);
/* a row of NULLs to fill */
struct gp_sql_val *gp_sql_rows_add(struct gp_sql_exp *x, struct gp_sql_rows *r);
/* the rows written, or queued for the writer */
int gp_sql_rows_flush(struct gp_sql_exp *x, struct gp_sql_rows *r);
void gp_sql_rows_free(struct gp_sql_rows *r);
/* the database is the writer thread's from start to stop; stop: every queued row written */
int gp_sql_writer_start(struct gp_sql_exp *x);
int gp_sql_writer_stop(struct gp_sql_exp *x); /* x->failed */
bool gp_sql_writer_failed(const struct gp_sql_exp *x);

static inline void gp_sql_int(struct gp_sql_val *v, __s64 i)
{
	v->kind = GP_SQL_INT;
	v->i = i;
}

static inline void gp_sql_opt(struct gp_sql_val *v, bool has, __s64 i) /* i or NULL */
{
	if (has)
		gp_sql_int(v, i);
}

static inline void gp_sql_text(struct gp_sql_val *v, const char *s) /* static s or NULL */
{
	if (s) {
		v->kind = GP_SQL_TEXT;
		v->s = s;
	}
}

#endif /* GP_SQL_INTERNAL_H */
