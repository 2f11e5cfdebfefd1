/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * metrics_pool.c — process_labels = group: the per-process families of the
 * /metrics page with one series per group of processes (the same name,
 * container, pod, namespace and job) instead of one per pid, so that the
 * page's size follows the jobs, not the processes that come and go.
 *
 * Each process is rendered alone (metrics_process.c, with its group's labels
 * and no pid), its samples read back and added up by series. A counter must
 * never go down, so the pool keeps, across scrapes:
 *   - each process's group labels as first seen (its job label is only
 *     readable while it lives);
 *   - each process's last value of every counter series: one it no longer
 *     gives (its CPU time once it has exited) keeps that value;
 *   - the totals of the processes the model has forgotten (exited_grace,
 *     max_processes), added to their group's series from then on.
 * Gauges are the members' sums (the largest for a peak or a wait).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "daemon/metrics_internal.h"
#include "model/u64map.h"

/* One series' value: a count, or nanoseconds written as seconds. */
struct series {
	char *key; /* "name{labels}" or "name" */
	__u64 v;
	bool seconds;
};

/* Series in first-seen order, found by their key. */
struct series_set {
	struct series *v;
	size_t n, cap;
	struct gp_u64map
		by_hash; /* hash(key) -> index + 1; a collision is probed at hash + 1 ... */
};

struct pool_proc {
	__u32 pid;
	__u64 attach_ns;
	char *labels;		    /* its group's label text, as first seen */
	struct series_set counters; /* its last value of each counter series */
	bool seen;		    /* in this scrape's model */
};

struct gp_metrics_pool {
	struct pool_proc *procs;
	size_t n, cap;
	struct gp_u64map by_pid;    /* pid -> index + 1 in procs */
	struct series_set retained; /* the forgotten processes' counters, by series */
};

enum add_how { ADD_SUM, ADD_MAX, ADD_SET };

static __u64 key_hash(const char *s)
{
	__u64 h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

static struct series *find(struct series_set *set, const char *key, __u64 *slot)
{
	__u64 h = key_hash(key);
	void *hit;

	while ((hit = gp_u64map_get(&set->by_hash, h))) {
		struct series *s = &set->v[(uintptr_t)hit - 1];

		if (!strcmp(s->key, key))
			return s;
		h++;
	}
	*slot = h;
	return NULL;
}

static int add(struct series_set *set, const char *key, __u64 v, bool seconds, enum add_how how)
{
	__u64 slot;
	struct series *s = find(set, key, &slot);
	char *copy;

	if (s) {
		s->v = how == ADD_SET ? v : how == ADD_MAX ? (v > s->v ? v : s->v) : s->v + v;
		return 0;
	}
	if (GP_ARRAY_GROW(set->v, set->cap, set->n + 1, 64) || !(copy = strdup(key)))
		return -ENOMEM;
	set->v[set->n] = (struct series){ .key = copy, .v = v, .seconds = seconds };
	if (gp_u64map_put(&set->by_hash, slot, (void *)(uintptr_t)(set->n + 1))) {
		free(copy);
		return -ENOMEM;
	}
	set->n++;
	return 0;
}

static void set_clear(struct series_set *set)
{
	for (size_t i = 0; i < set->n; i++)
		free(set->v[i].key);
	free(set->v);
	gp_u64map_clear(&set->by_hash, NULL);
	memset(set, 0, sizeof(*set));
}

struct gp_metrics_pool *gp_metrics_pool_new(void)
{
	return calloc(1, sizeof(struct gp_metrics_pool));
}

static void proc_clear(struct pool_proc *pp)
{
	free(pp->labels);
	set_clear(&pp->counters);
}

void gp_metrics_pool_free(struct gp_metrics_pool *pool)
{
	if (!pool)
		return;
	for (size_t i = 0; i < pool->n; i++)
		proc_clear(&pool->procs[i]);
	free(pool->procs);
	gp_u64map_clear(&pool->by_pid, NULL);
	set_clear(&pool->retained);
	free(pool);
}

/* ---- one process's samples, read back --------------------------------------------- */

/* A family of the page, in its order, with its type. */
struct family_row {
	char *name, *header; /* header: its "# HELP" and "# TYPE" lines */
	bool counter;	     /* counter or histogram: its series never go down */
	bool max;	     /* a gauge whose groups show their largest member's value */
};

struct page {
	struct family_row *fam;
	size_t nfam, cap;
	struct series_set *sums; /* [nfam]: this scrape's series of each family */
};

static bool is_suffix(const char *s, size_t len, const char *suffix)
{
	return len == strlen(suffix) && !strncmp(s, suffix, len);
}

/* The family a sample name belongs to (a histogram's _bucket, _sum, _count are its own). */
static size_t family_of(const struct page *pg, const char *name, size_t len)
{
	for (size_t f = 0; f < pg->nfam; f++) {
		size_t fl = strlen(pg->fam[f].name);
		const char *rest = name + fl;

		if (fl <= len && !strncmp(pg->fam[f].name, name, fl) &&
		    (fl == len || is_suffix(rest, len - fl, "_bucket") ||
		     is_suffix(rest, len - fl, "_sum") || is_suffix(rest, len - fl, "_count")))
			return f;
	}
	return pg->nfam;
}

/* The family headers of the page, in order, from a rendering without processes. */
static int read_families(struct page *pg, char *text)
{
	char *at;

	for (char *line = strtok_r(text, "\n", &at); line; line = strtok_r(NULL, "\n", &at)) {
		struct family_row *fr;
		char *type;

		if (strncmp(line, "# HELP ", 7))
			continue;
		type = strtok_r(NULL, "\n", &at); /* "# TYPE NAME KIND" follows */
		if (!type || GP_ARRAY_GROW(pg->fam, pg->cap, pg->nfam + 1, 32))
			return -ENOMEM;
		fr = &pg->fam[pg->nfam];
		*fr = (struct family_row){ 0 };
		fr->name = strndup(line + 7, strcspn(line + 7, " "));
		if (!fr->name || asprintf(&fr->header, "%s\n%s\n", line, type) < 0)
			return -ENOMEM;
		fr->counter = strstr(type, " counter") || strstr(type, " histogram");
		fr->max = strstr(fr->name, "_peak_") || strstr(fr->name, "_waiting_");
		pg->nfam++;
	}
	pg->sums = calloc(pg->nfam + 1, sizeof(*pg->sums));
	return pg->sums ? 0 : -ENOMEM;
}

/*
 * Calls fn(ctx, family, key, value, seconds) for each sample line of text
 * ("KEY VALUE": a count, or seconds with nine decimals). 0 or -errno.
 */
static int each_sample(const struct page *pg, char *text,
		       int (*fn)(void *ctx, size_t fam, const char *key, __u64 v, bool seconds),
		       void *ctx)
{
	int err = 0;
	char *at;

	for (char *line = strtok_r(text, "\n", &at); line && !err;
	     line = strtok_r(NULL, "\n", &at)) {
		char *sp = strrchr(line, ' '), *dot;
		unsigned long long whole, frac = 0;
		size_t fam;

		if (line[0] == '#' || !sp)
			continue;
		*sp = '\0';
		fam = family_of(pg, line, strcspn(line, "{"));
		dot = strchr(sp + 1, '.');
		whole = strtoull(sp + 1, NULL, 10);
		if (dot)
			frac = strtoull(dot + 1, NULL, 10); /* close_ns: exactly nine digits */
		if (fam < pg->nfam)
			err = fn(ctx, fam, line, dot ? whole * 1000000000ull + frac : whole, dot);
	}
	return err;
}

/* ---- a scrape -------------------------------------------------------------------- */

struct proc_run {
	struct page *pg;
	struct pool_proc *pp;
};

/* A process's sample: its counters remembered, its gauges into this scrape's sums. */
static int take_sample(void *ctx, size_t fam, const char *key, __u64 v, bool seconds)
{
	struct proc_run *run = ctx;
	const struct family_row *fr = &run->pg->fam[fam];

	if (fr->counter)
		return add(&run->pp->counters, key, v, seconds, ADD_SET);
	return add(&run->pg->sums[fam], key, v, seconds, fr->max ? ADD_MAX : ADD_SUM);
}

/* Adds the counters of set into the scrape's sums, each to its family's. */
static int add_counters(struct page *pg, const struct series_set *set)
{
	for (size_t i = 0; i < set->n; i++) {
		const struct series *s = &set->v[i];
		size_t fam = family_of(pg, s->key, strcspn(s->key, "{"));
		int err =
			fam < pg->nfam ? add(&pg->sums[fam], s->key, s->v, s->seconds, ADD_SUM) : 0;

		if (err)
			return err;
	}
	return 0;
}

/* The pool's entry of process p, if it has one. */
static struct pool_proc *pool_proc_find(struct gp_metrics_pool *pool, const struct gp_process *p)
{
	void *hit = gp_u64map_get(&pool->by_pid, p->pid);
	struct pool_proc *pp = hit ? &pool->procs[(uintptr_t)hit - 1] : NULL;

	return pp && pp->attach_ns == p->attach_ns ? pp : NULL;
}

/*
 * The pool's entry of process p, made with its group's labels at first sight (an older process of
 * its pid, still in the model, is then no longer found: its counters stay in its entry until the
 * model forgets it). NULL: no memory.
 */
static struct pool_proc *pool_proc_of(struct gp_metrics_pool *pool, const struct gp_process *p,
				      const char *labels)
{
	struct pool_proc *pp = pool_proc_find(pool, p);

	if (pp)
		return pp;
	if (GP_ARRAY_GROW(pool->procs, pool->cap, pool->n + 1, 16))
		return NULL;
	pp = &pool->procs[pool->n];
	*pp = (struct pool_proc){ .pid = p->pid,
				  .attach_ns = p->attach_ns,
				  .labels = strdup(labels) };
	if (!pp->labels || gp_u64map_put(&pool->by_pid, p->pid, (void *)(uintptr_t)(pool->n + 1))) {
		free(pp->labels);
		return NULL;
	}
	pool->n++;
	return pp;
}

int gp_metrics_pool_note(struct gp_metrics_pool *pool, const struct gp_model *m,
			 const struct gp_metrics_opts *o)
{
	struct render r = { .m = m, .o = o, .proc_root = o->proc_root ? o->proc_root : "/proc" };

	for (size_t i = 0; i < m->nprocs; i++) {
		const struct gp_process *p = m->procs[i];
		char *labels;

		if (p->exited || gp_u64map_get(&m->by_pid, p->pid) != p || pool_proc_find(pool, p))
			continue;
		labels = gp_metrics_label_text(&r, p);
		if (!labels || !pool_proc_of(pool, p, labels)) {
			free(labels);
			return -ENOMEM;
		}
		free(labels);
	}
	return 0;
}

/* The per-process families of r rendered into text (only process `only`'s; SIZE_MAX: none). */
static int render_alone(struct render *r, size_t only, char **text)
{
	struct render one = *r;
	size_t len = 0;
	int err = 0;

	one.labels = calloc(r->m->nprocs + 1, sizeof(*one.labels));
	one.out = one.labels ? open_memstream(text, &len) : NULL;
	if (!one.out) {
		free(one.labels);
		return -ENOMEM;
	}
	if (only < r->m->nprocs)
		one.labels[only] = r->labels[only];
	gp_metrics_process_families(&one);
	if (fclose(one.out))
		err = -ENOMEM;
	free(one.labels);
	return err;
}

/* Process i into the scrape: rendered alone under its group's labels, its samples taken. */
static int pool_process(struct render *r, struct page *pg, size_t i)
{
	struct pool_proc *pp = pool_proc_of(r->o->pool, r->m->procs[i], r->labels[i]);
	struct proc_run run = { .pg = pg, .pp = pp };
	char *text = NULL, *saved = r->labels[i];
	int err;

	if (!pp)
		return -ENOMEM;
	pp->seen = true;
	r->labels[i] = pp->labels; /* as first seen: its job is unknown once it has exited */
	err = render_alone(r, i, &text);
	r->labels[i] = saved;
	err = err ?: each_sample(pg, text, take_sample, &run);
	free(text);
	return err ?: add_counters(pg, &pp->counters);
}

/* Processes the model no longer has: their counters stay in their groups' series. */
static int retire_forgotten(struct gp_metrics_pool *pool, const struct gp_model *m)
{
	size_t kept = 0;
	int err = 0;

	gp_u64map_clear(&pool->by_pid, NULL);
	for (size_t i = 0; i < pool->n; i++) {
		struct pool_proc *pp = &pool->procs[i];
		const struct gp_process *p = gp_u64map_get(&m->by_pid, pp->pid);

		/* rendered now, or noted and not yet rendered (its process still the model's) */
		if (pp->seen || (p && p->attach_ns == pp->attach_ns)) {
			pp->seen = false;
			pool->procs[kept] = *pp;
			err = err
				      ?: gp_u64map_put(&pool->by_pid, pp->pid,
						       (void *)(uintptr_t)(kept + 1));
			kept++;
			continue;
		}
		for (size_t k = 0; k < pp->counters.n && !err; k++)
			err = add(&pool->retained, pp->counters.v[k].key, pp->counters.v[k].v,
				  pp->counters.v[k].seconds, ADD_SUM);
		proc_clear(pp);
	}
	pool->n = kept;
	return err;
}

static int write_page(const struct page *pg, FILE *out)
{
	for (size_t f = 0; f < pg->nfam; f++) {
		fputs(pg->fam[f].header, out);
		for (size_t i = 0; i < pg->sums[f].n; i++) {
			const struct series *s = &pg->sums[f].v[i];

			if (s->seconds)
				fprintf(out, "%s %llu.%09llu\n", s->key,
					(unsigned long long)(s->v / 1000000000ull),
					(unsigned long long)(s->v % 1000000000ull));
			else
				fprintf(out, "%s %llu\n", s->key, (unsigned long long)s->v);
		}
	}
	return ferror(out) ? -EIO : 0;
}

/* A baseline sample (the families' own, without a process: traced_processes 0) into the sums. */
static int take_baseline(void *ctx, size_t fam, const char *key, __u64 v, bool seconds)
{
	struct page *pg = ctx;

	return add(&pg->sums[fam], key, v, seconds, ADD_SUM);
}

int gp_metrics_pooled_families(struct render *r)
{
	struct gp_metrics_pool *pool = r->o->pool;
	struct page pg = { 0 };
	char *text = NULL, *copy = NULL;
	int err = render_alone(r, SIZE_MAX, &text);

	if (!err && !(copy = strdup(text)))
		err = -ENOMEM;
	err = err ?: read_families(&pg, text);
	err = err ?: each_sample(&pg, copy, take_baseline, &pg);
	for (size_t i = 0; i < r->m->nprocs && !err; i++)
		if (r->labels[i])
			err = pool_process(r, &pg, i);
	err = err ?: retire_forgotten(pool, r->m);
	err = err ?: add_counters(&pg, &pool->retained);
	err = err ?: write_page(&pg, r->out);
	for (size_t f = 0; f < pg.nfam; f++) {
		free(pg.fam[f].name);
		free(pg.fam[f].header);
		if (pg.sums)
			set_clear(&pg.sums[f]);
	}
	free(pg.fam);
	free(pg.sums);
	free(text);
	free(copy);
	return err;
}
