/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * stalls.c — live NCCL stall detection (stalls.h). The model sees a call at
 * its return; a rank that waits now is inside a call, so each look reads the
 * traced calls in progress from the probes' own per-thread frames (a BPF
 * task iterator: nothing is added to the probes) and maps them onto the
 * model: an NCCL collective call in progress waits on its communicator's
 * next collective; a synchronisation in progress on the collective its
 * awaited work is (the rule of the model's streams.c). Ranks are joined by
 * comm_id (model/nccl_jobs.c). A stall is said when ranks waited on #k
 * longer than the timeout while a rank traced here has not entered #k: one
 * warning naming the late rank, its pid and what it is doing (inside which
 * traced call, or its /proc state, system call, wchan and where in its
 * code), and a record in the model (report.json "stalls").
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "log.h"
#include "model/nccl_jobs.h"
#include "model/view.h"
#include "session/stalls.h"

/* The scheduler's look is no finer than this, nor coarser than a second. */
#define LOOK_MIN_NS 100000000ull
#define LOOK_MAX_NS 1000000000ull

void gp_stalls_init(struct gp_stalls *st, struct gp_bpf *bpf, struct gp_symbolizer *sym,
		    double timeout_s)
{
	memset(st, 0, sizeof(*st));
	st->bpf = bpf;
	st->sym = sym;
	st->timeout_ns = (__u64)(timeout_s * 1e9);
	/* a quarter of the timeout: a stall is said within timeout + every_ns + a drain */
	st->every_ns = st->timeout_ns / 4;
	if (st->every_ns < LOOK_MIN_NS)
		st->every_ns = LOOK_MIN_NS;
	if (st->every_ns > LOOK_MAX_NS)
		st->every_ns = LOOK_MAX_NS;
}

void gp_stalls_release(struct gp_stalls *st)
{
	free(st->cur);
	free(st->prev);
	free(st->said);
	memset(st, 0, sizeof(*st));
}

static bool has_nccl(const struct gp_model *m)
{
	for (size_t i = 0; i < m->nprocs; i++)
		if (!m->procs[i]->exited && m->procs[i]->nccl && m->procs[i]->nccl->ncomms)
			return true;
	return false;
}

/* Seen at the previous look too, with the same entry: not a frame read while its thread rewrote it. */
static bool steady(const struct gp_stalls *st, const struct gp_inflight *f)
{
	for (size_t i = 0; i < st->nprev; i++)
		if (st->prev[i].tid == f->tid && st->prev[i].ts_ns == f->ts_ns &&
		    st->prev[i].api == f->api)
			return true;
	return false;
}

/* The outermost call in progress on tid, or NULL. */
static const struct gp_inflight *call_of(const struct gp_stalls *st, __u32 tid)
{
	for (size_t i = 0; i < st->ncur; i++)
		if (st->cur[i].tid == tid)
			return &st->cur[i];
	return NULL;
}

/*
 * Into the model: which communicators have a collective call in progress, and who waits on what.
 * mark[i]: 1 the frame is a wait seen alike at the previous look, 2 a wait seen first now, 0 not a
 * wait (or inside one: the outermost waiting call of a thread stands for the calls inside it).
 */
static void live_waits(struct gp_stalls *st, struct gp_model *m, unsigned char *mark)
{
	__u32 waiting_tid = 0;

	gp_model_nccl_live_clear(m);
	for (size_t i = 0; i < st->ncur; i++) {
		const struct gp_inflight *f = &st->cur[i];
		const struct gp_process *p = gp_u64map_get(&m->by_pid, f->tgid);
		const struct gp_nccl_comm *cm;
		struct gp_nccl_layout l;
		__u64 seq;

		mark[i] = 0;
		if (!p || f->tid == waiting_tid ||
		    !gp_inflight_collective(p, f->api, f->tid, f->args, &cm, &seq))
			continue;
		waiting_tid = f->tid;
		mark[i] = steady(st, f) ? 1 : 2;
		gp_model_nccl_live(m, f->tgid, cm->handle, gp_nccl_layout(f->api, &l), seq,
				   f->ts_ns);
	}
}

/* ---- what the late rank is doing ---------------------------------------------------------- */

/* The system call's name (libseccomp knows every architecture's table); malloc'ed, NULL when unknown. */
static char *syscall_name(long nr)
{
	return nr >= 0 && nr <= INT_MAX
		       ? seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, (int)nr)
		       : NULL;
}

static int read_small(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

/* "inside cudaStreamSynchronize for 3.1 s", or "sleeping (S) in clock_nanosleep, wchan ..., at ...". */
static void describe(struct gp_stalls *st, __u32 pid, __u32 tid, __u64 now, char *out, size_t len)
{
	const struct gp_inflight *f = tid ? call_of(st, tid) : NULL;
	char path[96], stat[512], sc[256], wchan[128] = "";
	const char *state = "?", *p;
	char *name;
	struct gp_sym_result sym;
	unsigned long long pc = 0;
	char where[256] = "";
	long nr = -2;
	int n;

	if (f) {
		snprintf(out, len, "inside %s for %.1f s", gp_apis[f->api].symbol,
			 (double)(now - f->ts_ns) / 1e9);
		return;
	}
	if (!tid) {
		snprintf(out, len, "not known (no collective of it seen)");
		return;
	}
	snprintf(path, sizeof(path), "/proc/%u/task/%u/stat", pid, tid);
	if (read_small(path, stat, sizeof(stat)) || !(p = strrchr(stat, ')'))) {
		snprintf(out, len, "gone (its thread %u has exited)", tid);
		return;
	}
	state = p[1] == ' ' ? p + 2 : "?";
	snprintf(path, sizeof(path), "/proc/%u/task/%u/syscall", pid, tid);
	if (!read_small(path, sc, sizeof(sc))) {
		if (!strncmp(sc, "running", 7))
			nr = -1;
		else if (sscanf(sc, "%ld %*s %*s %*s %*s %*s %*s %*s %llx", &nr, &pc) < 1)
			nr = -2;
	}
	snprintf(path, sizeof(path), "/proc/%u/task/%u/wchan", pid, tid);
	if (read_small(path, wchan, sizeof(wchan)) || !strcmp(wchan, "0"))
		wchan[0] = 0;
	if (pc && st->sym && !gp_symbolizer_lookup(st->sym, (pid_t)pid, pc, &sym) && sym.symbol) {
		const char *file = sym.file ? strrchr(sym.file, '/') : NULL;

		snprintf(where, sizeof(where), ", at %s+0x%llx (%s)", sym.symbol,
			 (unsigned long long)sym.sym_offset,
			 file ? file + 1 : (sym.file ? sym.file : "?"));
	}
	if (*state == 'R') {
		snprintf(out, len, "running (state R) outside any traced call");
		return;
	}
	name = syscall_name(nr);
	if (nr >= 0)
		n = name ? snprintf(out, len, "%s in %s", *state == 'D' ? "blocked" : "sleeping",
				    name)
			 : snprintf(out, len, "%s in system call %ld",
				    *state == 'D' ? "blocked" : "sleeping", nr);
	else
		n = snprintf(out, len, "off-CPU");
	free(name);
	if (n > 0 && (size_t)n < len)
		snprintf(out + n, len - (size_t)n, " (state %c%s%s)%s", *state,
			 wchan[0] ? ", wchan " : "", wchan, where);
}

/* ---- a communicator's ranks ---------------------------------------------------------------- */

static bool said(struct gp_stalls *st, __u64 comm_id, __u64 seq)
{
	for (size_t i = 0; i < st->nsaid; i++)
		if (st->said[i].comm_id == comm_id && st->said[i].seq == seq)
			return true;
	if (!GP_ARRAY_GROW(st->said, st->said_cap, st->nsaid + 1, 8))
		st->said[st->nsaid++] = (struct gp_stall_said){ comm_id, seq };
	return false;
}

/* The collectives rank r has entered: those returned, and one in progress. */
static __u64 entered(const struct gp_nccl_comm *c)
{
	return c->collectives + (c->inflight ? 1 : 0);
}

static void check_job(struct gp_stalls *st, struct gp_model *m, const struct gp_nccl_job *j,
		      __u64 now, const bool *steady_comm)
{
	for (size_t a = 0; a < j->ntraced; a++) {
		const struct gp_nccl_comm *ca = j->ranks[a].c;
		__u64 k = ca->wait_seq, waited = 0;
		__s32 waiting[GP_NCCL_STALL_RANKS_MAX];
		size_t nw = 0, nb = 0;
		unsigned op = GP_NCCL_OP_MAX;
		__u64 bytes = 0;
		char ranks[512] = "", late[1024] = "";
		size_t rl = 0, ll = 0;

		if (!ca->wait_since_ns || now - ca->wait_since_ns < st->timeout_ns ||
		    !steady_comm[a])
			continue;
		/* every rank waiting on k that long (each k once: from its first such rank) */
		bool first = true;

		for (size_t b = 0; b < a && first; b++)
			first = j->ranks[b].c->wait_seq != k || !j->ranks[b].c->wait_since_ns ||
				now - j->ranks[b].c->wait_since_ns < st->timeout_ns ||
				!steady_comm[b];
		if (!first)
			continue;
		for (size_t b = 0; b < j->ntraced; b++) {
			const struct gp_nccl_comm *cb = j->ranks[b].c;

			if (cb->wait_seq == k && cb->wait_since_ns &&
			    now - cb->wait_since_ns >= st->timeout_ns && steady_comm[b]) {
				if (nw < GP_NCCL_STALL_RANKS_MAX)
					waiting[nw++] = j->ranks[b].rank;
				if (now - cb->wait_since_ns > waited)
					waited = now - cb->wait_since_ns;
				if (cb->collectives ==
				    k) { /* it returned from #k: its last op is #k's */
					op = cb->last_op;
					bytes = cb->last_bytes;
				}
			}
			if (entered(cb) < k)
				nb++;
		}
		if (!nb || said(st, j->comm_id, k))
			continue;
		for (size_t i = 0; i < nw; i++)
			rl += (size_t)snprintf(ranks + rl,
					       sizeof(ranks) - rl > 0 ? sizeof(ranks) - rl : 0,
					       "%s%d", i ? "," : "", waiting[i]);
		if (gp_model_nccl_stall(m, j->comm_id, k, op, bytes, waited, now, waiting, nw))
			return;
		for (size_t b = 0; b < j->ntraced; b++) {
			const struct gp_nccl_job_rank *r = &j->ranks[b];
			char state[512];

			if (entered(r->c) >= k)
				continue;
			describe(st, r->p->pid, r->c->collectives ? r->c->last_tid : 0, now, state,
				 sizeof(state));
			gp_model_nccl_stall_behind(m, j->comm_id, k, r->rank, r->p->pid,
						   r->c->collectives, state);
			if (ll < sizeof(late))
				ll += (size_t)snprintf(
					late + ll, sizeof(late) - ll,
					"%srank %d (pid %u), which entered #%llu last and is now %s",
					ll ? "; " : "", r->rank, r->p->pid,
					(unsigned long long)r->c->collectives, state);
		}
		char size[32] = "";

		if (bytes >= 1048576 && !(bytes % 1048576))
			snprintf(size, sizeof(size), ", %llu MiB",
				 (unsigned long long)(bytes >> 20));
		else if (bytes)
			snprintf(size, sizeof(size), ", %llu bytes", (unsigned long long)bytes);
		gp_warn("NCCL stall: communicator %016" PRIx64
			" collective #%llu (%s%s): rank%s %s waiting %.1f s "
			"for %s",
			(uint64_t)j->comm_id, (unsigned long long)k,
			op < GP_NCCL_OP_MAX ? gp_nccl_op_name(op) : "operation not known", size,
			nw > 1 ? "s" : "", ranks, (double)waited / 1e9, late);
	}
}

void gp_stalls_step(struct gp_stalls *st, struct gp_model *m, __u64 now)
{
	struct gp_nccl_jobs jobs = { 0 };
	unsigned char *mark;
	long n;

	if (!st->timeout_ns || st->broken || now < st->next_ns)
		return;
	st->next_ns = now + st->every_ns;
	if (!has_nccl(m)) {
		st->nprev = 0;
		return;
	}
	/* the previous look's calls are kept: a wait counts when seen twice alike */
	{
		struct gp_inflight *t = st->prev;
		size_t c = st->prev_cap;

		st->prev = st->cur;
		st->prev_cap = st->cur_cap;
		st->nprev = st->ncur;
		st->cur = t;
		st->cur_cap = c;
		st->ncur = 0;
	}
	n = gp_bpf_inflight(st->bpf, &st->cur, &st->cur_cap);
	if (n < 0) {
		gp_warn("NCCL stalls: cannot read the calls in progress (%s): no stall detection from now on",
			strerror((int)-n));
		st->broken = true;
		gp_model_nccl_live_clear(m);
		return;
	}
	st->ncur = (size_t)n;
	mark = calloc(st->ncur ? st->ncur : 1, 1);
	if (!mark)
		return;
	live_waits(st, m, mark);
	if (!gp_nccl_jobs_build(m, &jobs)) {
		for (size_t i = 0; i < jobs.n; i++) {
			const struct gp_nccl_job *j = &jobs.v[i];
			bool steady_comm[j->ntraced ? j->ntraced : 1];

			if (j->ntraced < 2)
				continue;
			/* a rank's wait is steady when the call it waits in was seen at the previous look too */
			for (size_t r = 0; r < j->ntraced; r++) {
				steady_comm[r] = false;
				for (size_t c = 0; c < st->ncur; c++)
					if (st->cur[c].tgid == j->ranks[r].p->pid && mark[c] == 1 &&
					    st->cur[c].ts_ns == j->ranks[r].c->wait_since_ns)
						steady_comm[r] = true;
			}
			check_job(st, m, j, now, steady_comm);
		}
	}
	gp_nccl_jobs_free(&jobs);
	free(mark);
}
