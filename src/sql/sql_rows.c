/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sql_rows.c — the export's rows on their way into SQLite: buffered per
 * table, GP_SQL_BATCH rows written by one multi-row INSERT (one step for
 * many rows instead of a step and a reset each) whose parameters are bound
 * only where they change from the batch before, and, while the records are
 * read, written by a thread of their own: the capture read and the model
 * fed on one CPU, SQLite's B-trees on the other (docs/sql.md, Cost).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "sql/sql_internal.h"

/*
 * Rows of one table on their way: r's statements, n rows of r->ncols values;
 * a full batch also says which values differ from the full batch before
 * (changed, after v: r->cap * r->ncols flags).
 */
struct gp_sql_chunk {
	const struct gp_sql_rows *r;
	int n;
	struct gp_sql_val v[];
};

static unsigned char *changed_of(const struct gp_sql_chunk *k)
{
	return (unsigned char *)(k->v + (size_t)k->r->cap * k->r->ncols);
}

/* Chunks handed to the writer thread, oldest first; bounded so that the reader waits for it. */
#define GP_SQL_QUEUE 64

struct gp_sql_writer {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t more, room;
	struct gp_sql_chunk *q[GP_SQL_QUEUE];
	unsigned head, count;
	bool done;
	bool reader_waits; /* for room: woken when the queue is half empty, not at each chunk */
	int failed;	   /* the writer's first error, as -errno: the reader stops reading */
};

/* "INSERT INTO t VALUES (?,?),(?,?)": nrows rows of ncols parameters. */
static char *insert_sql(const char *table, int ncols, int nrows)
{
	size_t len = strlen(table) + 32 + (size_t)nrows * (2 * (size_t)ncols + 3);
	char *sql = malloc(len), *p;

	if (!sql)
		return NULL;
	p = sql + sprintf(sql, "INSERT INTO %s VALUES", table);
	for (int r = 0; r < nrows; r++) {
		*p++ = r ? ',' : ' ';
		*p++ = '(';
		for (int c = 0; c < ncols; c++) {
			if (c)
				*p++ = ',';
			*p++ = '?';
		}
		*p++ = ')';
	}
	*p = '\0';
	return sql;
}

int gp_sql_rows_init(struct gp_sql_exp *x, struct gp_sql_rows *r, const char *table, int ncols)
{
	char *one = insert_sql(table, ncols, 1), *many = insert_sql(table, ncols, GP_SQL_BATCH);

	*r = (struct gp_sql_rows){ .table = table, .ncols = ncols, .cap = GP_SQL_BATCH };
	r->prev = malloc((size_t)GP_SQL_BATCH * ncols * sizeof(*r->prev));
	if (one && many && r->prev && (r->one = gp_sql_prepare(x->db, one)))
		r->many = gp_sql_prepare(x->db, many);
	free(one);
	free(many);
	if (!one || !many || !r->prev)
		return -ENOMEM;
	for (int i = 0; i < GP_SQL_BATCH * ncols; i++) /* a statement's parameters start NULL */
		r->prev[i] = (struct gp_sql_val){ .kind = GP_SQL_NULL };
	return r->many ? 0 : -EIO;
}

int gp_sql_rows_init_stmt(struct gp_sql_exp *x, struct gp_sql_rows *r, const char *table,
			  const char *sql, int ncols)
{
	*r = (struct gp_sql_rows){ .table = table, .ncols = ncols, .cap = 1 };
	r->one = gp_sql_prepare(x->db, sql);
	return r->one ? 0 : -EIO;
}

void gp_sql_rows_free(struct gp_sql_rows *r)
{
	sqlite3_finalize(r->one); /* NULL is a no-op */
	sqlite3_finalize(r->many);
	free(r->prev);
	free(r->cur);
	*r = (struct gp_sql_rows){ 0 };
}

static void bind_val(sqlite3_stmt *st, int i, const struct gp_sql_val *v)
{
	if (v->kind == GP_SQL_INT)
		sqlite3_bind_int64(st, i, v->i);
	else if (v->kind == GP_SQL_TEXT)
		sqlite3_bind_text(st, i, v->s, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

/* Steps st, rows of table, and resets it (its bindings stay): 0 or -errno after a message. */
static int step(sqlite3 *db, sqlite3_stmt *st, const char *table)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	if (rc == SQLITE_DONE || rc == SQLITE_ROW)
		return 0;
	gp_err("sqlite: writing %s rows into %s: %s", table ? table : "the",
	       sqlite3_db_filename(db, "main"), sqlite3_errmsg(db));
	return rc == SQLITE_FULL ? -ENOSPC : -EIO;
}

/* The chunk's rows into the database: the batch's statement when full, else one per row. */
static int write_chunk(sqlite3 *db, const struct gp_sql_chunk *k)
{
	const struct gp_sql_rows *r = k->r;
	__s64 last_id = k->v[(k->n - 1) * r->ncols].i;
	int err = 0;

	if (k->n == GP_SQL_BATCH && r->many) {
		const unsigned char *changed = changed_of(k);

		for (int i = 0; i < k->n * r->ncols; i++)
			if (changed[i])
				bind_val(r->many, i + 1, &k->v[i]);
		err = step(db, r->many, r->table);
	} else {
		for (int n = 0; n < k->n && !err; n++) {
			for (int c = 0; c < r->ncols; c++)
				bind_val(r->one, c + 1, &k->v[n * r->ncols + c]);
			err = step(db, r->one, r->table);
		}
	}
	if (!err && r->auto_id && sqlite3_last_insert_rowid(db) != last_id) {
		gp_err("sqlite: %s row %lld written as row %lld (rows out of order)", r->table,
		       (long long)last_id, (long long)sqlite3_last_insert_rowid(db));
		err = -EIO;
	}
	return err;
}

static void *writer_main(void *arg)
{
	struct gp_sql_exp *x = arg;
	struct gp_sql_writer *w = x->writer;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		struct gp_sql_chunk *k;
		int err = 0;

		while (!w->count && !w->done)
			pthread_cond_wait(&w->more, &w->lock);
		if (!w->count)
			break;
		k = w->q[w->head];
		w->head = (w->head + 1) % GP_SQL_QUEUE;
		w->count--;
		/* a wakeup a chunk had both threads switching ~50,000 times a million records */
		if (w->reader_waits && w->count <= GP_SQL_QUEUE / 2) {
			w->reader_waits = false;
			pthread_cond_signal(&w->room);
		}
		pthread_mutex_unlock(&w->lock);
		/* after an error the queue is drained, not written: the reader stops soon */
		if (!__atomic_load_n(&w->failed, __ATOMIC_RELAXED))
			err = write_chunk(x->db, k);
		free(k);
		pthread_mutex_lock(&w->lock);
		if (err && !w->failed)
			__atomic_store_n(&w->failed, err, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int gp_sql_writer_start(struct gp_sql_exp *x)
{
	struct gp_sql_writer *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return -ENOMEM;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->more, NULL);
	pthread_cond_init(&w->room, NULL);
	x->writer = w;
	err = pthread_create(&w->thread, NULL, writer_main, x);
	if (err) { /* the rows are written on this thread then */
		x->writer = NULL;
		free(w);
	}
	return 0;
}

int gp_sql_writer_stop(struct gp_sql_exp *x)
{
	struct gp_sql_writer *w = x->writer;

	if (!w)
		return x->failed;
	pthread_mutex_lock(&w->lock);
	w->done = true;
	pthread_cond_signal(&w->more);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	x->writer = NULL;
	if (w->failed && !x->failed)
		x->failed = w->failed;
	pthread_cond_destroy(&w->more);
	pthread_cond_destroy(&w->room);
	pthread_mutex_destroy(&w->lock);
	free(w);
	return x->failed;
}

bool gp_sql_writer_failed(const struct gp_sql_exp *x)
{
	return x->writer && __atomic_load_n(&x->writer->failed, __ATOMIC_RELAXED);
}

int gp_sql_rows_flush(struct gp_sql_exp *x, struct gp_sql_rows *r)
{
	struct gp_sql_chunk *k = r->cur;
	struct gp_sql_writer *w = x->writer;
	int err;

	if (!k || !k->n)
		return x->failed;
	r->cur = NULL;
	if (k->n == GP_SQL_BATCH && r->many) {
		/*
		 * A binding outlives the step: a parameter already holding the value
		 * (the same process, thread, API, result, NULLs... as the same row of
		 * the full batch before) is left as it is, most of them. Compared
		 * here, on the reading thread, which has time to spare; the writer
		 * binds what changed.
		 */
		unsigned char *changed = changed_of(k);

		for (int i = 0; i < k->n * r->ncols; i++) {
			const struct gp_sql_val *v = &k->v[i];
			struct gp_sql_val *p = &r->prev[i];

			changed[i] = v->kind != p->kind ||
				     (v->kind != GP_SQL_NULL && v->i != p->i); /* i: s's bits too */
			if (changed[i])
				*p = *v;
		}
	}
	if (!w) {
		err = write_chunk(x->db, k);
		free(k);
		if (err && !x->failed)
			x->failed = err;
		return x->failed;
	}
	pthread_mutex_lock(&w->lock);
	while (w->count == GP_SQL_QUEUE) {
		w->reader_waits = true;
		pthread_cond_wait(&w->room, &w->lock);
	}
	w->q[(w->head + w->count++) % GP_SQL_QUEUE] = k;
	pthread_cond_signal(&w->more);
	pthread_mutex_unlock(&w->lock);
	return x->failed;
}

struct gp_sql_val *gp_sql_rows_add(struct gp_sql_exp *x, struct gp_sql_rows *r)
{
	static struct gp_sql_val scratch[32]; /* out of memory: a row for nowhere (x->failed) */
	struct gp_sql_val *row;

	if (r->cur && r->cur->n == r->cap)
		gp_sql_rows_flush(x, r);
	if (!r->cur) {
		r->cur = malloc(sizeof(*r->cur) +
				(size_t)r->cap * r->ncols * (sizeof(r->cur->v[0]) + 1));
		if (!r->cur) {
			x->failed = -ENOMEM;
			return memset(scratch, 0, sizeof(scratch));
		}
		r->cur->r = r;
		r->cur->n = 0;
	}
	row = &r->cur->v[r->cur->n++ * r->ncols];
	memset(row, 0, (size_t)r->ncols * sizeof(*row));
	return row;
}
