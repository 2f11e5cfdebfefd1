/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nccl_shm.c — the simulated NCCL's knobs and its shared memory: creating a
 * clique's segment (ncclGetUniqueId, ncclCommSplit), the rendezvous of
 * ncclCommInitRank (register, then wait for every rank), the waits every
 * blocking step makes (off-CPU, on a process-shared condition variable,
 * giving up when a rank of the clique died or aborted), and the release of
 * a communicator (the last one out unmaps; the name is unlinked as soon as
 * every rank has joined, so that a crash leaves nothing in /dev/shm).
 *
 * The staging areas are allocated and faulted in at communicator init (each
 * rank its own before it registers, then the peers' once all have joined;
 * when they fit SIMGPU_POPULATE_MB), not by the first collective: a
 * collective's cost on the host is then its copies and reductions, never
 * thousands of page faults on the segment.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nccl_internal.h"

#define NC_CTL_MAGIC 0x53474e43434c5348ull

/* ---- knobs --------------------------------------------------------------------------------- */
static struct nc_config cfg;
static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;

static void load_config(void)
{
	cfg.latency_ns = (uint64_t)(sg_env_num("SIMGPU_NCCL_LATENCY_US", 5, 0) * 1000.0 + 0.5);
	cfg.gbps = sg_env_num("SIMGPU_NCCL_BW_GBPS", 20, 1e-6);
	cfg.staging = (uint64_t)(sg_env_num("SIMGPU_NCCL_STAGING_MB", 64, 0) * 1048576.0);
	cfg.staging &= ~(uint64_t)63;
}

const struct nc_config *nc_config(void)
{
	pthread_once(&cfg_once, load_config);
	return &cfg;
}

/* ---- the runtime's current device ------------------------------------------------------------- */
typedef int (*get_device_fn)(int *);
static get_device_fn get_device;
static pthread_once_t gd_once = PTHREAD_ONCE_INIT;

static void find_get_device(void)
{
	get_device = (get_device_fn)dlsym(RTLD_DEFAULT, "cudaGetDevice");
}

int nc_current_device(void)
{
	int d = 0;

	pthread_once(&gd_once, find_get_device);
	if (!get_device || get_device(&d) != 0)
		return 0;
	return d;
}

ncclResult_t nc_enter(void)
{
	const struct sg_config *c = sg_config();

	sg_call_mark();
	if (c->init_error || sg_device_count() == 0) {
		nc_set_error("the GPU model has no device (SIMGPU_DEVICES=0 or SIMGPU_INIT_ERROR)");
		return ncclUnhandledCudaError;
	}
	return ncclSuccess;
}

/* ---- segments --------------------------------------------------------------------------------- */
static size_t page_round(size_t n)
{
	size_t pg = 4096;

	return (n + pg - 1) / pg * pg;
}

static size_t ctl_size(void)
{
	return page_round(sizeof(struct nc_ctl));
}

ncclResult_t nc_seg_create(char name_out[NC_NAME_MAX])
{
	static unsigned counter;
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;
	struct nc_ctl *c;
	struct timespec ts;
	char name[NC_NAME_MAX];
	int fd, tries;

	for (tries = 0;; tries++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		snprintf(name, sizeof(name), "/simgpu-nccl-%d-%u-%lx", (int)getpid(),
			 __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED),
			 (unsigned long)ts.tv_nsec);
		fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd >= 0)
			break;
		if (errno != EEXIST || tries > 100) {
			nc_set_error("shm_open(%s): %s", name, strerror(errno));
			return ncclSystemError;
		}
	}
	if (ftruncate(fd, (off_t)ctl_size())) {
		nc_set_error("ftruncate(%s): %s", name, strerror(errno));
		goto fail;
	}
	c = mmap(NULL, ctl_size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (c == MAP_FAILED) {
		nc_set_error("mmap(%s): %s", name, strerror(errno));
		goto fail;
	}
	memset(c, 0, sizeof(*c));
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&c->mu, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cv, &ca);
	pthread_condattr_destroy(&ca);
	snprintf(c->name, sizeof(c->name), "%s", name);
	__atomic_store_n(&c->magic, NC_CTL_MAGIC, __ATOMIC_RELEASE);
	munmap(c, ctl_size());
	close(fd);
	memcpy(name_out, name, NC_NAME_MAX);
	return ncclSuccess;
fail:
	close(fd);
	shm_unlink(name);
	return ncclSystemError;
}

ncclResult_t nc_seg_open(const char *name, struct nc_seg *seg)
{
	struct stat st;
	void *p;

	memset(seg, 0, sizeof(*seg));
	seg->fd = -1;
	if (memchr(name, '\0', NC_NAME_MAX) == NULL || name[0] != '/') {
		nc_set_error("not a unique id of this library");
		return ncclInvalidArgument;
	}
	seg->fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
	if (seg->fd < 0) {
		nc_set_error(
			"shm_open(%s): %s (a unique id every rank already joined, or a stale one)",
			name, strerror(errno));
		return ncclSystemError;
	}
	if (fstat(seg->fd, &st) || (size_t)st.st_size < ctl_size()) {
		nc_set_error("%s: not a clique segment", name);
		close(seg->fd);
		seg->fd = -1;
		return ncclSystemError;
	}
	p = mmap(NULL, ctl_size(), PROT_READ | PROT_WRITE, MAP_SHARED, seg->fd, 0);
	if (p == MAP_FAILED) {
		nc_set_error("mmap(%s): %s", name, strerror(errno));
		close(seg->fd);
		seg->fd = -1;
		return ncclSystemError;
	}
	seg->base = p;
	seg->size = ctl_size();
	seg->ctl = p;
	snprintf(seg->name, sizeof(seg->name), "%s", name);
	if (__atomic_load_n(&seg->ctl->magic, __ATOMIC_ACQUIRE) != NC_CTL_MAGIC) {
		nc_set_error("%s: not a clique segment", name);
		nc_seg_close(seg);
		return ncclSystemError;
	}
	return ncclSuccess;
}

void nc_seg_close(struct nc_seg *seg)
{
	if (seg->base)
		munmap(seg->base, seg->size);
	if (seg->fd >= 0)
		close(seg->fd);
	seg->base = NULL;
	seg->ctl = NULL;
	seg->fd = -1;
}

/* Maps the whole segment once its size is known. */
static ncclResult_t seg_map_all(struct nc_seg *seg, size_t size)
{
	void *p;

	if (seg->size >= size)
		return ncclSuccess;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, seg->fd, 0);
	if (p == MAP_FAILED) {
		nc_set_error("mmap(%s, %zu): %s", seg->name, size, strerror(errno));
		return ncclSystemError;
	}
	munmap(seg->base, seg->size);
	seg->base = p;
	seg->size = size;
	seg->ctl = p;
	return ncclSuccess;
}

/* Lays out a segment for nranks and sizes the file (lock held, first joiner). */
static int seg_layout(struct nc_seg *seg, int nranks)
{
	struct nc_ctl *c = seg->ctl;
	size_t off = ctl_size();

	c->staging = nc_config()->staging;
	c->off_ranks = off;
	off += page_round((size_t)nranks * sizeof(struct nc_rankrec));
	c->off_slots = off;
	c->slot_size =
		(sizeof(struct nc_slot) + (size_t)nranks * sizeof(struct nc_part) + 63) / 64 * 64;
	off += page_round(NC_SLOTS * c->slot_size);
	c->off_p2p = off;
	off += page_round((size_t)nranks * (size_t)nranks * NC_P2P_SLOTS * sizeof(struct nc_p2p));
	c->off_staging = off;
	off += (size_t)nranks * c->staging;
	c->size = off;
	if (ftruncate(seg->fd, (off_t)c->size))
		return -1;
	c->nranks = nranks;
	return 0;
}

/* Numbers the slots (first joiner, whole segment mapped, lock held). */
static void seg_init_slots(struct nc_seg *seg)
{
	int n = seg->ctl->nranks, a, b;
	uint64_t s;

	for (s = 0; s < NC_SLOTS; s++)
		nc_slot_at(seg, s)->seq = s;
	for (a = 0; a < n; a++)
		for (b = 0; b < n; b++)
			for (s = 0; s < NC_P2P_SLOTS; s++)
				nc_p2p_at(seg, a, b, s)->seq = s;
}

void nc_lock(struct nc_ctl *c)
{
	if (pthread_mutex_lock(&c->mu) == EOWNERDEAD) {
		/* a rank died holding it: the state it guards is still consistent
		 * enough for the others to notice the death and give up */
		pthread_mutex_consistent(&c->mu);
	}
}

void nc_unlock(struct nc_ctl *c)
{
	pthread_mutex_unlock(&c->mu);
}

void nc_broadcast(struct nc_ctl *c)
{
	pthread_cond_broadcast(&c->cv);
}

/* Alive and not a zombie. */
static bool pid_alive(int pid)
{
	char path[64], buf[256], *p;
	FILE *f;
	bool alive = true;

	if (pid <= 0 || pid == getpid())
		return true;
	if (kill(pid, 0) && errno == ESRCH)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return errno != ENOENT;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) && p[1] == ' ' &&
	    (p[2] == 'Z' || p[2] == 'X'))
		alive = false;
	fclose(f);
	return alive;
}

ncclResult_t nc_wait(struct nc_seg *seg)
{
	struct nc_ctl *c = seg->ctl;
	struct timespec ts;
	int r, err;

	if (c->aborted)
		return ncclRemoteError;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += 200 * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	err = pthread_cond_timedwait(&c->cv, &c->mu, &ts);
	if (err == EOWNERDEAD)
		pthread_mutex_consistent(&c->mu);
	if (c->aborted)
		return ncclRemoteError;
	if (err != ETIMEDOUT || !c->off_ranks)
		return ncclSuccess;
	for (r = 0; r < c->nranks; r++) {
		struct nc_rankrec *rr = nc_rank(seg, r);

		if (rr->joined && !pid_alive(rr->pid)) {
			nc_set_error("rank %d (pid %d) of the communicator exited", r, rr->pid);
			c->aborted = 1;
			pthread_cond_broadcast(&c->cv);
			return ncclRemoteError;
		}
	}
	return ncclSuccess;
}

/* ---- pre-faulting the staging areas --------------------------------------------------------------- */
/* Fills the page tables of [p, p+len) of the mapping, whole pages only (a page shared with a
 * neighbour's area may be a hole). Its own area a rank populates for writing
 * (MADV_POPULATE_WRITE, which also zeroes the pages); a peer's area, which its owner has
 * populated, it reads a byte of every page of, which the kernel's fault-around maps 16
 * pages at a time (several times faster than MADV_POPULATE_READ). The pages must exist in
 * the file (fallocate), else a touch could SIGBUS. */
static void prefault(char *p, size_t len, bool own)
{
	char *a = (char *)(((uintptr_t)p + 4095) & ~(uintptr_t)4095);
	char *e = (char *)(((uintptr_t)p + len) & ~(uintptr_t)4095);

	if (e <= a || (own && !madvise(a, (size_t)(e - a), MADV_POPULATE_WRITE)))
		return;
	for (; a < e; a += 4096) {
		if (own) /* no MADV_POPULATE_WRITE (before 5.14): a write that changes nothing */
			__atomic_fetch_add(a, 0, __ATOMIC_RELAXED);
		else
			(void)*(volatile char *)a;
	}
}

/* Whether the clique's staging areas are faulted in at init: when all of them together
 * fit SIMGPU_POPULATE_MB, the bound the model puts on memory it backs when made. */
static bool prefaulted(const struct nc_ctl *c)
{
	return c->staging && (uint64_t)c->nranks * c->staging <= sg_config()->populate_bytes;
}

/* Allocates this rank's whole staging area in the file and faults it in, before the rank
 * registers (so a peer that sees it joined may map it). A full /dev/shm leaves it to the
 * collectives, which then move no data (nccl_coll.c's stage()). */
static void stage_area_prefault(struct ncclComm *cm, int rank)
{
	struct nc_seg *seg = &cm->seg;
	uint64_t len = seg->ctl->staging;
	off_t base = (off_t)(seg->ctl->off_staging + (uint64_t)rank * len);

	if (!prefaulted(seg->ctl) || posix_fallocate(seg->fd, base, (off_t)len))
		return;
	cm->backed = len;
	prefault(nc_staging(seg, rank), len, true);
}

/* ---- the rendezvous ------------------------------------------------------------------------------- */
ncclResult_t nc_join_register(struct ncclComm *cm, const char *name, int nranks, int rank, int dev)
{
	struct nc_ctl *c;
	struct nc_rankrec *rr;
	bool first = false;
	ncclResult_t e = nc_seg_open(name, &cm->seg);

	if (e)
		return e;
	/* size it (first joiner) or check it, through the control page only: a
	 * robust mutex must be unlocked through the address it was locked at, so
	 * the segment is remapped with the lock released */
	c = cm->seg.ctl;
	nc_lock(c);
	if (!c->nranks) {
		if (seg_layout(&cm->seg, nranks)) {
			nc_set_error("cannot size the clique segment %s: %s", name,
				     strerror(errno));
			e = ncclSystemError;
		}
		first = true;
	} else if (c->nranks != nranks) {
		nc_set_error("rank %d joins with nranks %d, the communicator has %d", rank, nranks,
			     c->nranks);
		e = ncclInvalidUsage;
	}
	nc_unlock(c);
	if (!e)
		e = seg_map_all(&cm->seg, c->size);
	if (e) {
		nc_seg_close(&cm->seg);
		return e;
	}
	c = cm->seg.ctl;
	stage_area_prefault(cm, rank);
	nc_lock(c);
	if (first)
		seg_init_slots(&cm->seg);
	rr = nc_rank(&cm->seg, rank);
	if (rr->joined || c->joined >= c->nranks) {
		nc_set_error("rank %d of %d joined twice", rank, nranks);
		nc_unlock(c);
		nc_seg_close(&cm->seg);
		return ncclInvalidUsage;
	}
	rr->joined = 1;
	rr->pid = (int)getpid();
	rr->dev = dev;
	rr->backed = cm->backed == c->staging && c->staging;
	c->joined++;
	c->live++;
	if (c->joined == c->nranks && !c->unlinked) {
		/* everyone has it mapped: the name is no longer needed */
		shm_unlink(c->name);
		c->unlinked = 1;
	}
	nc_broadcast(c);
	nc_unlock(c);
	cm->rank = rank;
	cm->nranks = nranks;
	cm->dev = dev;
	return ncclSuccess;
}

ncclResult_t nc_join_wait(struct ncclComm *cm)
{
	struct nc_ctl *c = cm->seg.ctl;
	ncclResult_t e = ncclSuccess;

	int r;

	nc_lock(c);
	while (c->joined < c->nranks && !e)
		e = nc_wait(&cm->seg);
	nc_unlock(c);
	if (e)
		return e;
	/* every rank allocated its staging area before it registered: map the peers' now (only
	 * allocated ones: reading a hole of a full /dev/shm could fail) */
	for (r = 0; r < c->nranks && prefaulted(c); r++)
		if (r != cm->rank && nc_rank(&cm->seg, r)->backed)
			prefault(nc_staging(&cm->seg, r), c->staging, false);
	nc_lock(c);
	c->ready++;
	nc_broadcast(c);
	nc_unlock(c);
	return ncclSuccess;
}

ncclResult_t nc_join_ready(struct ncclComm *cm)
{
	struct nc_ctl *c = cm->seg.ctl;
	ncclResult_t e = ncclSuccess;

	nc_lock(c);
	while (c->ready < c->nranks && !e)
		e = nc_wait(&cm->seg);
	nc_unlock(c);
	if (!e)
		cm->joined = true;
	return e;
}

void nc_comm_drain(struct ncclComm *cm)
{
	pthread_mutex_lock(&cm->mu);
	while (cm->pending)
		pthread_cond_wait(&cm->cv, &cm->mu);
	pthread_mutex_unlock(&cm->mu);
}

void nc_comm_release(struct ncclComm *cm, bool abort)
{
	struct nc_ctl *c = cm->seg.ctl;

	if (c && abort) {
		nc_lock(c);
		c->aborted = 1;
		nc_broadcast(c);
		nc_unlock(c);
	}
	nc_comm_drain(cm);
	if (c) {
		nc_lock(c);
		if (--c->live <= 0 && !c->unlinked) {
			shm_unlink(c->name);
			c->unlinked = 1;
		}
		nc_broadcast(c);
		nc_unlock(c);
		nc_seg_close(&cm->seg);
	}
}
