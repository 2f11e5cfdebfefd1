/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* uprobes.c — attach/detach the generic API probe pairs (see uprobes.h). */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "fds.h"
#include "probes/uprobe_multi.h"
#include "probes/uprobes.h"
#include "log.h"

void gp_uprobes_init(struct gp_uprobes *u, struct bpf_program *enter_prog,
		     struct bpf_program *exit_prog, bool multi, int sites_fd)
{
	memset(u, 0, sizeof(*u));
	u->enter_prog = enter_prog;
	u->exit_prog = exit_prog;
	u->multi = multi;
	u->sites_fd = sites_fd;
}

/*
 * Placing and removing uprobes, one gpuprobed instance at a time on this
 * machine: on Linux 6.18, uprobe_multi links registered on a file while
 * another instance's links on the same file are being removed (or placed)
 * were seen to fail (ENOTSUPP: the kernel read its own breakpoint as the
 * probed instruction) and to crash the processes running through them
 * (SIGSEGV); two instances that each place and remove probes as processes
 * come and go hit it within seconds. An advisory lock on the bpffs root,
 * which every instance opens, serialises them: the crashes stopped (0 in
 * 28 two-instance runs, against 1 in 12 without it); an attach can still
 * be refused with ENOTSUPP now and then (said, that file not traced by that
 * instance: the README's limits). Where the lock cannot be taken, the
 * work goes on unlocked.
 */
static int probes_lock(void)
{
	static bool said;
	int fd = open("/sys/fs/bpf", O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = -1;

	if (fd >= 0) {
		while ((rc = flock(fd, LOCK_EX)) && errno == EINTR)
			;
		if (rc == 0)
			return fd;
		rc = errno;
		close(fd);
		errno = rc;
	}
	if (!said)
		gp_info("/sys/fs/bpf: %s: probes are placed without taking turns with other gpuprobed instances",
			strerror(errno));
	said = true;
	return -1;
}

static void probes_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* releases the lock */
}

static bool offset_probed(const struct gp_uprobes *u, size_t from, __u64 offset)
{
	for (size_t i = from; i < u->n; i++)
		if (u->v[i].offset == offset)
			return true;
	return false;
}


bool gp_uprobes_aggregatable(enum gp_api_id api)
{
	return api > GP_API_INVALID && api < GP_API_MAX && gp_shapes[gp_apis[api].shape].agg;
}

static __u64 probe_cookie(const struct gp_uprobes *u, const struct gp_probe *p)
{
	unsigned flags = gp_api_cookie_flags(p->api);

	if (u->stacks && gp_api_wants_stack(p->api))
		flags |= GP_CK_USTACK;
	/* the session never asks for both: a stack is a per-call record */
	if (u->aggregate && !(flags & GP_CK_USTACK) && gp_uprobes_aggregatable(p->api))
		flags |= GP_CK_AGG;
	if (p->gated)
		flags |= GP_CK_GATED;
	return GP_COOKIE(p->api, p->idx, flags);
}

/*
 * Gating: the probes whose calls the kernel aggregates are the hot ones
 * (launches, synchronisations, event and stream calls), and the only ones
 * whose counts can be scaled up from a part of the time: every other call
 * changes state the model tracks (memory, communicators).
 */
static bool gated(const struct gp_uprobes *u, const struct gp_probe *p)
{
	return u->gating && u->aggregate && (GP_COOKIE_FLAGS(probe_cookie(u, p)) & GP_CK_AGG);
}

/*
 * The file's gated probes go last (a link group of their own), keeping each
 * record's idx equal to its index; the first of them keeps the file open.
 */
static int group_gated(struct gp_uprobes *u, size_t first, const char *attach_path)
{
	size_t cnt = u->n - first, k = 0, ngated = 0;
	struct gp_probe *tmp;

	for (size_t i = first; i < u->n; i++)
		u->v[i].gated = gated(u, &u->v[i]);
	if (!(tmp = malloc(cnt * sizeof(*tmp))))
		return -ENOMEM;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = first; i < u->n; i++)
			if (u->v[i].gated == (pass == 1))
				tmp[k++] = u->v[i];
	for (size_t i = 0; i < cnt; i++) {
		tmp[i].idx = (unsigned)(first + i);
		ngated += tmp[i].gated;
	}
	memcpy(&u->v[first], tmp, cnt * sizeof(*tmp));
	free(tmp);
	if (!ngated)
		return 0;
	{
		struct gp_probe *g = &u->v[u->n - ngated];

		g->ngated = (unsigned)ngated;
		g->file_fd = open(attach_path, O_RDONLY | O_CLOEXEC);
		if (g->file_fd < 0)
			return -errno;
	}
	return 0;
}

/* Records a probe for every traced function of family in elf (nothing attached yet). */
static int collect_probes(struct gp_uprobes *u, pid_t pid, const char *display_path, __u64 kdev,
			  __u64 ino, const struct gp_elf_syms *elf, enum gp_family family)
{
	size_t first = u->n;

	for (int api = GP_API_INVALID + 1; api < GP_API_MAX; api++) {
		const struct gp_api_info *info = &gp_apis[api];
		const struct gp_elf_sym *sym;
		struct gp_probe *p;
		__u64 offset;

		if (info->family != family || !(sym = gp_elf_syms_find(elf, info->symbol)))
			continue;
		if (gp_elf_vaddr_to_offset(elf, sym->addr, &offset)) {
			gp_warn("attach %s:%s: address 0x%llx is in no loadable segment", display_path,
				info->symbol, (unsigned long long)sym->addr);
			continue;
		}
		if (offset_probed(u, first, offset))
			continue; /* an alias of a function already probed in this file */
		if (u->n >= GP_MAX_PROBES) {
			gp_err("attach %s:%s: more than %d probes", display_path, info->symbol,
			       GP_MAX_PROBES);
			return -E2BIG;
		}
		if (GP_ARRAY_GROW(u->v, u->cap, u->n + 1, 64))
			return -ENOMEM;
		p = &u->v[u->n];
		memset(p, 0, sizeof(*p));
		p->idx = (unsigned)u->n;
		p->api = api;
		p->pid = pid;
		p->offset = offset;
		p->kdev = kdev;
		p->ino = ino;
		p->multi_fd[0] = p->multi_fd[1] = -1;
		p->file_fd = -1;
		if (!(p->target = strdup(display_path)))
			return -ENOMEM;
		u->n++;
	}
	return 0;
}

static void forget_probes(struct gp_uprobes *u, size_t first)
{
	while (u->n > first) {
		struct gp_probe *p = &u->v[--u->n];

		if (p->file_fd >= 0)
			close(p->file_fd);
		free(p->target);
	}
}

/*
 * One link pair for the probes [first, end). Return probes first: an entry
 * never waits for a return that cannot come (at a file's first attach, a
 * call already running returns unseen and says return_without_entry). A
 * gate's opening goes entries first instead: a call that enters before its
 * return probe is in place is counted as duty_cut, not as a loss.
 */
static int attach_multi(struct gp_uprobes *u, size_t first, size_t end, pid_t pid, const char *attach_path,
			bool entries_first)
{
	size_t cnt = end - first;
	__u64 *offsets = calloc(cnt, sizeof(*offsets)), *cookies = calloc(cnt, sizeof(*cookies));
	int fds[2] = { -1, -1 }, err = 0;

	if (!offsets || !cookies) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < cnt; i++) {
		offsets[i] = u->v[first + i].offset;
		cookies[i] = probe_cookie(u, &u->v[first + i]);
	}
	for (int k = 0; k < 2; k++) {
		bool ret = entries_first ? k == 1 : k == 0;
		int fd = gp_uprobe_multi_attach(bpf_program__fd(ret ? u->exit_prog : u->enter_prog), attach_path,
						offsets, cookies, (__u32)cnt, pid, ret);

		if (fd < 0) {
			err = fd;
			if (fds[0] >= 0)
				close(fds[0]);
			if (fds[1] >= 0)
				close(fds[1]);
			goto out;
		}
		fds[ret] = fd;
	}
	u->v[first].multi_fd[0] = fds[0];
	u->v[first].multi_fd[1] = fds[1];
out:
	free(offsets);
	free(cookies);
	return err;
}

/*
 * Without attach cookies, the programs find a probe's cookie by its site:
 * the file as the kernel names it (its inode's device, the encoding of
 * gp_file_key, and number: what the mapping's file is, behind an overlay its
 * layer's) and the offset. Written before the probe is placed, so its first
 * hit finds it.
 */
static int publish_site(const struct gp_uprobes *u, const struct gp_probe *p)
{
	struct gp_probe_site k = { .dev = p->kdev, .ino = p->ino, .offset = p->offset };
	__u64 cookie = probe_cookie(u, p);

	/* never removed: a session has at most GP_MAX_PROBES probes, a site placed again is overwritten */
	return bpf_map_update_elem(u->sites_fd, &k, &cookie, BPF_ANY) ? -errno : 0;
}

/* One perf-event link per probe and direction, in the order attach_multi explains. */
static int attach_perf(struct gp_uprobes *u, size_t first, size_t end, pid_t pid, const char *attach_path,
		       bool entries_first)
{
	for (size_t i = first; i < end; i++) {
		struct gp_probe *p = &u->v[i];
		int err;

		if (u->sites_fd >= 0 && (err = publish_site(u, p)))
			return err;

		for (int k = 0; k < 2; k++) {
			bool ret = entries_first ? k == 1 : k == 0;
			/* a kernel without cookies: libbpf refuses one (the site says it, publish_site) */
			LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = ret,
				    .bpf_cookie = u->sites_fd >= 0 ? 0 : probe_cookie(u, p));
			struct bpf_link *l = bpf_program__attach_uprobe_opts(ret ? u->exit_prog : u->enter_prog,
									     pid ? pid : -1, attach_path,
									     (size_t)p->offset, &opts);

			if (!l)
				return -errno;
			*(ret ? &p->exit : &p->enter) = l;
		}
	}
	return 0;
}

static int attach_group(struct gp_uprobes *u, size_t first, size_t end, pid_t pid, const char *attach_path,
			bool entries_first)
{
	int lock, err;

	if (first == end)
		return 0;
	lock = probes_lock();
	err = u->multi ? attach_multi(u, first, end, pid, attach_path, entries_first)
		       : attach_perf(u, first, end, pid, attach_path, entries_first);
	probes_unlock(lock);
	return err;
}

/* One probe's links, its return's first (detach_links says why). */
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
#define DETACH_SERIAL 8 /* fewer perf-event probes than this: one after another */

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
	while (started < nthreads && !pthread_create(&th[started], NULL, detach_share_main, &share[started]))
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
		if (u->v[i].enter || u->v[i].exit || u->v[i].multi_fd[0] >= 0 || u->v[i].multi_fd[1] >= 0)
			return true;
	return false;
}

static void detach_links(struct gp_uprobes *u, size_t first, size_t end)
{
	int lock;

	if (end > u->n)
		end = u->n;
	/* none left (handed to the removers, which hold the lock meanwhile): nothing to wait for */
	lock = any_links(u, first, end) ? probes_lock() : -1;
	if (!u->multi && first + DETACH_SERIAL <= end)
		destroy_links_at_once(u->v + first, end - first);
	else
		for (size_t i = first; i < end; i++)
			destroy_probe_links(&u->v[i]);
	probes_unlock(lock);
}

/* The file's gated probes start at *g (u->n when none). */
static size_t gated_start(const struct gp_uprobes *u, size_t first)
{
	size_t g = first;

	while (g < u->n && !u->v[g].gated)
		g++;
	return g;
}

int gp_uprobes_attach_file(struct gp_uprobes *u, pid_t pid, const char *attach_path,
			   const char *display_path, __u64 kdev, __u64 ino,
			   const struct gp_elf_syms *elf, enum gp_family family, size_t *first_out)
{
	size_t first = u->n, g;
	int err = collect_probes(u, pid, display_path, kdev, ino, elf, family);

	*first_out = first;
	if (!err && u->n > first)
		err = group_gated(u, first, attach_path);
	g = gated_start(u, first);
	if (!err)
		err = attach_group(u, first, g, pid, attach_path, false);
	if (!err && u->gate_open)
		err = attach_group(u, g, u->n, pid, attach_path, true);
	if (err) {
		if (pid)
			gp_err("attach %s (pid %d): %s", display_path, (int)pid, strerror(-err));
		else
			gp_err("attach %s: %s", display_path, strerror(-err));
		detach_links(u, first, u->n);
		forget_probes(u, first);
		return err;
	}
	for (size_t i = first; i < u->n; i++)
		u->v[i].attached = true;
	u->nattached += u->n - first;
	return (int)(u->n - first);
}

int gp_uprobes_gate(struct gp_uprobes *u, bool open)
{
	int first_err = 0;

	if (open == u->gate_open)
		return 0;
	u->gate_open = open;
	for (size_t i = 0; i < u->n; i++) {
		struct gp_probe *g = &u->v[i];
		char path[64];
		int err;

		if (g->file_fd < 0 || !g->attached)
			continue;
		if (!open) {
			detach_links(u, i, i + g->ngated);
			continue;
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", g->file_fd);
		err = attach_group(u, i, i + g->ngated, g->pid, path, true);
		if (err) {
			detach_links(u, i, i + g->ngated);
			gp_err("attach the hot probes of %s again: %s", g->target, strerror(-err));
			if (!first_err)
				first_err = err;
		}
	}
	return first_err;
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
	} *keys, busy;
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
		lock = probes_lock();
		destroy_probe_links(&p);
		probes_unlock(lock);
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
static bool reaper_take(struct gp_reaper *r, struct gp_probe *v, size_t first, size_t end, __u64 dev, __u64 ino)
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
		r->v[r->n] = (struct gp_probe){ .enter = v[i].enter, .exit = v[i].exit, .multi_fd = { -1, -1 } };
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
	int lock = n ? probes_lock() : -1;

	if (n >= DETACH_SERIAL)
		destroy_links_at_once(v, n);
	else
		for (size_t i = 0; i < n; i++)
			destroy_probe_links(&v[i]);
	probes_unlock(lock);
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
	if (u->multi || first >= end || !u->reaper || !reaper_take(u->reaper, u->v, first, end, dev, ino))
		detach_links(u, first, end); /* fast (one link per file), or no thread: here */
	detached(u, first, end);
}

void gp_uprobes_detach(struct gp_uprobes *u, size_t first, size_t n)
{
	size_t end = first + n < u->n ? first + n : u->n;

	detach_links(u, first, end);
	detached(u, first, end);
}

void gp_uprobes_detach_all(struct gp_uprobes *u)
{
	reaper_finish(u); /* the files removed in the background, at once with the rest */
	gp_uprobes_detach(u, 0, u->n);
}

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
 * the session holds nothing. The removers hold probes_lock meanwhile (an
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
	int *fds;   /* the links, n of them: each probe's return, then its entry */
	int *keep;  /* room for n + 3 */
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
	if (pipe2(back, O_CLOEXEC) || pipe2(p[0], O_CLOEXEC) || pipe2(p[1], O_CLOEXEC) || pipe2(p[2], O_CLOEXEC)) {
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

void gp_uprobes_release(struct gp_uprobes *u)
{
	gp_uprobes_detach_all(u);
	forget_probes(u, 0);
	free(u->v);
	memset(u, 0, sizeof(*u));
}

/* ---- the cost of a hit ------------------------------------------------------ */

#define GP_HIT_CALLS 4000

/*
 * The function the measurement probes: a real call that begins with
 * push %rbp, as most CUDA entry points do (the kernel emulates that
 * instruction; a compiler may start a leaf function with one it must
 * single-step instead, ten times dearer). Written in assembly so that no
 * compiler option changes its first instruction.
 */
int gp_hit_cost_target(int x);
asm(".text\n"
    ".globl gp_hit_cost_target\n"
    ".type gp_hit_cost_target, @function\n"
    "gp_hit_cost_target:\n"
    "\tpush %rbp\n"
    "\tmov %rsp, %rbp\n"
    "\tlea 1(%rdi), %eax\n"
    "\tpop %rbp\n"
    "\tret\n"
    ".size gp_hit_cost_target, .-gp_hit_cost_target\n");

/*
 * ns per call of GP_HIT_CALLS calls of the target (the fastest of three
 * rounds), on the thread's CPU clock: the kernel's work at a hit is the
 * thread's, time off the CPU (a busy machine) is not.
 */
static double time_calls(void)
{
	double best = -1;

	for (int round = 0; round < 3; round++) {
		struct timespec a, b;
		volatile int x = 0;
		double ns;

		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
		for (int i = 0; i < GP_HIT_CALLS; i++)
			x = gp_hit_cost_target(x);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
		ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / GP_HIT_CALLS;
		if (best < 0 || ns < best)
			best = ns;
	}
	return best;
}

/* The file offset of the target in our own executable (/proc/self/maps). */
static int target_offset(__u64 *offset)
{
	unsigned long long lo, hi, off, addr = (unsigned long long)(uintptr_t)gp_hit_cost_target;
	char line[512], perms[8];
	FILE *f = fopen("/proc/self/maps", "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx %7s %llx", &lo, &hi, perms, &off) == 4 && addr >= lo && addr < hi &&
		    perms[2] == 'x') {
			*offset = addr - lo + off;
			err = 0;
			break;
		}
	fclose(f);
	return err;
}

double gp_uprobes_measure_call_ns(struct gp_uprobes *u, enum gp_api_id api, unsigned idx)
{
	struct gp_probe p = { .idx = idx, .api = api, .pid = getpid(), .multi_fd = { -1, -1 }, .file_fd = -1 };
	struct gp_uprobes one = *u;
	double bare, probed;
	int err;

	if ((err = target_offset(&p.offset)))
		return err;
	one.v = &p;
	one.n = one.cap = 1;
	bare = time_calls();
	err = attach_group(&one, 0, 1, p.pid, "/proc/self/exe", false);
	probed = err ? -1 : time_calls();
	detach_links(&one, 0, 1);
	if (err)
		return err;
	if (probed < bare)
		return -ERANGE;
	return probed - bare; /* an entry and a return */
}

double gp_uprobes_measure_hit_ns(struct gp_uprobes *u)
{
	double call = gp_uprobes_measure_call_ns(u, GP_API_INVALID, 0);

	return call > 0 ? call / 2 : call;
}
