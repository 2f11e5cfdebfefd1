/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sql_model_rows.c — the tables of the SQL export written from the model at
 * the capture's end, once every operation is applied and the stacks are
 * named: the APIs and error names, processes (and where they run: pid
 * namespace, container, pod), threads (with their CPU accounts),
 * libraries, kernels, streams, events, NCCL communicators, stacks and
 * their symbolized frames.
 */
#include <errno.h>
#include <stdlib.h>

#include "sql/sql_internal.h"

/* One INSERT, its columns bound by the caller between gp_sql_row_begin and the step. */
static sqlite3_stmt *prep(struct gp_sql_exp *x, const char *sql)
{
	sqlite3_stmt *st = gp_sql_prepare(x->db, sql);

	if (!st && !x->failed)
		x->failed = -EIO;
	return st;
}

static void put(sqlite3_stmt *st, int i, __s64 v)
{
	sqlite3_bind_int64(st, i, v);
}

static void apis_rows(struct gp_sql_exp *x)
{
	sqlite3_stmt *st = prep(x, "INSERT INTO apis VALUES (?1, ?2, ?3, ?4)");

	for (unsigned i = 1; st && i < GP_API_MAX; i++) {
		put(st, 1, i);
		gp_sql_bind_text(st, 2, gp_apis[i].symbol);
		gp_sql_bind_text(st, 3, gp_family_name(gp_apis[i].family));
		put(st, 4, !!(gp_apis[i].attr & GP_A_ASYNC));
		gp_sql_step(x, st);
	}
	sqlite3_finalize(st);
	st = prep(x, "INSERT INTO error_names VALUES (?1, ?2, ?3)");
	for (size_t i = 0; st && i < x->nerrs; i++) {
		const char *name = gp_error_name(x->errs[i].fam, x->errs[i].code);

		gp_sql_bind_text(st, 1, gp_family_name(x->errs[i].fam));
		put(st, 2, x->errs[i].code);
		if (name)
			gp_sql_bind_text(st, 3, name);
		else
			sqlite3_bind_text(st, 3, sqlite3_mprintf("%d", x->errs[i].code), -1,
					  sqlite3_free);
		gp_sql_step(x, st);
	}
	sqlite3_finalize(st);
}

static void process_row(struct gp_sql_exp *x, sqlite3_stmt *st, const struct gp_process *p)
{
	put(st, 1, p->pid);
	gp_sql_bind_text(st, 2, p->comm);
	gp_sql_bind_text(st, 3, p->cmdline);
	gp_sql_bind_opt(st, 4, p->attach_ns, (__s64)p->attach_ns);
	gp_sql_bind_opt(st, 5, p->exited, (__s64)p->exit_ns);
	put(st, 6, p->exited);
	put(st, 7, p->traced_from_start);
	gp_sql_bind_text(st, 8, p->traced_because);
	gp_sql_bind_opt(st, 9, p->parent_pid, p->parent_pid);
	put(st, 10, p->execs);
	put(st, 11, (__s64)p->api_calls);
	put(st, 12, (__s64)p->api_total_ns);
	put(st, 13, (__s64)(p->nested_left_out + p->nwaiting));
	put(st, 14, p->place.ns_pid ? p->place.ns_pid : p->pid); /* report.json's ns_pid */
	gp_sql_bind_text(st, 15, p->place.runtime);
	gp_sql_bind_text(st, 16, p->place.id);
	gp_sql_bind_text(st, 17, p->place.name);
	gp_sql_bind_text(st, 18, p->place.pod_uid);
	gp_sql_bind_text(st, 19, p->place.pod_name);
	gp_sql_bind_text(st, 20, p->place.pod_namespace);
	gp_sql_step(x, st);
}

static void thread_rows(struct gp_sql_exp *x, sqlite3_stmt *st, const struct gp_process *p)
{
	size_t n = p->threads.count;
	void **v = n ? calloc(n, sizeof(*v)) : NULL;

	if (n && !v) {
		x->failed = -ENOMEM;
		return;
	}
	n = gp_u64map_values(&p->threads, v, n);
	for (size_t i = 0; i < n; i++) {
		const struct gp_thread *t = v[i];
		const struct gp_thread_cpu_acct *a = &t->cpu;

		put(st, 1, p->pid);
		put(st, 2, t->tid);
		gp_sql_bind_text(st, 3, t->name);
		put(st, 4, (__s64)t->calls);
		put(st, 5, (__s64)t->errors);
		put(st, 6, (__s64)t->host_ns);
		gp_sql_bind_opt(st, 7, t->calls, (__s64)t->first_ns);
		gp_sql_bind_opt(st, 8, t->calls, (__s64)t->last_ns);
		gp_sql_bind_opt(st, 9, t->device >= 0, t->device);
		gp_sql_bind_opt(st, 10, a->known, (__s64)a->start_ns);
		gp_sql_bind_opt(st, 11, a->known, (__s64)a->end_ns);
		gp_sql_bind_opt(st, 12, a->known, (__s64)a->oncpu_ns);
		gp_sql_bind_opt(st, 13, a->known, (__s64)a->all.offcpu_ns);
		gp_sql_bind_opt(st, 14, a->known, (__s64)a->runnable_ns);
		gp_sql_bind_opt(st, 15, a->known, (__s64)a->all.vol_switches);
		gp_sql_bind_opt(st, 16, a->known, (__s64)a->all.invol_switches);
		gp_sql_bind_opt(st, 17, a->known && !(a->flags & GP_TCF_FAULTS_UNKNOWN),
				(__s64)a->all.minor_faults);
		gp_sql_bind_opt(st, 18, a->known && !(a->flags & GP_TCF_FAULTS_UNKNOWN),
				(__s64)a->all.major_faults);
		gp_sql_step(x, st);
	}
	free(v);
}

static void kernel_row(struct gp_sql_exp *x, sqlite3_stmt *st, const struct gp_process *p,
		       const struct gp_kernel *k)
{
	const char *why = gp_kernel_unresolved_reason(p, k);

	put(st, 1, gp_sql_id_of(x, &x->kernel_ids, k, &x->next_kernel));
	put(st, 2, p->pid);
	gp_sql_bind_opt(st, 3, k->name, gp_sql_intern(x, k->name));
	gp_sql_bind_opt(st, 4, k->mangled, gp_sql_intern(x, k->mangled));
	put(st, 5, k->name != NULL);
	gp_sql_bind_text(st, 6, why);
	put(st, 7, (__s64)k->func);
	put(st, 8, (__s64)k->ret_addr);
	put(st, 9, k->sites);
	put(st, 10, (__s64)k->calls);
	put(st, 11, (__s64)k->launches);
	put(st, 12, (__s64)k->driver_launches);
	put(st, 13, (__s64)k->errors);
	put(st, 14, (__s64)k->host_ns);
	gp_sql_step(x, st);
}

static void stream_rows(struct gp_sql_exp *x, sqlite3_stmt *st, const struct gp_process *p)
{
	size_t n = p->streams.count;
	void **v = n ? calloc(n, sizeof(*v)) : NULL;

	if (n && !v) {
		x->failed = -ENOMEM;
		return;
	}
	n = gp_u64map_values(&p->streams, v, n);
	for (size_t i = 0; i < n; i++) {
		const struct gp_stream *s = v[i];
		const __u64 cols[] = { s->created,	    s->destroyed,     s->kernels,
				       s->graph_launches,   s->copies,	      s->copy_bytes,
				       s->memsets,	    s->memset_bytes,  s->collectives,
				       s->collective_bytes, s->event_records, s->event_waits,
				       s->sync_calls,	    s->sync_ns };

		put(st, 1, p->pid);
		put(st, 2, (__s64)s->key);
		for (size_t c = 0; c < sizeof(cols) / sizeof(cols[0]); c++)
			put(st, (int)c + 3, (__s64)cols[c]);
		gp_sql_step(x, st);
	}
	free(v);
}

static void nccl_rows(struct gp_sql_exp *x, sqlite3_stmt *st, const struct gp_process *p)
{
	for (size_t i = 0; p->nccl && i < p->nccl->ncomms; i++) {
		const struct gp_nccl_comm *cm = p->nccl->comms[i];

		put(st, 1, p->pid);
		put(st, 2, (__s64)cm->handle);
		gp_sql_bind_opt(st, 3, cm->comm_id_known, (__s64)cm->comm_id);
		gp_sql_bind_opt(st, 4, cm->rank >= 0, cm->rank);
		gp_sql_bind_opt(st, 5, cm->nranks >= 0, cm->nranks);
		gp_sql_bind_opt(st, 6, cm->device >= 0, cm->device);
		gp_sql_bind_opt(st, 7, cm->parent, (__s64)cm->parent);
		put(st, 8, cm->destroyed);
		put(st, 9, (__s64)cm->collectives);
		gp_sql_step(x, st);
	}
}

/* The process's frames (ids from base), its stacks and their frames, innermost first. */
static void stack_rows(struct gp_sql_exp *x, sqlite3_stmt *fr, sqlite3_stmt *sk, sqlite3_stmt *sf,
		       const struct gp_process *p, __s64 base)
{
	const struct gp_stacks *s = &p->stacks;

	for (size_t i = 0; i < s->nframes; i++) {
		const struct gp_stack_frame *f = &s->frames[i];

		put(fr, 1, base + (__s64)i);
		put(fr, 2, p->pid);
		gp_sql_bind_text(fr, 3, f->kind == GP_FRAME_PYTHON ? "python" : "native");
		put(fr, 4, (__s64)f->addr);
		gp_sql_bind_opt(fr, 5, f->function, gp_sql_intern(x, f->function));
		gp_sql_bind_opt(fr, 6, f->symbol, gp_sql_intern(x, f->symbol));
		gp_sql_bind_opt(fr, 7, f->file, gp_sql_intern(x, f->file));
		gp_sql_bind_opt(fr, 8, f->build_id && *f->build_id, gp_sql_intern(x, f->build_id));
		put(fr, 9, (__s64)f->sym_offset);
		put(fr, 10, (__s64)f->file_offset);
		gp_sql_bind_opt(fr, 11, f->kind == GP_FRAME_PYTHON, f->line);
		gp_sql_step(x, fr);
	}
	for (size_t i = 0; i <= s->n; i++) {
		const struct gp_stack *k = i < s->n ? s->v[i] : s->overflow;
		__s64 id;

		if (!k)
			continue;
		id = gp_sql_id_of(x, &x->stack_ids, k, &x->next_stack);
		put(sk, 1, id);
		put(sk, 2, p->pid);
		put(sk, 3, k->nframes);
		put(sk, 4, k->npy);
		gp_sql_bind_text(sk, 5,
				 k == s->overflow ? "table_full" : gp_stack_trunc_name(k->trunc));
		put(sk, 6, (__s64)k->calls);
		put(sk, 7, (__s64)k->bytes);
		put(sk, 8, (__s64)k->host_ns);
		gp_sql_step(x, sk);
		for (unsigned d = 0; d < k->nsym; d++) {
			put(sf, 1, id);
			put(sf, 2, d);
			put(sf, 3, base + k->frame_ids[d]);
			gp_sql_step(x, sf);
		}
	}
}

int gp_sql_model_rows(struct gp_sql_exp *x)
{
	sqlite3_stmt *pr = prep(
		x, "INSERT INTO processes VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,"
		   " ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)");
	sqlite3_stmt *th =
		prep(x, "INSERT INTO threads VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,"
			" ?12, ?13, ?14, ?15, ?16, ?17, ?18)");
	sqlite3_stmt *li = prep(x, "INSERT INTO libraries VALUES (?1, ?2, ?3, ?4, ?5)");
	sqlite3_stmt *ke =
		prep(x, "INSERT INTO kernels VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,"
			" ?12, ?13, ?14)");
	sqlite3_stmt *sr =
		prep(x, "INSERT INTO streams VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,"
			" ?12, ?13, ?14, ?15, ?16)");
	sqlite3_stmt *ev = prep(x, "INSERT OR REPLACE INTO events VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
	sqlite3_stmt *nc =
		prep(x, "INSERT INTO nccl_comms VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
	sqlite3_stmt *fr =
		prep(x, "INSERT INTO frames VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
	sqlite3_stmt *sk = prep(x, "INSERT INTO stacks VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
	sqlite3_stmt *sf = prep(x, "INSERT INTO stack_frames VALUES (?1, ?2, ?3)");
	const struct gp_model *m = x->m;
	__s64 frame_base = 1;

	if (!x->failed)
		apis_rows(x);
	for (size_t i = 0; !x->failed && i < m->nprocs; i++) {
		const struct gp_process *p = m->procs[i];

		process_row(x, pr, p);
		thread_rows(x, th, p);
		for (size_t l = 0; l < p->nlibs; l++) {
			put(li, 1, p->pid);
			gp_sql_bind_text(li, 2, p->libs[l].path);
			gp_sql_bind_text(li, 3, gp_family_name(p->libs[l].family));
			put(li, 4, p->libs[l].is_static);
			gp_sql_bind_text(li, 5, p->libs[l].build_id);
			gp_sql_step(x, li);
		}
		for (size_t k = 0; k < p->nkernels; k++) /* the row of unknown handles among them */
			kernel_row(x, ke, p, p->kernels[k]);
		stream_rows(x, sr, p);
		put(ev, 1, p->pid);
		put(ev, 2, (__s64)p->events.created);
		put(ev, 3, (__s64)p->events.destroyed);
		put(ev, 4, (__s64)p->events.records);
		put(ev, 5, (__s64)p->events.sync_calls);
		put(ev, 6, (__s64)p->events.sync_ns);
		gp_sql_step(x, ev);
		nccl_rows(x, nc, p);
		stack_rows(x, fr, sk, sf, p, frame_base);
		frame_base += (__s64)p->stacks.nframes;
	}
	sqlite3_stmt *all[] = { pr, th, li, ke, sr, ev, nc, fr, sk, sf };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		sqlite3_finalize(all[i]);
	return x->failed;
}
