/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * uprobes.c — placing the probe pairs of a family's APIs on one file (see
 * uprobes.h): a record per probed function (aliases once) and its cookie,
 * the hot ones grouped last to be gated, uprobe_multi or perf-event links
 * placed in turns with other gpuprobed instances, the gate opened and
 * closed; and what a probe hit costs. probe_removal.c takes them away.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "log.h"
#include "probes/uprobe_multi.h"
#include "probes/uprobes.h"
#include "probes/uprobes_internal.h"

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
int gp_probes_lock(void)
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

void gp_probes_unlock(int fd)
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
			gp_warn("attach %s:%s: address 0x%llx is in no loadable segment",
				display_path, info->symbol, (unsigned long long)sym->addr);
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
static int attach_multi(struct gp_uprobes *u, size_t first, size_t end, pid_t pid,
			const char *attach_path, bool entries_first)
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
		int fd =
			gp_uprobe_multi_attach(bpf_program__fd(ret ? u->exit_prog : u->enter_prog),
					       attach_path, offsets, cookies, (__u32)cnt, pid, ret);

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
static int attach_perf(struct gp_uprobes *u, size_t first, size_t end, pid_t pid,
		       const char *attach_path, bool entries_first)
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
			struct bpf_link *l = bpf_program__attach_uprobe_opts(
				ret ? u->exit_prog : u->enter_prog, pid ? pid : -1, attach_path,
				(size_t)p->offset, &opts);

			if (!l)
				return -errno;
			*(ret ? &p->exit : &p->enter) = l;
		}
	}
	return 0;
}

static int attach_group(struct gp_uprobes *u, size_t first, size_t end, pid_t pid,
			const char *attach_path, bool entries_first)
{
	int lock, err;

	if (first == end)
		return 0;
	lock = gp_probes_lock();
	err = u->multi ? attach_multi(u, first, end, pid, attach_path, entries_first)
		       : attach_perf(u, first, end, pid, attach_path, entries_first);
	gp_probes_unlock(lock);
	return err;
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
		gp_uprobes_detach_links(u, first, u->n);
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
			gp_uprobes_detach_links(u, i, i + g->ngated);
			continue;
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", g->file_fd);
		err = attach_group(u, i, i + g->ngated, g->pid, path, true);
		if (err) {
			gp_uprobes_detach_links(u, i, i + g->ngated);
			gp_err("attach the hot probes of %s again: %s", g->target, strerror(-err));
			if (!first_err)
				first_err = err;
		}
	}
	return first_err;
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
		ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) /
		     GP_HIT_CALLS;
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
		if (sscanf(line, "%llx-%llx %7s %llx", &lo, &hi, perms, &off) == 4 && addr >= lo &&
		    addr < hi && perms[2] == 'x') {
			*offset = addr - lo + off;
			err = 0;
			break;
		}
	fclose(f);
	return err;
}

double gp_uprobes_measure_call_ns(struct gp_uprobes *u, enum gp_api_id api, unsigned idx)
{
	struct gp_probe p = {
		.idx = idx, .api = api, .pid = getpid(), .multi_fd = { -1, -1 }, .file_fd = -1
	};
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
	gp_uprobes_detach_links(&one, 0, 1);
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
