/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sqlite_export.c — a capture into an SQLite database: the capture read
 * the way `gpuprobed report` reads it (every operation applied to a fresh
 * model, whose observer shows each outermost call decoded), each call
 * record written as a row the moment the model has folded it in, inner
 * calls with the outer call that covers them (the model's rule,
 * nesting.c), then the model's own tables at the end (sql_model_rows.c),
 * the indices and the views (sql_schema.c). The records' rows go through
 * sql_rows.c: batched, and written by its thread while this one reads.
 * One transaction, no journal: the file is written once, under a temporary
 * name, and renamed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "capture/capture_open.h"
#include "log.h"
#include "model/model_ops.h"
#include "sql/sql_export.h"
#include "sql/sql_internal.h"

/* ---- helpers the files of src/sql share --------------------------------------- */

int gp_sql_exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
		return 0;
	gp_err("sqlite: %s", msg ? msg : sqlite3_errmsg(db));
	sqlite3_free(msg);
	return -EIO;
}

sqlite3_stmt *gp_sql_prepare(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
		gp_err("sqlite: %s (in: %s)", sqlite3_errmsg(db), sql);
		return NULL;
	}
	return st;
}

int gp_sql_step(struct gp_sql_exp *x, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(
		st); /* its bindings stay: every statement binds all its parameters each time */
	if (rc == SQLITE_DONE || rc == SQLITE_ROW)
		return 0;
	if (!x->failed) {
		gp_err("sqlite: %s", sqlite3_errmsg(x->db));
		x->failed = rc == SQLITE_FULL ? -ENOSPC : -EIO;
	}
	return x->failed;
}

void gp_sql_bind_opt(sqlite3_stmt *st, int i, bool has, __s64 v)
{
	if (has)
		sqlite3_bind_int64(st, i, v);
	else
		sqlite3_bind_null(st, i);
}

void gp_sql_bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

static __u64 str_hash(const char *s)
{
	__u64 h = 0xcbf29ce484222325ULL; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

__s64 gp_sql_intern(struct gp_sql_exp *x, const char *s)
{
	__u64 h;
	struct gp_sql_str *head, *e;

	if (!s)
		return 0;
	h = str_hash(s);
	head = gp_u64map_get(&x->strs, h);
	for (e = head; e; e = e->next)
		if (!strcmp(e->s, s))
			return e->id;
	e = calloc(1, sizeof(*e));
	if (!e || !(e->s = strdup(s)))
		goto oom;
	e->id = ++x->next_str;
	e->next = head;
	if (gp_u64map_put(&x->strs, h, e))
		goto oom;
	sqlite3_bind_int64(x->ins_str, 1, e->id);
	sqlite3_bind_text(x->ins_str, 2, s, -1, SQLITE_STATIC);
	return gp_sql_step(x, x->ins_str) ? -1 : e->id;
oom:
	if (e)
		free(e->s);
	free(e);
	x->failed = -ENOMEM;
	return -1;
}

__s64 gp_sql_id_of(struct gp_sql_exp *x, struct gp_u64map *map, const void *row, __s64 *next)
{
	__s64 id = (__s64)(uintptr_t)gp_u64map_get(map, (__u64)(uintptr_t)row);

	if (id)
		return id;
	id = ++*next;
	if (gp_u64map_put(map, (__u64)(uintptr_t)row, (void *)(uintptr_t)id))
		x->failed = -ENOMEM;
	return id;
}

/* ---- rows of the records --------------------------------------------------------- */

static void observed(void *ctx, const struct gp_call_view *v)
{
	struct gp_sql_exp *x = ctx;

	x->seen = true;
	x->v = *v;
	x->op = v->op_detail ? *v->op_detail : (struct gp_op){ 0 };
}

static void note_error(struct gp_sql_exp *x, enum gp_api_id api, __s32 code)
{
	int fam = gp_apis[api].family;

	for (size_t i = 0; i < x->nerrs; i++)
		if (x->errs[i].fam == fam && x->errs[i].code == code)
			return;
	if (GP_ARRAY_GROW(x->errs, x->errs_cap, x->nerrs + 1, 8)) {
		x->failed = -ENOMEM;
		return;
	}
	x->errs[x->nerrs].fam = fam;
	x->errs[x->nerrs++].code = code;
}

/* The calls row of c; the decoded columns when it is the outermost call the observer saw. */
static __s64 call_row(struct gp_sql_exp *x, const struct gp_api_call *c, __s64 nested_in,
		      bool decoded)
{
	struct gp_sql_val *r = gp_sql_rows_add(x, &x->calls); /* r[0] is column 1 */
	const struct gp_call_view *v = &x->v;
	__u16 parent = GP_EVF_PARENT(c->hdr.flags);
	__s64 id = ++x->next_call;

	if (c->ret)
		note_error(x, c->api, c->ret);
	r[0].i = id; /* bound as NULL: SQLite's next rowid, which is id (x->calls.auto_id) */
	gp_sql_int(&r[1], (__s64)c->hdr.ts_ns);
	gp_sql_int(&r[2], (__s64)(c->hdr.ts_ns + c->dur_ns));
	gp_sql_int(&r[3], c->hdr.tgid);
	gp_sql_int(&r[4], c->hdr.tid);
	gp_sql_int(&r[5], c->api);
	gp_sql_int(&r[6], c->ret);
	gp_sql_opt(&r[7], parent, parent);
	gp_sql_opt(&r[8], nested_in > 0, nested_in);
	if (decoded) {
		if (v->stack)
			gp_sql_int(&r[9], gp_sql_id_of(x, &x->stack_ids, v->stack, &x->next_stack));
		if (x->op.kind != GP_OP_OTHER)
			gp_sql_text(&r[10], v->op);
		gp_sql_opt(&r[11],
			   x->op.kind == GP_OP_COPY || x->op.kind == GP_OP_MEMSET ||
				   x->op.kind == GP_OP_ALLOC || x->op.kind == GP_OP_COLL,
			   (__s64)v->bytes);
		gp_sql_opt(&r[12], v->has_stream, (__s64)v->stream);
		if (v->kernel_row)
			gp_sql_int(&r[14],
				   gp_sql_id_of(x, &x->kernel_ids, v->kernel_row, &x->next_kernel));
	}
	{
		const struct gp_process *p = gp_u64map_get(&x->m->by_pid, c->hdr.tgid);
		const struct gp_thread *t = p ? gp_u64map_get(&p->threads, c->hdr.tid) : NULL;

		gp_sql_opt(&r[13], t && t->device >= 0, t ? t->device : 0);
	}
	gp_sql_int(&r[15], (__s64)c->ret_addr);
	if (c->offcpu_ns || c->vol_switches || c->invol_switches || c->minor_faults ||
	    c->major_faults) {
		r = gp_sql_rows_add(x, &x->cpu);
		gp_sql_int(&r[0], id);
		gp_sql_int(&r[1], (__s64)c->offcpu_ns);
		gp_sql_int(&r[2], c->vol_switches);
		gp_sql_int(&r[3], c->invol_switches);
		gp_sql_int(&r[4], c->minor_faults);
		gp_sql_int(&r[5], c->major_faults);
	}
	return id;
}

static __u64 live_key(__u32 pid, __u64 ptr)
{
	return (ptr * 0x9E3779B97F4A7C15ULL) ^ pid;
}

/* What an outermost call did, in the table of its kind. */
static void call_detail(struct gp_sql_exp *x, const struct gp_api_call *c, __s64 id)
{
	const struct gp_process *p = gp_u64map_get(&x->m->by_pid, c->hdr.tgid);
	const struct gp_call_view *v = &x->v;
	const struct gp_op *op = &x->op;
	struct gp_nccl_layout lay;

	switch (op->kind) {
	case GP_OP_COPY: {
		struct gp_sql_val *r = gp_sql_rows_add(x, &x->xfers);
		__u64 src, dst; /* direction and host memory: the model's, in the view */

		gp_copy_endpoints(c, &src, &dst);
		gp_sql_int(&r[0], id);
		gp_sql_text(&r[1], v->direction);
		gp_sql_text(&r[2], v->host_memory);
		gp_sql_int(&r[3], !(gp_apis[c->api].attr & GP_A_ASYNC));
		gp_sql_int(&r[4], (__s64)v->bytes);
		gp_sql_int(&r[5], (__s64)src);
		gp_sql_int(&r[6], (__s64)dst);
		break;
	}
	case GP_OP_ALLOC: {
		__u64 ptr = op->alloc_kind == GP_AK_REGISTERED ? c->args[0] : c->out;
		const struct gp_thread *t = p ? gp_u64map_get(&p->threads, c->hdr.tid) : NULL;
		struct gp_sql_val *r;

		if (c->ret || !ptr)
			break;
		r = gp_sql_rows_add(x, &x->allocs); /* freed_call_id, freed_ns: NULL until freed */
		gp_sql_int(&r[0], id);
		gp_sql_int(&r[1], c->hdr.tgid);
		gp_sql_int(&r[2], (__s64)ptr);
		gp_sql_int(&r[3], (__s64)op->bytes);
		gp_sql_text(&r[4], gp_alloc_kind_name(op->alloc_kind));
		gp_sql_opt(&r[5], t && t->device >= 0, t ? t->device : 0);
		gp_sql_int(&r[6], (__s64)c->hdr.ts_ns);
		if (gp_u64map_put(&x->live, live_key(c->hdr.tgid, ptr), (void *)(uintptr_t)id))
			x->failed = -ENOMEM;
		break;
	}
	case GP_OP_FREE: {
		__u64 key = live_key(c->hdr.tgid, c->args[0]);
		__s64 alloc = (__s64)(uintptr_t)gp_u64map_get(&x->live, key);
		struct gp_sql_val *r;

		if (c->ret || !alloc)
			break;
		gp_u64map_del(&x->live, key);
		gp_sql_rows_flush(x, &x->allocs); /* the row it updates written before it */
		r = gp_sql_rows_add(x, &x->frees);
		gp_sql_int(&r[0], id);
		gp_sql_int(&r[1], (__s64)c->hdr.ts_ns);
		gp_sql_int(&r[2], alloc);
		gp_sql_rows_flush(x, &x->frees);
		break;
	}
	case GP_OP_COLL:
		if (gp_nccl_layout(c->api, &lay)) {
			struct gp_sql_val *r = gp_sql_rows_add(x, &x->nccl);
			const char *dt =
				lay.dtype >= 0 ? gp_nccl_dtype_name((int)c->args[lay.dtype]) : NULL;
			/* the model's communicator and sequence number (successful collectives, not Send/Recv) */
			const struct gp_nccl_comm *cm = v->op_detail ? v->op_detail->comm : NULL;
			bool numbered = v->op_detail && v->op_detail->seq;

			gp_sql_int(&r[0], id);
			gp_sql_int(&r[1], c->hdr.tgid);
			gp_sql_int(&r[2], (__s64)c->args[lay.comm]);
			gp_sql_opt(&r[3], cm && cm->comm_id_known, cm ? (__s64)cm->comm_id : 0);
			gp_sql_opt(&r[4], numbered, numbered ? (__s64)v->op_detail->seq : 0);
			gp_sql_text(&r[5], gp_nccl_op_name(lay.op));
			gp_sql_text(&r[6], dt);
			gp_sql_opt(&r[7], lay.count >= 0,
				   lay.count >= 0 ? (__s64)c->args[lay.count] : 0);
			gp_sql_int(&r[8], (__s64)v->bytes);
			gp_sql_opt(&r[9], lay.root_or_peer >= 0,
				   lay.root_or_peer >= 0 ? (__s32)c->args[lay.root_or_peer] : 0);
			gp_sql_opt(&r[10], v->has_stream, (__s64)v->stream);
		}
		break;
	default:
		break;
	}
}

/*
 * An outermost call returned: the inner calls of its thread waiting for it
 * are its own when it covers them, left out otherwise (an earlier outer call
 * that never returned), as the model decides (nesting.c).
 */
static void outer_returned(struct gp_sql_exp *x, const struct gp_api_call *c)
{
	__u64 end = c->hdr.ts_ns + c->dur_ns;
	size_t kept = 0, mine = 0;
	__s64 outer;

	for (size_t i = 0; i < x->nwaiting; i++) {
		const struct gp_api_call *w = &x->waiting[i].c;

		if (w->hdr.tgid != c->hdr.tgid || w->hdr.tid != c->hdr.tid)
			continue;
		if (w->hdr.ts_ns >= c->hdr.ts_ns && w->hdr.ts_ns + w->dur_ns <= end)
			mine++;
		else
			call_row(x, w, 0,
				 false); /* left out with its outer call, which never returned */
	}
	outer = x->next_call + 1 +
		(__s64)mine; /* its inner calls' rows come first, in the model's order */
	for (size_t i = 0; i < x->nwaiting; i++) {
		const struct gp_api_call *w = &x->waiting[i].c;

		if (w->hdr.tgid != c->hdr.tgid || w->hdr.tid != c->hdr.tid)
			x->waiting[kept++] = x->waiting[i];
		else if (w->hdr.ts_ns >= c->hdr.ts_ns && w->hdr.ts_ns + w->dur_ns <= end)
			call_row(x, w, outer, false);
	}
	x->nwaiting = kept;
}

static void call_record(struct gp_sql_exp *x, const void *data)
{
	struct gp_api_call c;
	__u16 parent;

	memcpy(&c, data, sizeof(c));
	parent = GP_EVF_PARENT(c.hdr.flags);
	if (parent && !(c.hdr.flags & GP_EVF_PARENT_COUNTED)) {
		if (GP_ARRAY_GROW(x->waiting, x->waiting_cap, x->nwaiting + 1, 64)) {
			x->failed = -ENOMEM;
			return;
		}
		x->waiting[x->nwaiting++].c = c;
		return;
	}
	if (parent) { /* its outer call was counted in the kernel: no record of it will come */
		call_row(x, &c, 0, false);
		return;
	}
	__s64 id;

	outer_returned(x, &c);
	id = call_row(x, &c, 0, x->seen);
	if (x->seen)
		call_detail(x, &c, id);
}

static void slice_row(struct gp_sql_exp *x, const void *data)
{
	static const char *const left[] = { [GP_SL_BLOCKED] = "blocked",
					    [GP_SL_PREEMPTED] = "preempted",
					    [GP_SL_EXITED] = "exited" };
	struct gp_sched_slice sl;
	struct gp_sql_val *r = gp_sql_rows_add(x, &x->slices);

	memcpy(&sl, data, sizeof(sl));
	gp_sql_int(&r[0], sl.hdr.tgid);
	gp_sql_int(&r[1], sl.hdr.tid);
	gp_sql_int(&r[2], (__s64)sl.hdr.ts_ns);
	gp_sql_int(&r[3], (__s64)sl.end_ns);
	gp_sql_int(&r[4], sl.cpu);
	gp_sql_text(&r[5], left[sl.left]); /* 1..3: the model validated it */
	gp_sql_int(&r[6], sl.minor_faults);
	gp_sql_int(&r[7], sl.major_faults);
	gp_sql_int(&r[8], sl.oncpu_threads_start);
	gp_sql_int(&r[9], sl.oncpu_threads_end);
}

/* After the model took an ingest operation (it validated the record): its rows. */
static void record_rows(struct gp_sql_exp *x, const void *data)
{
	struct gp_event_hdr h;

	memcpy(&h, data, sizeof(h));
	if (gp_event_is_call(h.type))
		call_record(x, data);
	else if (h.type == GP_EV_SCHED_SLICE)
		slice_row(x, data);
	/* thread accounts: the threads table, from the model */
}

/* ---- the export ---------------------------------------------------------------------- */

static int open_db(struct gp_sql_exp *x, const char *path, bool indices)
{
	int err;

	if (sqlite3_open_v2(path, &x->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		gp_err("%s: %s", path, x->db ? sqlite3_errmsg(x->db) : "cannot open");
		return -EIO;
	}
	/*
	 * A file written once: no journal, no syncs until the end, a large cache.
	 * 64 KiB pages (SQLite's largest): a tenth less time than 16 KiB ones, a
	 * fourth less than 4 KiB (fewer pages to split, write and read back while
	 * indexing), the same file size. The indices'
	 * sorter spills to temporary files: in memory (temp_store = MEMORY) it
	 * held the sorted index of 10M calls (~0.5 GB peak) and was no faster.
	 */
	if (gp_sql_exec(
		    x->db,
		    "PRAGMA page_size = 65536; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
		    " PRAGMA locking_mode = EXCLUSIVE; PRAGMA cache_size = -65536;"
		    " PRAGMA temp_store = FILE;") ||
	    gp_sql_schema_create(x->db, indices) || gp_sql_exec(x->db, "BEGIN"))
		return -EIO;
	if (!(x->ins_str = gp_sql_prepare(x->db, "INSERT INTO strings VALUES (?1, ?2)")))
		return -EIO;
	if ((err = gp_sql_rows_init(x, &x->calls, "calls", 16)))
		return err;
	x->calls.auto_id = true;
	if ((err = gp_sql_rows_init(x, &x->cpu, "call_cpu", 6)) ||
	    (err = gp_sql_rows_init(x, &x->xfers, "transfers", 7)) ||
	    (err = gp_sql_rows_init(x, &x->slices, "sched_slices", 10)) ||
	    (err = gp_sql_rows_init(x, &x->allocs, "allocations", 9)) ||
	    (err = gp_sql_rows_init(x, &x->nccl, "nccl_calls", 11)) ||
	    (err = gp_sql_rows_init_stmt(
		     x, &x->frees, "allocations",
		     "UPDATE allocations SET free_call_id = ?1, freed_ns = ?2 WHERE call_id = ?3",
		     3)))
		return err;
	return 0;
}

static void free_str(void *v)
{
	struct gp_sql_str *e = v, *next;

	for (; e; e = next) {
		next = e->next;
		free(e->s);
		free(e);
	}
}

static void close_db(struct gp_sql_exp *x)
{
	struct gp_sql_rows *rows[] = { &x->calls,  &x->cpu,   &x->xfers, &x->slices,
				       &x->allocs, &x->frees, &x->nccl };

	gp_sql_writer_stop(x);	      /* the database is this thread's again */
	sqlite3_finalize(x->ins_str); /* NULL is a no-op */
	x->ins_str = NULL;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		gp_sql_rows_free(rows[i]);
	if (x->db)
		sqlite3_close(x->db);
	x->db = NULL;
	gp_u64map_clear(&x->strs, free_str);
	gp_u64map_clear(&x->kernel_ids, NULL);
	gp_u64map_clear(&x->stack_ids, NULL);
	gp_u64map_clear(&x->live, NULL);
	free(x->waiting);
	free(x->errs);
	x->waiting = NULL;
	x->errs = NULL;
}

/* One export under way: its database, where it goes, what it counted, its clock (for -v). */
struct export_run {
	struct gp_sql_exp x;
	const struct gp_sql_export_opts *o;
	const char *out_path;
	char *tmp; /* the database's temporary name beside out_path */
	struct gp_sql_export_stats *st;
	const struct gp_capture_model *cm;
	struct timespec t0;
	double t_rows;
};

static double lap(struct timespec *t0);

/* The model made: the database opened under a temporary name, its writer started. */
static int export_ready(void *ctx, struct gp_model *m)
{
	struct export_run *run = ctx;
	int fd, err;

	if (asprintf(&run->tmp, "%s.tmp.XXXXXX", run->out_path) < 0) {
		run->tmp = NULL;
		return -ENOMEM;
	}
	fd = mkstemp(run->tmp);
	if (fd < 0) {
		err = -errno;
		gp_err("%s: %s", run->tmp, strerror(errno));
		free(run->tmp);
		run->tmp = NULL;
		return err;
	}
	close(fd);
	run->x.m = m;
	lap(&run->t0);
	if ((err = open_db(&run->x, run->tmp, run->o->indices)))
		return err;
	return gp_sql_writer_start(&run->x);
}

/* Before each operation: on while the database takes the rows. */
static bool export_more(void *ctx)
{
	struct export_run *run = ctx;

	return !run->x.failed && !gp_sql_writer_failed(&run->x);
}

/* Each operation applied: a record's rows, written the moment the model has folded it in. */
static int export_applied(void *ctx, unsigned op, const void *data, size_t len, int err)
{
	struct gp_sql_exp *x = &((struct export_run *)ctx)->x;

	/* a record the model refused (malformed_records) writes no row either */
	if (err >= 0 && op == GP_MOP_INGEST && len >= sizeof(struct gp_event_hdr) &&
	    !(len < sizeof(struct gp_api_call) &&
	      gp_event_is_call(((const struct gp_event_hdr *)data)->type)))
		record_rows(x, data);
	x->seen = false; /* the observer tells the next operation's call anew */
	return 0;
}

/* The last operation applied: inner calls whose outer call never returned, every row written. */
static int export_done(void *ctx)
{
	struct export_run *run = ctx;
	struct gp_sql_exp *x = &run->x;
	const struct gp_capture_stats *cs = gp_capture_stats(run->cm->reader);

	for (size_t i = 0; i < x->nwaiting; i++)
		call_row(x, &x->waiting[i].c, 0, false);
	x->nwaiting = 0;
	gp_sql_rows_flush(x, &x->calls);
	gp_sql_rows_flush(x, &x->cpu);
	gp_sql_rows_flush(x, &x->xfers);
	gp_sql_rows_flush(x, &x->slices);
	gp_sql_rows_flush(x, &x->allocs);
	gp_sql_rows_flush(x, &x->nccl);
	gp_sql_writer_stop(x);
	run->t_rows = lap(&run->t0);
	run->st->malformed = run->cm->stats.malformed;
	run->st->ops = cs->ops;
	run->st->corrupt_chunks = cs->corrupt_chunks;
	run->st->complete = cs->complete;
	run->st->calls = (__u64)x->next_call;
	return x->failed;
}

static int write_meta(struct gp_sql_exp *x, const struct gp_capture_reader *r, const char *cap_path,
		      const struct gp_sql_export_stats *st)
{
	const struct gp_cap_header *h = gp_capture_header(r);
	const struct gp_capture_stats *cs = gp_capture_stats(r);
	sqlite3_stmt *ins = gp_sql_prepare(x->db, "INSERT INTO meta VALUES (?1, ?2)");
	struct stat sb;
	char text[64];
	struct {
		const char *key;
		const char *text;
		__s64 num;
	} rows[] = {
		{ "schema_version", NULL, GP_SQL_SCHEMA_VERSION },
		{ "capture_file", cap_path, 0 },
		{ "capture_bytes", NULL, stat(cap_path, &sb) ? -1 : (__s64)sb.st_size },
		{ "capture_mtime_ns", NULL,
		  (__s64)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec },
		{ "tool_version", h->tool_version, 0 },
		{ "hostname", h->hostname, 0 },
		{ "kernel_release", h->kernel_release, 0 },
		{ "start_mono_ns", NULL, (__s64)h->start_mono_ns },
		{ "start_realtime_ns", NULL, (__s64)h->start_realtime_ns },
		{ "complete", NULL, cs->complete },
		{ "cut", cs->complete ? NULL : cs->cut, 0 },
		{ "operations", NULL, (__s64)cs->ops },
		{ "corrupt_chunks", NULL, (__s64)cs->corrupt_chunks },
		{ "corruption", cs->corrupt_chunks ? cs->corruption : NULL, 0 },
		{ "malformed_operations", NULL, (__s64)st->malformed },
		{ "exported_by", text, 0 },
	};

	snprintf(text, sizeof(text), "gpuprobed %s", GP_VERSION);
	if (!ins)
		return -EIO;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		sqlite3_bind_text(ins, 1, rows[i].key, -1, SQLITE_STATIC);
		if (rows[i].text)
			sqlite3_bind_text(ins, 2, rows[i].text, (int)strnlen(rows[i].text, 256),
					  SQLITE_STATIC);
		else if (!strcmp(rows[i].key, "cut") || !strcmp(rows[i].key, "corruption"))
			sqlite3_bind_null(ins, 2);
		else
			sqlite3_bind_int64(ins, 2, rows[i].num);
		gp_sql_step(x, ins);
	}
	sqlite3_finalize(ins);
	return x->failed;
}

/* Seconds since *t0, and *t0 now: what each stage of the export took, for -v. */
static double lap(struct timespec *t0)
{
	struct timespec t;
	double s;

	clock_gettime(CLOCK_MONOTONIC, &t);
	s = (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
	*t0 = t;
	return s;
}

int gp_sql_export(const char *cap_path, const char *out_path, const struct gp_sql_export_opts *o,
		  struct gp_sql_export_stats *st)
{
	struct gp_capture_model cm;
	struct export_run run = { .o = o, .out_path = out_path, .st = st, .cm = &cm };
	struct gp_sql_exp *x = &run.x;
	const struct gp_model_observer obs = { .ctx = x, .call = observed };
	/* the stacks named as the report names them (finish) */
	const struct gp_capture_open_opts opts = { .observers = &obs,
						   .nobservers = 1,
						   .ctx = &run,
						   .ready = export_ready,
						   .more = export_more,
						   .applied = export_applied,
						   .done = export_done,
						   .voice = GP_CAPTURE_EXPORTING,
						   .finish = true };
	char errmsg[4200];
	double t_model;
	int err;

	*st = (struct gp_sql_export_stats){ 0 };
	/* SQLite's allocation statistics take a global mutex on every malloc; nobody reads them */
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS,
		       0); /* refused (harmless) once SQLite is initialised */
	if (!o->force && access(out_path, F_OK) == 0) {
		gp_err("%s exists (--force replaces it)", out_path);
		return -EEXIST;
	}
	err = gp_capture_open_model(cap_path, &opts, &cm, errmsg, sizeof(errmsg));
	if (err || (err = gp_sql_model_rows(x)) || (err = gp_sql_findings_rows(x)) ||
	    (err = write_meta(x, cm.reader, cap_path, st)))
		goto out;
	t_model = lap(&run.t0);
	if ((err = gp_sql_schema_finish(x->db, o->indices)) || (err = gp_sql_exec(x->db, "COMMIT")))
		goto out;
	gp_info("export: the records' rows %.2f s, the model's %.2f s, indices and views %.2f s",
		run.t_rows, t_model, lap(&run.t0));
	close_db(x);
	if (!o->force && access(out_path, F_OK) == 0) { /* made meanwhile: not ours to replace */
		gp_err("%s exists (--force replaces it)", out_path);
		err = -EEXIST;
		goto out;
	}
	if (chmod(run.tmp, 0644) || rename(run.tmp, out_path)) {
		err = -errno;
		gp_err("%s: %s", out_path, strerror(errno));
		goto out;
	}
	free(run.tmp);
	run.tmp = NULL;
out:
	if (err == -ENOMEM) /* the other failures said what failed where they happened */
		gp_err("%s: out of memory exporting %s", out_path, cap_path);
	close_db(x);
	if (run.tmp) {
		unlink(run.tmp);
		free(run.tmp);
	}
	gp_capture_model_close(&cm);
	return err;
}
