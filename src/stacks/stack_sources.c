/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * stack_sources.c — the unwind tables and Python interpreters of the traced
 * processes, kept current for the kernel's stack walk (stack_sources.h).
 *
 * The builder thread owns the gp_unwind (nothing else touches it): it takes
 * requests from a queue — publish a process's mappings, forget a process —
 * in order, one pending publish per process. A publish for a held process
 * ends with its SIGCONT; one the caller waits for signals it. A publish
 * asked for because code was mapped waits a little after the mmap's entry
 * (it is usually made by then) and is asked again at its return (then it
 * surely is: the kernel stops walking by the mappings until that publish),
 * and gathers the mappings of a burst (an import loading many extension
 * modules) into one.
 *
 * Python is looked for on the caller's thread (the resolver names Python
 * frames there): at admission, then at each settle while the interpreter is
 * not up yet or its library not mapped yet, for a while, and at once when it is
 * held for a CUDA library it maps (stopped, before its first traced call).
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array.h"
#include "stacks/stack_sources.h"
#include "log.h"
#include "stacks/python.h"

/* A code mapping is usually made this long after the kernel reported the mmap's entry (its return is reported too). */
#define CODE_MAP_SETTLE_NS (2 * 1000000ull)
/* A burst of code mappings is published at most this long after its first one. */
#define CODE_MAP_BURST_NS  (50 * 1000000ull)
/* How often an interpreter not found or not up yet is looked for again, and for how long. */
#define PY_RETRY_NS	   (10 * 1000000ull)
#define PY_LOOK_NS	   (2000 * 1000000ull)	/* no CPython mapped: it may dlopen one early on */
#define PY_INIT_WAIT_NS	   (10000 * 1000000ull) /* CPython mapped, not initialized yet */

enum req_kind { REQ_PUBLISH, REQ_FORGET };

struct request {
	pid_t pid;
	enum req_kind kind;
	bool then_continue;  /* REQ_PUBLISH of a held process: SIGCONT once published */
	__u64 seq;	     /* its number: done once ss->done_seq reaches it */
	__u64 not_before_ns; /* REQ_PUBLISH after a code mapping */
	__u64 first_ns;	     /* when the first mapping of its burst was reported */
};

/* What was found of a process's interpreter, for the model at the next settle (it may not have the process yet). */
struct py_note {
	pid_t pid;
	__u32 hexversion;
	bool walked;
	char line[640];
};

/* A process whose interpreter is looked for again. */
struct py_pending {
	pid_t pid;
	__u64 since_ns, next_ns;
	unsigned looks;	 /* looks so far */
	unsigned early;	 /* ... that found CPython not verifiable yet (-EAGAIN) */
	char first[320]; /* why the first of those could not verify it */
	char last[320];	 /* why the latest could not: the refusal's reason if it stays so */
};

struct gp_stack_sources {
	struct gp_model *model;
	gp_ss_continue_fn continue_fn; /* how a hold is continued (NULL: SIGCONT) */
	void *continue_ctx;
	struct gp_python *py;
	int py_fd;

	/* the builder */
	struct gp_unwind *unwind; /* NULL: no tables */
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stopping;
	pthread_cond_t done; /* a request was carried out (done_seq moved) */
	struct request *q;   /* FIFO */
	size_t qhead, qn, qcap;
	__u64 next_seq, done_seq;
	struct gp_unwind_stats
		stats; /* after the latest request (the builder's copy for the others) */

	/* the caller's */
	struct py_pending *pending;
	size_t npending, pending_cap;
	pid_t *forget; /* exited: Python names forgotten at the next settle */
	size_t nforget, forget_cap;
	struct py_note *notes;
	size_t nnotes, notes_cap;
};

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* ---- the builder thread ----------------------------------------------------------------------- */

static void publish(struct gp_stack_sources *ss, pid_t pid)
{
	int err = gp_unwind_process(ss->unwind, pid);

	if (err == -ENOSPC)
		gp_warn("pid %d: its unwind tables are not published: %d processes have theirs already; "
			"its stacks follow frame pointers",
			(int)pid, GP_UW_MAX_PROCS);
	else if (err && err != -ESRCH)
		gp_warn("pid %d: publishing its unwind tables: %s", (int)pid, strerror(-err));
}

static void continue_held(struct gp_stack_sources *ss, pid_t pid)
{
	if (ss->continue_fn)
		ss->continue_fn(ss->continue_ctx, pid);
	else if (kill(pid, SIGCONT) && errno != ESRCH)
		gp_warn("pid %d: cannot continue it: %s", (int)pid, strerror(errno));
}

void gp_stack_sources_continue_by(struct gp_stack_sources *ss, gp_ss_continue_fn fn, void *ctx)
{
	if (ss) {
		ss->continue_fn = fn;
		ss->continue_ctx = ctx;
	}
}

static void *builder(void *arg)
{
	struct gp_stack_sources *ss = arg;

	pthread_mutex_lock(&ss->lock);
	for (;;) {
		struct request r;
		__u64 now;

		while (!ss->qn && !ss->stopping)
			pthread_cond_wait(&ss->wake, &ss->lock);
		if (!ss->qn)
			break; /* stopping, nothing left */
		r = ss->q[ss->qhead];
		now = now_ns();
		if (r.kind == REQ_PUBLISH && r.not_before_ns > now && !ss->stopping) {
			struct timespec until;
			__u64 wait = r.not_before_ns - now;

			clock_gettime(CLOCK_REALTIME, &until); /* the condition variable's clock */
			until.tv_sec += (time_t)(wait / 1000000000ull);
			until.tv_nsec += (long)(wait % 1000000000ull);
			if (until.tv_nsec >= 1000000000L) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&ss->wake, &ss->lock, &until);
			continue; /* the head may have been pushed back meanwhile */
		}
		ss->qhead++;
		ss->qn--;
		pthread_mutex_unlock(&ss->lock);
		if (r.kind == REQ_PUBLISH)
			publish(ss, r.pid);
		else
			gp_unwind_forget(ss->unwind, r.pid);
		if (r.then_continue)
			continue_held(ss, r.pid);
		pthread_mutex_lock(&ss->lock);
		gp_unwind_get_stats(ss->unwind, &ss->stats);
		ss->done_seq = r.seq;
		pthread_cond_broadcast(&ss->done);
	}
	pthread_mutex_unlock(&ss->lock);
	return NULL;
}

/*
 * Queues a request (lock held); returns its number. A publish for a
 * process already waiting for one is merged into it: the hold taken over,
 * the later not_before (within its burst's bound, none for a hold).
 */
static __u64 enqueue(struct gp_stack_sources *ss, struct request r)
{
	if (r.kind == REQ_PUBLISH)
		for (size_t i = ss->qhead; i < ss->qhead + ss->qn; i++) {
			struct request *x = &ss->q[i];

			if (x->pid != r.pid)
				continue;
			if (x->kind == REQ_FORGET)
				break; /* a reused pid: publish after the forget */
			if (r.then_continue || x->then_continue) {
				x->then_continue = true;
				x->not_before_ns = 0;
			} else if (r.not_before_ns > x->not_before_ns) {
				x->not_before_ns = r.not_before_ns < x->first_ns + CODE_MAP_BURST_NS
							   ? r.not_before_ns
							   : x->first_ns + CODE_MAP_BURST_NS;
			}
			return x->seq;
		}
	if (ss->qhead && ss->qhead + ss->qn == ss->qcap) { /* room at the front: slide */
		memmove(ss->q, ss->q + ss->qhead, ss->qn * sizeof(*ss->q));
		ss->qhead = 0;
	}
	if (GP_ARRAY_GROW(ss->q, ss->qcap, ss->qhead + ss->qn + 1, 64)) {
		gp_warn("pid %d: its unwind tables are not updated: out of memory", (int)r.pid);
		if (r.then_continue)
			continue_held(ss, r.pid);
		return 0;
	}
	r.seq = ++ss->next_seq;
	ss->q[ss->qhead + ss->qn++] = r;
	pthread_cond_signal(&ss->wake);
	return r.seq;
}

/* false when there are no tables (or tracing stopped): nothing was queued. */
static bool request(struct gp_stack_sources *ss, struct request r, bool wait)
{
	__u64 seq;

	if (!ss->unwind)
		return false;
	pthread_mutex_lock(&ss->lock);
	if (ss->stopping) {
		pthread_mutex_unlock(&ss->lock);
		return false;
	}
	r.first_ns = now_ns();
	seq = enqueue(ss, r);
	while (wait && seq && ss->done_seq < seq && !ss->stopping)
		pthread_cond_wait(&ss->done, &ss->lock);
	pthread_mutex_unlock(&ss->lock);
	return seq != 0;
}

/* ---- Python ------------------------------------------------------------------------------------ */

static struct py_pending *find_pending(struct gp_stack_sources *ss, pid_t pid)
{
	for (size_t i = 0; i < ss->npending; i++)
		if (ss->pending[i].pid == pid)
			return &ss->pending[i];
	return NULL;
}

static void note(struct gp_stack_sources *ss, pid_t pid, __u32 hexversion, bool walked,
		 const char *line)
{
	struct py_note *n;

	if (GP_ARRAY_GROW(ss->notes, ss->notes_cap, ss->nnotes + 1, 8))
		return; /* out of memory: the report does not say it (the log did) */
	n = &ss->notes[ss->nnotes++];
	*n = (struct py_note){ .pid = pid, .hexversion = hexversion, .walked = walked };
	snprintf(n->line, sizeof(n->line), "%s", line);
}

static void drop_pending(struct gp_stack_sources *ss, pid_t pid)
{
	struct py_pending *p = find_pending(ss, pid);

	if (p)
		*p = ss->pending[--ss->npending];
}

/* How long until pid is looked at again: often at first (an interpreter starting), then less. */
static __u64 look_delay(const struct py_pending *p)
{
	return p->looks < 50 ? PY_RETRY_NS : 10 * PY_RETRY_NS;
}

/*
 * Looks for pid's interpreter once. true: settled (found, refused, gone,
 * or not a CPython process for good); false: look again later. A look that
 * finds CPython not verifiable yet (-EAGAIN: too early, e.g. before the loader
 * relocated it) is never taken as a verdict: it is looked at again until it
 * can be verified or PY_INIT_WAIT_NS have gone by, and the report says so.
 */
static bool look_for_python(struct gp_stack_sources *ss, struct py_pending *pend, __u64 now)
{
	struct gp_py_probe pr;
	pid_t pid = pend->pid;
	int err = gp_python_probe(ss->py, pid, &pr);
	char line[sizeof(pr.line) + sizeof(pend->first) + 96];

	pend->looks++;
	if (!err) {
		if (pend->early)
			snprintf(line, sizeof(line),
				 "%s; verified at look %u, after %u too early (the first: %s)",
				 pr.line, pend->looks, pend->early, pend->first);
		else
			snprintf(line, sizeof(line), "%s", pr.line);
		err = bpf_map_update_elem(ss->py_fd, &(__u32){ (__u32)pid }, &pr.proc, BPF_ANY);
		if (err) {
			err = -errno;
			gp_warn("pid %d: its Python frames are not walked: py_procs: %s", (int)pid,
				strerror(-err));
			note(ss, pid, pr.hexversion, false, strerror(-err));
		} else {
			gp_info("pid %d: %s", (int)pid, line);
			note(ss, pid, pr.hexversion, true, line);
		}
		return true;
	}
	if (err == -ENOTSUP) {
		gp_notice("pid %d: its Python frames are not walked: %s", (int)pid, pr.line);
		note(ss, pid, pr.hexversion, false, pr.line);
		return true;
	}
	if (err == -EAGAIN || err == -ENOENT) {
		if (err == -EAGAIN) {
			if (!pend->early++)
				snprintf(pend->first, sizeof(pend->first), "%s", pr.line);
			snprintf(pend->last, sizeof(pend->last), "%s", pr.line);
		}
		if (now - pend->since_ns < (pend->early ? PY_INIT_WAIT_NS : PY_LOOK_NS))
			return false;
		if (pend->early) {
			snprintf(line, sizeof(line), "%s (so at %u looks over %llu s)", pend->last,
				 pend->early,
				 (unsigned long long)(PY_INIT_WAIT_NS / 1000000000ull));
			gp_notice("pid %d: its Python frames are not walked: %s", (int)pid, line);
			note(ss, pid, pr.hexversion, false, line);
		}
		return true;
	}
	if (err != -ESRCH)
		gp_warn("pid %d: looking for its Python interpreter: %s", (int)pid, strerror(-err));
	return true;
}

static void python_added(struct gp_stack_sources *ss, pid_t pid, __u64 now)
{
	struct py_pending *p;

	if (!ss->py)
		return;
	drop_pending(ss, pid);
	if (GP_ARRAY_GROW(ss->pending, ss->pending_cap, ss->npending + 1, 16))
		return; /* out of memory: not looked for */
	p = &ss->pending[ss->npending++];
	*p = (struct py_pending){ .pid = pid, .since_ns = now };
	if (look_for_python(ss, p, now))
		drop_pending(ss, pid);
	else
		p->next_ns = now + look_delay(p);
}

/* A held process still looked for: looked at now, stopped, before its first traced call can come. */
static void python_held(struct gp_stack_sources *ss, pid_t pid)
{
	struct py_pending *p = ss->py ? find_pending(ss, pid) : NULL;
	__u64 now = now_ns();

	if (!p)
		return;
	if (look_for_python(ss, p, now))
		drop_pending(ss, pid);
	else
		p->next_ns = now + look_delay(p);
}

/* ---- the interface ------------------------------------------------------------------------------ */

struct gp_stack_sources *gp_stack_sources_new(const struct gp_unwind_maps *um, struct gp_python *py,
					      int py_procs_fd, struct gp_model *model)
{
	struct gp_stack_sources *ss = calloc(1, sizeof(*ss));
	int err;

	if (!ss)
		return NULL;
	ss->model = model;
	ss->py = py;
	ss->py_fd = py_procs_fd;
	pthread_mutex_init(&ss->lock, NULL);
	pthread_cond_init(&ss->wake, NULL);
	pthread_cond_init(&ss->done, NULL);
	if (um) {
		ss->unwind = gp_unwind_new(um);
		if (!ss->unwind)
			goto fail;
		gp_unwind_get_stats(ss->unwind, &ss->stats);
		err = pthread_create(&ss->thread, NULL, builder, ss);
		if (err) {
			errno = err;
			goto fail;
		}
		ss->thread_started = true;
	}
	return ss;
fail:
	err = errno;
	gp_stack_sources_free(ss);
	errno = err;
	return NULL;
}

void gp_stack_sources_stop(struct gp_stack_sources *ss)
{
	if (!ss || !ss->thread_started)
		return;
	pthread_mutex_lock(&ss->lock);
	ss->stopping = true;
	for (size_t i = ss->qhead; i < ss->qhead + ss->qn; i++)
		if (ss->q[i].then_continue)
			continue_held(ss, ss->q[i].pid);
	ss->qn = 0; /* what is queued no longer matters: tracing is over */
	pthread_cond_signal(&ss->wake);
	pthread_cond_broadcast(&ss->done);
	pthread_mutex_unlock(&ss->lock);
	pthread_join(ss->thread, NULL); /* a table being built is finished first */
	ss->thread_started = false;
}

void gp_stack_sources_free(struct gp_stack_sources *ss)
{
	if (!ss)
		return;
	gp_stack_sources_stop(ss);
	gp_unwind_free(ss->unwind);
	pthread_mutex_destroy(&ss->lock);
	pthread_cond_destroy(&ss->wake);
	pthread_cond_destroy(&ss->done);
	free(ss->q);
	free(ss->pending);
	free(ss->forget);
	free(ss->notes);
	free(ss);
}

bool gp_stack_sources_add(struct gp_stack_sources *ss, pid_t pid, unsigned flags,
			  enum gp_ss_when when)
{
	bool taken;

	if (!ss)
		return false;
	if ((flags & GP_SS_EXEC) &&
	    ss->py) /* the old image's layout must not be walked in the new one */
		bpf_map_delete_elem(ss->py_fd, &(__u32){ (__u32)pid });
	taken = request(ss,
			(struct request){ .pid = pid,
					  .kind = REQ_PUBLISH,
					  .then_continue = when == GP_SS_THEN_CONTINUE },
			when == GP_SS_BEFORE_RETURN);
	if (flags & GP_SS_NEW)
		python_added(ss, pid, now_ns());
	else if (when == GP_SS_THEN_CONTINUE)
		python_held(ss,
			    pid); /* a CUDA library being mapped: its interpreter is surely up */
	return taken && when == GP_SS_THEN_CONTINUE;
}

void gp_stack_sources_code_mapped(struct gp_stack_sources *ss, pid_t pid, bool returned)
{
	struct py_pending *p;

	if (!ss)
		return;
	request(ss,
		(struct request){ .pid = pid,
				  .kind = REQ_PUBLISH,
				  .not_before_ns = now_ns() + (returned ? 0 : CODE_MAP_SETTLE_NS) },
		false);
	if ((p = find_pending(ss, pid)))
		p->next_ns = 0; /* perhaps its interpreter's library: look at the next settle */
}

void gp_stack_sources_exited(struct gp_stack_sources *ss, pid_t pid)
{
	if (!ss)
		return;
	request(ss, (struct request){ .pid = pid, .kind = REQ_FORGET }, false);
	if (!ss->py)
		return;
	drop_pending(ss, pid);
	bpf_map_delete_elem(ss->py_fd, &(__u32){ (__u32)pid });
	if (!GP_ARRAY_GROW(ss->forget, ss->forget_cap, ss->nforget + 1, 16))
		ss->forget[ss->nforget++] = pid;
	/* out of memory: its names stay until a new process with its pid is probed */
}

void gp_stack_sources_settle(struct gp_stack_sources *ss)
{
	__u64 now;

	if (!ss || !ss->py)
		return;
	for (size_t i = 0; i < ss->nnotes; i++)
		gp_model_process_python(ss->model, (__u32)ss->notes[i].pid, ss->notes[i].hexversion,
					ss->notes[i].walked, ss->notes[i].line);
	ss->nnotes = 0;
	for (size_t i = 0; i < ss->nforget; i++)
		gp_python_forget(ss->py, ss->forget[i]);
	ss->nforget = 0;
	now = now_ns();
	for (size_t i = 0; i < ss->npending;) {
		struct py_pending *p = &ss->pending[i];

		if (now < p->next_ns) {
			i++;
			continue;
		}
		if (look_for_python(ss, p, now)) {
			*p = ss->pending[--ss->npending];
		} else {
			p->next_ns = now + look_delay(p);
			i++;
		}
	}
}

bool gp_stack_sources_summary(struct gp_stack_sources *ss, struct gp_unwind_summary *out)
{
	static char file[sizeof(ss->stats.build_max_path)];
	struct gp_unwind_stats st;

	if (!ss || !ss->unwind)
		return false;
	pthread_mutex_lock(&ss->lock);
	st = ss->stats;
	pthread_mutex_unlock(&ss->lock);
	memcpy(file, st.build_max_path, sizeof(file));
	file[sizeof(file) - 1] = '\0';
	*out = (struct gp_unwind_summary){
		.procs = st.procs,
		.procs_max = st.procs_max,
		.procs_full = st.procs_full,
		.maps = st.maps,
		.maps_none = st.maps_none,
		.maps_over = st.maps_over,
		.files = st.files,
		.files_built = st.files_built,
		.files_reused = st.files_reused,
		.files_evicted = st.files_evicted,
		.rows = st.rows,
		.rows_max = st.rows_max,
		.pool_rows = st.pool_rows,
		.build_ns = st.build_ns,
		.build_ns_max = st.build_ns_max,
		.build_max_file = file[0] ? file : NULL,
		.fail_open = st.fail[GP_UWF_OPEN],
		.fail_not_elf = st.fail[GP_UWF_NOT_ELF],
		.fail_no_cfi = st.fail[GP_UWF_NO_CFI],
		.fail_too_big = st.fail[GP_UWF_TOO_BIG],
		.fail_pool_full = st.fail[GP_UWF_POOL_FULL],
		.fail_files_full = st.fail[GP_UWF_FILES_FULL],
		.fail_no_segment = st.fail[GP_UWF_NO_SEGMENT],
		.fail_other = st.fail[GP_UWF_OTHER],
	};
	return true;
}
