/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * probe_removal.c — taking probes away (see uprobes.h): a range of probes'
 * links (perf-event links from threads at once: each close waits for the
 * kernel's grace periods), a file's mid-session in the background (the
 * reaper thread, so that the event loop never waits), and the session's at
 * its end by forked GP_REMOVER_COMM processes that outlive it; the records
 * of what was detached. uprobes.c places the probes.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fds.h"
#include "log.h"
#include "probes/uprobes.h"
#include "probes/uprobes_internal.h"

/* ---- removing links --------------------------------------------------------- */

/* One probe's links, its return's first (gp_uprobes_detach_links says why). */
static void destroy_probe_links(struct gp_probe *p)
{
	for (int k = 1; k >= 0; k--) {
		if (p->multi_fd[k] >= 0)
			close(p->multi_fd[k]);
		p->multi_fd[k] = -1;
	}
	bpf_link__destroy(p->exit);
	bpf_link__destroy(p->enter);
	p->enter = p->exit = NULL;
}

/*
 * Removing a perf-event uprobe (kernels before 6.6, or --no-uprobe-multi)
 * waits for the tracepoint's RCU grace periods inside close(): ~0.1 s a
 * link on Debian 12's 6.1 under emulation, 20 s for a session's 234 links
 * one after another. Threads that close at once wait for the same grace
 * periods: each takes every DETACH_THREADS-th probe, whole (its return,
 * then its entry).
 */
#define DETACH_THREADS 64
#define DETACH_SERIAL  8 /* fewer perf-event probes than this: one after another */

struct detach_share {
	struct gp_probe *v;
	size_t n, stride, at;
};

static void *detach_share_main(void *arg)
{
	struct detach_share *d = arg;

	for (size_t i = d->at; i < d->n; i += d->stride)
		destroy_probe_links(&d->v[i]);
	return NULL;
}

/* The links of the n probes of v, from threads at once (n >= DETACH_SERIAL). */
static void destroy_links_at_once(struct gp_probe *v, size_t n)
{
	size_t nthreads = n / 2 < DETACH_THREADS ? n / 2 : DETACH_THREADS, started = 0;
	struct detach_share share[DETACH_THREADS];
	pthread_t th[DETACH_THREADS];

	for (size_t t = 0; t < nthreads; t++)
		share[t] = (struct detach_share){ .v = v, .n = n, .stride = nthreads, .at = t };
	while (started < nthreads &&
	       !pthread_create(&th[started], NULL, detach_share_main, &share[started]))
		started++;
	for (size_t t = started; t < nthreads; t++) /* the shares of threads that could not start */
		detach_share_main(&share[t]);
	for (size_t t = 0; t < started; t++)
		pthread_join(th[t], NULL);
}

/*
 * Removes the links of the probes [first, end), returns first: a return
 * probe without its entry would fire for calls it has no frame of (and say
 * return_without_entry); an entry without its return leaves a frame that
 * the next call on the thread drops (a missed return, or duty_cut).
 */
static bool any_links(const struct gp_uprobes *u, size_t first, size_t end)
{
	for (size_t i = first; i < end; i++)
		if (u->v[i].enter || u->v[i].exit || u->v[i].multi_fd[0] >= 0 ||
		    u->v[i].multi_fd[1] >= 0)
			return true;
	return false;
}

void gp_uprobes_detach_links(struct gp_uprobes *u, size_t first, size_t end)
{
	int lock;

	if (end > u->n)
		end = u->n;
	/* none left (handed to the removers, which hold the lock meanwhile): nothing to wait for */
	lock = any_links(u, first, end) ? gp_probes_lock() : -1;
	if (!u->multi && first + DETACH_SERIAL <= end)
		destroy_links_at_once(u->v + first, end - first);
	else
		for (size_t i = first; i < end; i++)
			destroy_probe_links(&u->v[i]);
	gp_probes_unlock(lock);
}

/* ---- removing a file's perf-event links in the background ------------------- */

/*
 * A file's last traced process is gone mid-session: removing its perf-event
 * links takes the kernel ~50 ms each (above), 5 s for the runtime's 52
 * pairs, and the event loop must not wait for it (a process held meanwhile
 * for a library of its own timed out at --hold-max-ms, its first calls
 * lost). The links go to a thread that removes them one at a time, taking
 * the probes lock for each (an attach waits one link at most); a file is
 * probed again only once its old links are gone (gp_uprobes_wait_file: they
 * would count its calls twice); the session's end takes what is left.
 */
struct gp_reaper {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	struct gp_probe *v; /* links only: enter, exit (multi_fd -1) */
	struct gp_reaper_key {
		__u64 dev, ino;
	} * keys, busy;
	size_t n, cap;
	bool busy_set, stop;
};

static void *reaper_main(void *arg)
{
	struct gp_reaper *r = arg;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		struct gp_probe p;
		int lock;

		while (!r->n && !r->stop)
			pthread_cond_wait(&r->work, &r->mu);
		if (!r->n)
			break;
		p = r->v[--r->n];
		r->busy = r->keys[r->n];
		r->busy_set = true;
		pthread_mutex_unlock(&r->mu);
		lock = gp_probes_lock();
		destroy_probe_links(&p);
		gp_probes_unlock(lock);
		pthread_mutex_lock(&r->mu);
		r->busy_set = false;
		pthread_cond_broadcast(&r->done);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

static struct gp_reaper *reaper_start(void)
{
	struct gp_reaper *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->work, NULL);
	pthread_cond_init(&r->done, NULL);
	if (pthread_create(&r->thread, NULL, reaper_main, r)) {
		free(r);
		return NULL;
	}
	return r;
}

/* Hands the links of [first, end) over (false: no room; they stay with the caller). */
static bool reaper_take(struct gp_reaper *r, struct gp_probe *v, size_t first, size_t end,
			__u64 dev, __u64 ino)
{
	size_t need;

	pthread_mutex_lock(&r->mu);
	need = r->n + (end - first);
	if (need > r->cap) {
		size_t cap = need * 2;
		struct gp_probe *nv = realloc(r->v, cap * sizeof(*nv));
		struct gp_reaper_key *nk = nv ? realloc(r->keys, cap * sizeof(*nk)) : NULL;

		if (nv)
			r->v = nv;
		if (!nk) {
			pthread_mutex_unlock(&r->mu);
			return false;
		}
		r->keys = nk;
		r->cap = cap;
	}
	for (size_t i = first; i < end; i++) {
		r->v[r->n] = (struct gp_probe){ .enter = v[i].enter,
						.exit = v[i].exit,
						.multi_fd = { -1, -1 } };
		r->keys[r->n++] = (struct gp_reaper_key){ .dev = dev, .ino = ino };
		v[i].enter = v[i].exit = NULL;
	}
	pthread_cond_signal(&r->work);
	pthread_mutex_unlock(&r->mu);
	return true;
}

static bool reaper_holds(const struct gp_reaper *r, __u64 dev, __u64 ino)
{
	if (r->busy_set && r->busy.dev == dev && r->busy.ino == ino)
		return true;
	for (size_t i = 0; i < r->n; i++)
		if (r->keys[i].dev == dev && r->keys[i].ino == ino)
			return true;
	return false;
}

void gp_uprobes_wait_file(struct gp_uprobes *u, __u64 dev, __u64 ino)
{
	struct gp_reaper *r = u->reaper;

	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	while (reaper_holds(r, dev, ino))
		pthread_cond_wait(&r->done, &r->mu);
	pthread_mutex_unlock(&r->mu);
}

/* The thread ends once its link in hand is removed; what it still had queued comes back (*n of them). */
static struct gp_probe *reaper_stop(struct gp_uprobes *u, size_t *n)
{
	struct gp_reaper *r = u->reaper;
	struct gp_probe *v;

	*n = 0;
	if (!r)
		return NULL;
	pthread_mutex_lock(&r->mu);
	v = r->v;
	*n = r->n;
	r->v = NULL;
	r->n = r->cap = 0;
	r->stop = true;
	pthread_cond_signal(&r->work);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->thread, NULL);
	free(r->keys);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->work);
	pthread_cond_destroy(&r->done);
	free(r);
	u->reaper = NULL;
	return v;
}

/* Removes the links of v[0..n) (from threads at once where many) and frees v. */
static void destroy_queued(struct gp_probe *v, size_t n)
{
	int lock = n ? gp_probes_lock() : -1;

	if (n >= DETACH_SERIAL)
		destroy_links_at_once(v, n);
	else
		for (size_t i = 0; i < n; i++)
			destroy_probe_links(&v[i]);
	gp_probes_unlock(lock);
	free(v);
}

/* What is still queued, removed here; the thread's last one awaited, and it ends. */
static void reaper_finish(struct gp_uprobes *u)
{
	size_t n;
	struct gp_probe *v = reaper_stop(u, &n);

	destroy_queued(v, n);
}

/* The bookkeeping of detached probes [first, end): their links are gone or handed over. */
static void detached(struct gp_uprobes *u, size_t first, size_t end)
{
	for (size_t i = first; i < end; i++) {
		struct gp_probe *p = &u->v[i];

		if (p->file_fd >= 0)
			close(p->file_fd);
		p->file_fd = -1;
		if (p->attached)
			u->nattached--;
		p->attached = false;
	}
}

void gp_uprobes_detach_file(struct gp_uprobes *u, size_t first, size_t n, __u64 dev, __u64 ino)
{
	size_t end = first + n < u->n ? first + n : u->n;

	if (!u->multi && first < end && !u->reaper)
		u->reaper = reaper_start();
	if (u->multi || first >= end || !u->reaper ||
	    !reaper_take(u->reaper, u->v, first, end, dev, ino))
		gp_uprobes_detach_links(u, first,
					end); /* fast (one link per file), or no thread: here */
	detached(u, first, end);
}

void gp_uprobes_detach(struct gp_uprobes *u, size_t first, size_t n)
{
	size_t end = first + n < u->n ? first + n : u->n;

	gp_uprobes_detach_links(u, first, end);
	detached(u, first, end);
}

void gp_uprobes_detach_all(struct gp_uprobes *u)
{
	reaper_finish(u); /* the files removed in the background, at once with the rest */
	gp_uprobes_detach(u, 0, u->n);
}

/* ---- the session's end: processes of their own ------------------------------ */

/*
 * The end of a session on perf-event links. Their removal is the kernel's:
 * each link's close waits for an RCU-tasks-trace grace period under one
 * lock (perf_event_detach_bpf_prog; on Debian 12's 6.1, 239 waits of
 * 25-41 ms under emulation for 117 probes) and for other grace periods
 * outside it, which closes from several processes at once share (16 s one
 * after another there, 10 s from 16 at once). The session need not wait:
 * counting stopped before, and a probe hit meanwhile costs its process the
 * trap and a program that returns at once. A process of its own, named
 * GP_REMOVER_COMM, and REMOVER_WORKERS - 1 of its children (same name)
 * each hold a share of the links and nothing else (no pipe someone reads
 * gpuprobed's output from, no ring buffer), and close them once the session
 * has dropped its references: a link a remover closed first would leave
 * the session's close the last one, and the wait with it. Two pipes order
 * it: "ready" ends when every remover holds only its share, "gate" when
 * the session holds nothing. The removers hold gp_probes_lock meanwhile (an
 * instance placing probes waits for them).
 */
#define REMOVER_WORKERS 16

static void wait_eof(int fd)
{
	char c;

	while (read(fd, &c, 1) < 0 && errno == EINTR)
		;
	close(fd);
}

/* What the removers share (forked from a process with threads: system calls only, fds.h). */
struct remover_job {
	int *fds;  /* the links, n of them: each probe's return, then its entry */
	int *keep; /* room for n + 3 */
	size_t n, shares;
	int ready_w, gate_r, start_r, start_w;
};

/* A process's links: share `own`, and every share from `extra` on (those no worker took). */
static bool owns(const struct remover_job *j, size_t i, size_t own, size_t extra)
{
	size_t share = (i / 2) % j->shares; /* by probe */

	return share == own || share >= extra;
}

/* Keeps this process's links and pipe p (-1: none); the ready pipe's end closed last. */
static void keep_only(const struct remover_job *j, size_t own, size_t extra, int p)
{
	size_t k = 0;

	for (size_t i = 0; i < j->n; i++)
		if (owns(j, i, own, extra))
			j->keep[k++] = j->fds[i];
	j->keep[k++] = j->ready_w;
	j->keep[k++] = p;
	if (own == 0)
		j->keep[k++] = j->start_w;
	gp_fds_close_all_but(j->keep, k, 0);
	close(j->ready_w); /* the session learns this process holds only its share */
}

static void close_owned(const struct remover_job *j, size_t own, size_t extra)
{
	for (size_t i = 0; i < j->n; i++)
		if (owns(j, i, own, extra))
			close(j->fds[i]);
}

static __attribute__((noreturn)) void remover(const struct remover_job *j)
{
	size_t forked = 0;
	sigset_t all;
	int lock;

	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL); /* SIGKILL only; an exit removes them anyway */
	setsid();
	prctl(PR_SET_NAME, GP_REMOVER_COMM);
	while (forked + 1 < j->shares) {
		pid_t w = fork();
		size_t own = forked + 1;

		if (w < 0)
			break; /* the shares left are this process's */
		if (w == 0) {
			keep_only(j, own, j->shares, j->start_r);
			wait_eof(j->start_r);
			close_owned(j, own, j->shares);
			_exit(0);
		}
		forked++;
	}
	keep_only(j, 0, forked + 1, j->gate_r);
	wait_eof(j->gate_r); /* the session holds none of them now */
	lock = open("/sys/fs/bpf", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	while (lock >= 0 && flock(lock, LOCK_EX) && errno == EINTR)
		;
	close(j->start_w); /* the workers start */
	close_owned(j, 0, forked + 1);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
	_exit(0); /* the lock goes with it */
}

/* The link descriptors of v[0..n), into fds (returns, then entries, probe by probe). */
static size_t link_fds(const struct gp_probe *v, size_t n, int *fds)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (v[i].exit && bpf_link__fd(v[i].exit) >= 0)
			fds[k++] = bpf_link__fd(v[i].exit);
		if (v[i].enter && bpf_link__fd(v[i].enter) >= 0)
			fds[k++] = bpf_link__fd(v[i].enter);
	}
	return k;
}

static void close_pipes(int (*p)[2], int n)
{
	for (int i = 0; i < n; i++)
		for (int k = 0; k < 2; k++)
			if (p[i][k] >= 0)
				close(p[i][k]);
}

/*
 * Forks the removers of j's links (j->fds, j->n; j->keep has room); the
 * first one's pid, or -errno. Returns once each holds only its share;
 * *gate: the pipe end to close once the session holds none (-1 on failure).
 */
static pid_t start_remover(struct remover_job *j, int *gate)
{
	int back[2] = { -1, -1 }, p[3][2] = { { -1, -1 }, { -1, -1 }, { -1, -1 } }, st;
	pid_t child, pid = -1;

	*gate = -1;
	if (pipe2(back, O_CLOEXEC) || pipe2(p[0], O_CLOEXEC) || pipe2(p[1], O_CLOEXEC) ||
	    pipe2(p[2], O_CLOEXEC)) {
		int err = -errno;

		close_pipes(&back, 1);
		close_pipes(p, 3);
		return err;
	}
	j->ready_w = p[0][1];
	j->gate_r = p[1][0];
	j->start_r = p[2][0];
	j->start_w = p[2][1];
	child = fork();
	if (child == 0) { /* the removers' parent, gone at once: init reaps them */
		pid_t first = fork();

		if (first == 0)
			remover(j);
		if (write(back[1], &first, sizeof(first)) != sizeof(first))
			_exit(1);
		_exit(first > 0 ? 0 : 1);
	}
	close(back[1]);
	close(p[0][1]);
	close(p[1][0]);
	close_pipes(&p[2], 1);
	if (child > 0) {
		if (read(back[0], &pid, sizeof(pid)) != sizeof(pid))
			pid = -1;
		while (waitpid(child, &st, 0) < 0 && errno == EINTR)
			;
	}
	close(back[0]);
	if (pid > 0)
		wait_eof(p[0][0]); /* every remover holds only its share */
	else
		close(p[0][0]);
	if (pid > 0)
		*gate = p[1][1];
	else
		close(p[1][1]);
	return pid > 0 ? pid : -ECHILD;
}

pid_t gp_uprobes_detach_all_in_background(struct gp_uprobes *u)
{
	size_t nq, cap;
	struct gp_probe *queued;
	struct remover_job j = { .shares = REMOVER_WORKERS };
	int gate = -1;
	pid_t pid = 0;

	if (u->multi) {
		gp_uprobes_detach_all(u); /* a file at once: fast */
		return 0;
	}
	queued = reaper_stop(u, &nq);
	cap = 2 * (u->n + nq);
	j.fds = malloc((2 * cap + 3) * sizeof(*j.fds));
	if (j.fds) {
		j.keep = j.fds + cap;
		j.n = link_fds(u->v, u->n, j.fds);
		j.n += link_fds(queued, nq, j.fds + j.n);
		if (j.shares > j.n / 2)
			j.shares = j.n / 2 ? j.n / 2 : 1;
		if (j.n >= 2 * DETACH_SERIAL)
			pid = start_remover(&j, &gate);
	}
	free(j.fds);
	if (pid < 0)
		gp_warn("cannot start the processes that remove the probes after the session (%s): removing them now",
			strerror((int)-pid));
	/* with removers, each close only drops a reference (they hold them all) */
	destroy_queued(queued, nq);
	gp_uprobes_detach(u, 0, u->n);
	if (gate >= 0)
		close(gate); /* the removers start */
	return pid > 0 ? pid : 0;
}
