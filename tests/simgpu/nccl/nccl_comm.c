/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * nccl_comm.c — NCCL API: version, unique ids, communicator creation
 * (ncclCommInitRank[Config], ncclCommInitAll, ncclCommSplit), teardown
 * (Finalize, Destroy, Abort), queries, error strings, and the registry of
 * live communicators.
 *
 * Creation runs as jobs in phases (post, then wait, for every job): a lone
 * call runs one job through every phase; inside ncclGroupStart/End, and in
 * ncclCommInitAll, one thread creates several ranks of a clique without
 * deadlocking on itself.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_internal.h"

/* ---- errors ----------------------------------------------------------------------------------- */
static __thread char last_error[256];

void nc_set_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	if (sg_log_level)
		sg_log("nccl: %s", last_error);
}

const char *nc_last_error(void)
{
	return last_error;
}

const char *nc_result_name(ncclResult_t r)
{
	static const char *const names[] = { "ncclSuccess",	    "ncclUnhandledCudaError",
					     "ncclSystemError",	    "ncclInternalError",
					     "ncclInvalidArgument", "ncclInvalidUsage",
					     "ncclRemoteError",	    "ncclInProgress" };

	return (unsigned)r < sizeof(names) / sizeof(names[0]) ? names[r] : "unknown";
}

/* ---- registry ------------------------------------------------------------------------------------ */
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ncclComm **live;
static size_t nlive, cap_live;

bool nc_comm_live(const struct ncclComm *c)
{
	bool found = false;
	size_t i;

	if (!c)
		return false;
	pthread_mutex_lock(&reg_mu);
	for (i = 0; i < nlive && !found; i++)
		found = live[i] == c;
	pthread_mutex_unlock(&reg_mu);
	return found;
}

struct ncclComm *nc_comm_new(void)
{
	struct ncclComm *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->magic = NC_COMM_MAGIC;
	c->seg.fd = -1;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	pthread_mutex_lock(&reg_mu);
	if (nlive == cap_live) {
		size_t nc = cap_live ? cap_live * 2 : 16;
		struct ncclComm **n = realloc(live, nc * sizeof(*n));

		if (!n) {
			pthread_mutex_unlock(&reg_mu);
			free(c);
			return NULL;
		}
		live = n;
		cap_live = nc;
	}
	live[nlive++] = c;
	pthread_mutex_unlock(&reg_mu);
	return c;
}

/* Sizes the per-peer counters once nranks is known. */
static int comm_setup(struct ncclComm *c, int nranks, int rank, int dev)
{
	c->nranks = nranks;
	c->rank = rank;
	c->dev = dev;
	c->send_seq = calloc((size_t)nranks, sizeof(uint64_t));
	c->recv_seq = calloc((size_t)nranks, sizeof(uint64_t));
	return c->send_seq && c->recv_seq ? 0 : -1;
}

/* Takes c out of the registry (false when it was not there). */
static bool comm_unregister(struct ncclComm *c)
{
	bool found = false;
	size_t i;

	pthread_mutex_lock(&reg_mu);
	for (i = 0; i < nlive; i++)
		if (live[i] == c) {
			live[i] = live[--nlive];
			found = true;
			break;
		}
	pthread_mutex_unlock(&reg_mu);
	return found;
}

void nc_comm_free(struct ncclComm *c)
{
	if (!c)
		return;
	comm_unregister(c);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	free(c->send_seq);
	free(c->recv_seq);
	c->magic = 0;
	free(c);
}

/* ---- creation jobs --------------------------------------------------------------------------------- */
/* Every phase runs for every job of a group before the next: a thread driving several ranks posts for all
 * of them before it waits for any (PH_DONE_POST / PH_DONE_WAIT likewise). */
enum {
	PH_POST = 0,
	PH_COLORS,
	PH_CREATE,
	PH_NAME,
	PH_REGISTER,
	PH_JOIN,
	PH_READY,
	PH_DONE_POST,
	PH_DONE_WAIT,
	PH_N
};

/* Split, after every rank's colour and key are known: the members of my
 * colour ordered by (key, old rank) -> my new rank, their count, and the
 * leader (new rank 0) who creates the segment. */
static void split_compute(struct nc_job *j, const int *colors, const int *keys, int n)
{
	int me = j->parent->rank, r, members = 0, before = 0, leader = -1;

	for (r = 0; r < n; r++) {
		if (colors[r] != j->color)
			continue;
		members++;
		if (keys[r] < j->key || (keys[r] == j->key && r < me))
			before++;
		if (leader < 0 || keys[r] < keys[leader] || (keys[r] == keys[leader] && r < leader))
			leader = r;
	}
	j->nranks = members;
	j->rank = before;
	j->leader = leader;
}

static void job_phase(struct nc_job *j, int ph)
{
	struct ncclComm *p = j->parent;
	struct nc_seg *ps = p ? &p->seg : NULL;
	int r, n;

	if (j->err)
		return;
	if (j->kind == NC_JOB_INIT) {
		if (ph == PH_REGISTER)
			j->err = nc_join_register(j->comm, j->name, j->nranks, j->rank, j->dev);
		else if (ph == PH_JOIN)
			j->err = nc_join_wait(j->comm);
		else if (ph == PH_READY)
			j->err = nc_join_ready(j->comm);
		return;
	}
	n = p->nranks;
	switch (ph) {
	case PH_POST:
		nc_lock(ps->ctl);
		nc_rank(ps, p->rank)->color = j->color;
		nc_rank(ps, p->rank)->key = j->key;
		nc_rank(ps, p->rank)->split_gen = j->round;
		nc_broadcast(ps->ctl);
		nc_unlock(ps->ctl);
		break;
	case PH_COLORS: {
		int *colors = malloc((size_t)n * sizeof(int)),
		    *keys = malloc((size_t)n * sizeof(int));

		if (!colors || !keys) {
			free(colors);
			free(keys);
			j->err = ncclSystemError;
			break;
		}
		nc_lock(ps->ctl);
		for (r = 0; r < n && !j->err;)
			if (nc_rank(ps, r)->split_gen >= j->round)
				r++;
			else
				j->err = nc_wait(ps);
		for (r = 0; r < n; r++) {
			colors[r] = nc_rank(ps, r)->color;
			keys[r] = nc_rank(ps, r)->key;
		}
		nc_unlock(ps->ctl);
		if (!j->err && j->color != NCCL_SPLIT_NOCOLOR)
			split_compute(j, colors, keys, n);
		free(colors);
		free(keys);
		break;
	}
	case PH_CREATE:
		if (j->color == NCCL_SPLIT_NOCOLOR || j->leader != p->rank)
			break;
		j->err = nc_seg_create(j->name);
		if (j->err)
			break;
		nc_lock(ps->ctl);
		memcpy(nc_rank(ps, p->rank)->split_name, j->name, NC_NAME_MAX);
		nc_rank(ps, p->rank)->name_gen = j->round;
		nc_broadcast(ps->ctl);
		nc_unlock(ps->ctl);
		break;
	case PH_NAME:
		if (j->color == NCCL_SPLIT_NOCOLOR)
			break;
		nc_lock(ps->ctl);
		while (nc_rank(ps, j->leader)->name_gen < j->round && !j->err)
			j->err = nc_wait(ps);
		memcpy(j->name, nc_rank(ps, j->leader)->split_name, NC_NAME_MAX);
		nc_unlock(ps->ctl);
		break;
	case PH_REGISTER:
		if (j->color == NCCL_SPLIT_NOCOLOR)
			break;
		if (!j->comm) /* allocated by the call when it was deferred to ncclGroupEnd */
			j->comm = nc_comm_new();
		if (!j->comm || comm_setup(j->comm, j->nranks, j->rank, p->dev)) {
			j->err = ncclSystemError;
			break;
		}
		j->err = nc_join_register(j->comm, j->name, j->nranks, j->rank, p->dev);
		break;
	case PH_JOIN:
		if (j->comm)
			j->err = nc_join_wait(j->comm);
		break;
	case PH_READY:
		if (j->comm)
			j->err = nc_join_ready(j->comm);
		break;
	case PH_DONE_POST:
		nc_lock(ps->ctl);
		nc_rank(ps, p->rank)->done_gen = j->round;
		nc_broadcast(ps->ctl);
		nc_unlock(ps->ctl);
		break;
	case PH_DONE_WAIT:
		nc_lock(ps->ctl);
		for (r = 0; r < n && !j->err;)
			if (nc_rank(ps, r)->done_gen >= j->round)
				r++;
			else
				j->err = nc_wait(ps);
		nc_unlock(ps->ctl);
		break;
	}
}

ncclResult_t nc_jobs_run(struct nc_job *jobs, int n)
{
	ncclResult_t e = ncclSuccess;
	int ph, i;

	for (ph = 0; ph < PH_N; ph++)
		for (i = 0; i < n; i++)
			job_phase(&jobs[i], ph);
	for (i = 0; i < n; i++) {
		struct nc_job *j = &jobs[i];

		if (j->kind == NC_JOB_SPLIT) {
			if (j->err && j->comm) {
				if (j->comm->seg.ctl)
					nc_comm_release(j->comm, true);
				nc_comm_free(j->comm);
				j->comm = NULL;
			}
			*j->out = j->comm;
		}
		if (j->err && !e)
			e = j->err;
	}
	return e;
}

/* ---- version, ids ------------------------------------------------------------------------------------ */
NC_API ncclResult_t ncclGetVersion(int *version)
{
	ncclResult_t e = ncclSuccess;

	NC_FRAME();
	if (!version) {
		nc_set_error("ncclGetVersion: version is NULL");
		e = ncclInvalidArgument;
	} else {
		*version = NCCL_VERSION_CODE;
	}
	NC_RETURN(e, "version=%d", version ? *version : -1);
}

NC_API ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
	char name[NC_NAME_MAX];
	ncclResult_t e;

	NC_FRAME();
	if (!uniqueId) {
		nc_set_error("ncclGetUniqueId: uniqueId is NULL");
		NC_RETURN(ncclInvalidArgument, "uniqueId=%p", (void *)uniqueId);
	}
	/* no runtime, no GPU model: a launcher may call it before forking ranks */
	e = nc_seg_create(name);
	if (!e) {
		memset(uniqueId, 0, sizeof(*uniqueId));
		memcpy(uniqueId->internal, NC_ID_MAGIC, 8);
		memcpy(uniqueId->internal + 8, name, NC_NAME_MAX);
	}
	NC_RETURN(e, "uniqueId=%s", e ? "" : uniqueId->internal + 8);
}

static ncclResult_t id_name(const ncclUniqueId *id, char name[NC_NAME_MAX])
{
	if (memcmp(id->internal, NC_ID_MAGIC, 8) || !memchr(id->internal + 8, '\0', NC_NAME_MAX)) {
		nc_set_error("not a unique id from ncclGetUniqueId of this library");
		return ncclInvalidArgument;
	}
	memcpy(name, id->internal + 8, NC_NAME_MAX);
	return ncclSuccess;
}

/* ---- creation ---------------------------------------------------------------------------------------- */
static ncclResult_t check_config(const ncclConfig_t *config)
{
	if (config &&
	    (config->magic != NCCL_API_MAGIC || config->size < offsetof(ncclConfig_t, blocking))) {
		nc_set_error("ncclConfig_t not initialised with NCCL_CONFIG_INITIALIZER");
		return ncclInvalidArgument;
	}
	return ncclSuccess;
}

static ncclResult_t init_rank(ncclComm_t *out, int nranks, const ncclUniqueId *id, int rank,
			      const ncclConfig_t *config)
{
	struct nc_job j = { .kind = NC_JOB_INIT };
	ncclResult_t e;
	int dev;

	if (!out) {
		nc_set_error("comm is NULL");
		return ncclInvalidArgument;
	}
	*out = NULL;
	if (nranks < 1 || nranks > NC_MAX_RANKS) {
		nc_set_error("nranks %d out of range 1..%d", nranks, NC_MAX_RANKS);
		return ncclInvalidArgument;
	}
	if (rank < 0 || rank >= nranks) {
		nc_set_error("rank %d out of range 0..%d", rank, nranks - 1);
		return ncclInvalidArgument;
	}
	if ((e = check_config(config)) || (e = id_name(id, j.name)) || (e = nc_enter()))
		return e;
	dev = nc_current_device();
	if (dev < 0 || dev >= sg_device_count()) {
		nc_set_error("current device %d does not exist", dev);
		return ncclUnhandledCudaError;
	}
	j.comm = nc_comm_new();
	if (!j.comm || comm_setup(j.comm, nranks, rank, dev)) {
		nc_comm_free(j.comm);
		return ncclSystemError;
	}
	j.nranks = nranks;
	j.rank = rank;
	j.dev = dev;
	if (nc_group_depth() > 0) {
		/* created at ncclGroupEnd; the handle is valid now */
		e = nc_group_defer(&j);
	} else {
		e = nc_jobs_run(&j, 1);
	}
	if (e) {
		if (j.comm->seg.ctl)
			nc_comm_release(j.comm, true);
		nc_comm_free(j.comm);
		return e;
	}
	*out = j.comm;
	return ncclSuccess;
}

NC_API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
	ncclResult_t e = init_rank(comm, nranks, &commId, rank, NULL);

	NC_RETURN(e, "comm=%p nranks=%d commId=%.40s rank=%d", comm && !e ? (void *)*comm : NULL,
		  nranks, commId.internal + 8, rank);
}

NC_API ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId,
					   int rank, ncclConfig_t *config)
{
	ncclResult_t e = init_rank(comm, nranks, &commId, rank, config);

	NC_RETURN(e, "comm=%p nranks=%d commId=%.40s rank=%d config=%p",
		  comm && !e ? (void *)*comm : NULL, nranks, commId.internal + 8, rank,
		  (void *)config);
}

static ncclResult_t init_all(ncclComm_t *comms, int ndev, const int *devlist)
{
	struct nc_job *jobs;
	char name[NC_NAME_MAX];
	ncclResult_t e;
	int i;

	if (!comms) {
		nc_set_error("comms is NULL");
		return ncclInvalidArgument;
	}
	if (ndev < 1 || ndev > NC_MAX_RANKS) {
		nc_set_error("ndev %d out of range 1..%d", ndev, NC_MAX_RANKS);
		return ncclInvalidArgument;
	}
	if ((e = nc_enter()))
		return e;
	for (i = 0; i < ndev; i++) {
		int d = devlist ? devlist[i] : i;

		comms[i] = NULL;
		if (d < 0 || d >= sg_device_count()) {
			nc_set_error("device %d does not exist", d);
			return ncclUnhandledCudaError;
		}
	}
	if ((e = nc_seg_create(name)))
		return e;
	jobs = calloc((size_t)ndev, sizeof(*jobs));
	if (!jobs)
		return ncclSystemError;
	for (i = 0; i < ndev && !e; i++) {
		jobs[i].kind = NC_JOB_INIT;
		memcpy(jobs[i].name, name, NC_NAME_MAX);
		jobs[i].nranks = ndev;
		jobs[i].rank = i;
		jobs[i].dev = devlist ? devlist[i] : i;
		jobs[i].comm = nc_comm_new();
		if (!jobs[i].comm || comm_setup(jobs[i].comm, ndev, i, jobs[i].dev))
			e = ncclSystemError;
	}
	if (!e)
		e = nc_jobs_run(jobs, ndev);
	for (i = 0; i < ndev; i++) {
		if (e && jobs[i].comm) {
			if (jobs[i].comm->seg.ctl)
				nc_comm_release(jobs[i].comm, true);
			nc_comm_free(jobs[i].comm);
		} else if (!e) {
			comms[i] = jobs[i].comm;
		}
	}
	free(jobs);
	return e;
}

NC_API ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
	ncclResult_t e = init_all(comm, ndev, devlist);

	NC_RETURN(e, "comms=%p ndev=%d devlist=%p comm0=%p", (void *)comm, ndev,
		  (const void *)devlist, comm && !e ? (void *)comm[0] : NULL);
}

static ncclResult_t comm_check(const struct ncclComm *c)
{
	if (!c) {
		nc_set_error("comm is NULL");
		return ncclInvalidArgument;
	}
	if (!nc_comm_live(c)) {
		nc_set_error("comm %p is not a live communicator", (const void *)c);
		return ncclInvalidArgument;
	}
	return ncclSuccess;
}

static ncclResult_t split(struct ncclComm *c, int color, int key, ncclComm_t *newcomm,
			  const ncclConfig_t *config)
{
	struct nc_job j = { .kind = NC_JOB_SPLIT };
	ncclResult_t e;

	if (!newcomm) {
		nc_set_error("newcomm is NULL");
		return ncclInvalidArgument;
	}
	*newcomm = NULL;
	if ((e = comm_check(c)))
		return e;
	if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
		nc_set_error("color %d is negative", color);
		return ncclInvalidArgument;
	}
	if ((e = check_config(config)))
		return e;
	if (!c->joined) {
		nc_set_error("comm %p is not initialised yet", (void *)c);
		return ncclInvalidUsage;
	}
	j.parent = c;
	j.color = color;
	j.key = key;
	j.round = ++c->split_round;
	j.out = newcomm;
	if (nc_group_depth() > 0) {
		/* as ncclCommInitRank in a group: the handle is valid now, created at ncclGroupEnd */
		if (color != NCCL_SPLIT_NOCOLOR && !(j.comm = nc_comm_new()))
			return ncclSystemError;
		if ((e = nc_group_defer(&j))) {
			nc_comm_free(j.comm);
			return e;
		}
		*newcomm = j.comm;
		return ncclSuccess;
	}
	return nc_jobs_run(&j, 1);
}

NC_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
				  ncclConfig_t *config)
{
	ncclResult_t e = split(comm, color, key, newcomm, config);

	NC_RETURN(e, "comm=%p color=%d key=%d newcomm=%p config=%p", (void *)comm, color, key,
		  newcomm ? (void *)*newcomm : NULL, (void *)config);
}

/* ---- teardown ----------------------------------------------------------------------------------------- */
static ncclResult_t teardown(struct ncclComm *c, bool abort)
{
	ncclResult_t e = comm_check(c);

	if (e)
		return e;
	if (!comm_unregister(c)) {
		nc_set_error("comm %p destroyed twice", (void *)c);
		return ncclInvalidArgument;
	}
	if (c->seg.ctl)
		nc_comm_release(c, abort);
	/* unregistered already: free without the registry lock dance */
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	free(c->send_seq);
	free(c->recv_seq);
	c->magic = 0;
	free(c);
	return ncclSuccess;
}

NC_API ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	ncclResult_t e = teardown(comm, false);

	NC_RETURN(e, "comm=%p", (void *)comm);
}

NC_API ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	ncclResult_t e = teardown(comm, true);

	NC_RETURN(e, "comm=%p", (void *)comm);
}

NC_API ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
	ncclResult_t e = comm_check(comm);

	if (!e) {
		nc_comm_drain(comm);
		comm->finalized = true;
	}
	NC_RETURN(e, "comm=%p", (void *)comm);
}

/* ---- queries ------------------------------------------------------------------------------------------- */
#define QUERY(api, field)                                                     \
	NC_API ncclResult_t api(const ncclComm_t comm, int *out)              \
	{                                                                     \
		ncclResult_t e = comm_check(comm);                            \
                                                                              \
		if (!e && !out) {                                             \
			nc_set_error(#api ": output pointer is NULL");        \
			e = ncclInvalidArgument;                              \
		}                                                             \
		if (!e)                                                       \
			*out = comm->field;                                   \
		NC_RETURN(e, "comm=%p out=%d", (void *)comm, !e ? *out : -1); \
	}

QUERY(ncclCommCount, nranks)
QUERY(ncclCommCuDevice, dev)
QUERY(ncclCommUserRank, rank)

NC_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
	ncclResult_t e = comm_check(comm);

	if (!e && !asyncError) {
		nc_set_error("ncclCommGetAsyncError: asyncError is NULL");
		e = ncclInvalidArgument;
	}
	if (!e)
		*asyncError = __atomic_load_n(&comm->async_err, __ATOMIC_ACQUIRE);
	NC_RETURN(e, "comm=%p asyncError=%d", (void *)comm, !e ? (int)*asyncError : -1);
}

NC_API const char *ncclGetErrorString(ncclResult_t result)
{
	NC_FRAME();
	switch (result) {
	case ncclSuccess:
		return "no error";
	case ncclUnhandledCudaError:
		return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
	case ncclSystemError:
		return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
	case ncclInternalError:
		return "internal error - please report this issue to the NCCL developers";
	case ncclInvalidArgument:
		return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case ncclInvalidUsage:
		return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	case ncclRemoteError:
		return "remote process exited or there was a network error";
	case ncclInProgress:
		return "NCCL operation in progress";
	default:
		return "unknown result code";
	}
}

NC_API const char *ncclGetLastError(ncclComm_t comm)
{
	NC_FRAME();
	(void)comm;
	return nc_last_error();
}
