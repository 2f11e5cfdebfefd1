/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * metrics_process.c — the per-process families of the /metrics page (see
 * metrics_internal.h): API calls, errors and time, transfers, device
 * memory, NCCL operations and each rank's progress, and the kernel's CPU
 * counters of the live processes; one family at a time, a sample per
 * process (and per bounded label: API, direction, op, kind).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/finding.h"
#include "daemon/metrics_internal.h"
#include "text/labels.h"

/* A process's two samples of name told apart by kind (voluntary/involuntary, minor/major). */
static void kind_pair(struct render *r, const char *name, const char *plabels, const char *k1,
		      __u64 v1, const char *k2, __u64 v2)
{
	open_sample(r, name, plabels);
	label(r, true, "kind", k1);
	close_u64(r, v1);
	open_sample(r, name, plabels);
	label(r, true, "kind", k2);
	close_u64(r, v2);
}

/* ---- per process families ------------------------------------------------- */

static void api_labels(struct render *r, unsigned a)
{
	label(r, true, "api", gp_apis[a].symbol);
	label(r, true, "library", gp_family_name(gp_apis[a].family));
}

enum api_field { API_CALLS, API_ERRORS, API_SECONDS, API_ESTIMATED };

static void api_family(struct render *r, const char *name, enum api_field fld, const char *help)
{
	family(r, name, "counter", help);
	FOR_PROCS(r, i, p, L)
	for (unsigned a = 1; a < GP_API_MAX; a++) {
		const struct gp_api_stats *st = p->api[a];

		if (!st || !st->time.count || (fld == API_ESTIMATED && !st->estimated_calls))
			continue;
		open_sample(r, name, L);
		api_labels(r, a);
		if (fld == API_SECONDS)
			close_ns(r, st->time.sum);
		else
			close_u64(r, fld == API_CALLS	 ? st->time.count
				     : fld == API_ERRORS ? st->errors
							 : st->estimated_calls);
	}
}

/*
 * The bounds of the call-duration histogram: 2^10 ns (1 us) to 2^34 ns (17 s), x4 apart. Powers of
 * two because both sources of the counts keep them exact: the model's log-linear histogram has an
 * edge at each, and the in-kernel aggregates (--aggregate) count durations in log2 buckets. A
 * bucket counts the calls shorter than its power of two: le = 2^k - 1 ns (durations are whole ns).
 */
#define DURATION_FIRST_POW 10
#define DURATION_LAST_POW  34
#define DURATION_POW_STEP  2

/* A duration in ns as decimal seconds, no trailing zeros (a le label's value). */
static void seconds_text(__u64 ns, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%llu.%09llu", (unsigned long long)(ns / 1000000000ull),
			 (unsigned long long)(ns % 1000000000ull));

	while (n > 2 && buf[n - 1] == '0' && buf[n - 2] != '.')
		buf[--n] = '\0';
}

static void duration_family(struct render *r)
{
	enum { N = (DURATION_LAST_POW - DURATION_FIRST_POW) / DURATION_POW_STEP + 1 };
	__u64 bounds[N], below[N];
	char le[N][32];

	for (unsigned i = 0; i < N; i++) {
		bounds[i] = 1ull << (DURATION_FIRST_POW + DURATION_POW_STEP * i);
		seconds_text(bounds[i] - 1, le[i], sizeof(le[i]));
	}
	family(r, "gpuprobed_api_call_duration_seconds", "histogram",
	       "Host-observed duration of each call of gpuprobed_api_calls_total (entry to return).");
	FOR_PROCS(r, i, p, L)
	for (unsigned a = 1; a < GP_API_MAX; a++) {
		const struct gp_api_stats *st = p->api[a];

		if (!st || !st->time.count || !st->time.buckets)
			continue; /* no histogram (it could not be allocated): no bucket is known */
		gp_stats_counts_below(&st->time, bounds, N, below);
		for (unsigned k = 0; k <= N; k++) {
			open_sample(r, "gpuprobed_api_call_duration_seconds_bucket", L);
			api_labels(r, a);
			label(r, true, "le", k < N ? le[k] : "+Inf");
			/* a live read of the aggregates may see a call counted before its bucket */
			close_u64(r, k < N ? below[k] : st->time.count);
		}
		open_sample(r, "gpuprobed_api_call_duration_seconds_sum", L);
		api_labels(r, a);
		close_ns(r, st->time.sum);
		open_sample(r, "gpuprobed_api_call_duration_seconds_count", L);
		api_labels(r, a);
		close_u64(r, st->time.count);
	}
}

enum xfer_field { XF_BYTES, XF_CALLS, XF_SECONDS };

static void xfer_family(struct render *r, const char *name, enum xfer_field fld, const char *help)
{
	family(r, name, "counter", help);
	FOR_PROCS(r, i, p, L)
	for (int d = 0; d < GP_DIR_MAX; d++)
		for (int h = 0; h < GP_HM_MAX; h++) {
			const struct gp_xfer_row *x = p->xfer[d][h];
			__u64 calls = x[0].calls + x[1].calls;

			if (!calls)
				continue;
			open_sample(r, name, L);
			label(r, true, "direction", gp_dir_name(d));
			label(r, true, "host_memory", gp_hostmem_name(h));
			if (fld == XF_SECONDS)
				close_ns(r, x[0].total_ns + x[1].total_ns);
			else
				close_u64(r, fld == XF_CALLS ? calls : x[0].bytes + x[1].bytes);
		}
}

static void memory_families(struct render *r)
{
	family(r, "gpuprobed_device_memory_bytes", "gauge",
	       "Device and managed memory the process has allocated and not freed (as seen by the traced calls).");
	FOR_PROCS(r, i, p, L)
	{
		open_sample(r, "gpuprobed_device_memory_bytes", L);
		close_u64(r, p->mem.total.live_bytes);
	}
	family(r, "gpuprobed_device_memory_peak_bytes", "gauge",
	       "Most device and managed memory the process had allocated at once while traced.");
	FOR_PROCS(r, i, p, L)
	{
		open_sample(r, "gpuprobed_device_memory_peak_bytes", L);
		close_u64(r, p->mem.total.peak_bytes);
	}
}

enum nccl_field { NC_CALLS, NC_BYTES, NC_SECONDS };

/* The comm_id label of a communicator: its 16 hex digits, "" (absent) when not known. */
static void comm_id_label(const struct gp_nccl_comm *cm, char id[17])
{
	id[0] = 0;
	if (cm->comm_id_known)
		snprintf(id, 17, "%016" PRIx64, (uint64_t)cm->comm_id);
}

static bool same_comm_id(const struct gp_nccl_comm *a, const struct gp_nccl_comm *b)
{
	return a->comm_id_known == b->comm_id_known &&
	       (!a->comm_id_known || a->comm_id == b->comm_id);
}

static void nccl_family(struct render *r, const char *name, enum nccl_field fld, const char *help)
{
	family(r, name, "counter", help);
	FOR_PROCS(r, i, p, L)
	{
		if (!p->nccl)
			continue;
		/* by comm_id (handles are not labels): communicators without one are summed together */
		for (size_t c = 0; c < p->nccl->ncomms; c++) {
			const struct gp_nccl_comm *cm = p->nccl->comms[c];
			__u64 sum[GP_NCCL_OP_MAX][3] = { { 0 } };
			char id[17];
			bool first = true;

			for (size_t e = 0; e < c && first; e++)
				first = !same_comm_id(p->nccl->comms[e], cm);
			if (!first)
				continue; /* summed with the earlier one */
			for (size_t e = c; e < p->nccl->ncomms; e++) {
				const struct gp_nccl_comm *ce = p->nccl->comms[e];

				if (!same_comm_id(ce, cm))
					continue;
				for (size_t k = 0; k < ce->nrows; k++) {
					const struct gp_nccl_row *row = ce->rows[k];

					if ((unsigned)row->op >= GP_NCCL_OP_MAX)
						continue;
					sum[row->op][NC_CALLS] += row->calls;
					sum[row->op][NC_BYTES] += row->bytes;
					sum[row->op][NC_SECONDS] += row->host_ns;
				}
			}
			comm_id_label(cm, id);
			for (int op = 0; op < GP_NCCL_OP_MAX; op++) {
				if (!sum[op][NC_CALLS])
					continue;
				open_sample(r, name, L);
				label(r, true, "op", gp_nccl_op_name(op));
				if (id[0])
					label(r, true, "comm_id", id);
				if (fld == NC_SECONDS)
					close_ns(r, sum[op][fld]);
				else
					close_u64(r, sum[op][fld]);
			}
		}
	}
}

/* A communicator's series of its own (comm_id, rank): known id and rank, the first of its process. */
static bool rank_series(const struct gp_process *p, size_t c, char id[17], char rank[12],
			char nranks[12])
{
	const struct gp_nccl_comm *cm = p->nccl->comms[c];

	if (!cm->comm_id_known || cm->rank < 0)
		return false;
	for (size_t e = 0; e < c; e++)
		if (p->nccl->comms[e]->comm_id_known && p->nccl->comms[e]->comm_id == cm->comm_id &&
		    p->nccl->comms[e]->rank == cm->rank)
			return false;
	comm_id_label(cm, id);
	snprintf(rank, 12, "%d", cm->rank);
	snprintf(nranks, 12, "%d", cm->nranks);
	return true;
}

/* One sample per rank of each communicator: its collectives entered, or how long it has waited (now). */
static void rank_family(struct render *r, const char *name, bool waiting, __u64 now)
{
	char id[17], rank[12], nranks[12];

	FOR_PROCS(r, i, p, L)
	{
		for (size_t c = 0; p->nccl && c < p->nccl->ncomms; c++) {
			const struct gp_nccl_comm *cm = p->nccl->comms[c];

			if (!rank_series(p, c, id, rank, nranks))
				continue;
			open_sample(r, name, L);
			label(r, true, "comm_id", id);
			label(r, true, "rank", rank);
			label(r, true, "nranks", nranks);
			if (waiting)
				close_ns(r,
					 !p->exited && cm->wait_since_ns && now > cm->wait_since_ns
						 ? now - cm->wait_since_ns
						 : 0);
			else
				close_u64(r, cm->collectives + (cm->inflight ? 1 : 0));
		}
	}
}

/*
 * Per rank of each communicator (the stall detector's, src/session/stalls.c): collectives entered
 * (returned, and the one in progress), and how long it has waited on its current one.
 */
static void nccl_rank_families(struct render *r)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	family(r, "gpuprobed_nccl_collectives_entered_total", "counter",
	       "Collectives (not Send/Recv) this rank of the communicator has entered: its last sequence number.");
	rank_family(r, "gpuprobed_nccl_collectives_entered_total", false, 0);
	family(r, "gpuprobed_nccl_waiting_seconds", "gauge",
	       "How long this rank has waited on its current collective (inside the NCCL call, or blocked in a "
	       "synchronisation awaiting it); 0 when not waiting.");
	rank_family(r, "gpuprobed_nccl_waiting_seconds", true,
		    (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec);
}

static void cpu_families(struct render *r)
{
	long hz = sysconf(_SC_CLK_TCK);

	if (hz <= 0)
		hz = 100;
	family(r, "gpuprobed_process_cpu_seconds_total", "counter",
	       "User and system CPU time of the live process since it started (/proc/PID/stat).");
	FOR_PROCS(r, i, p, L)
	{
		const struct proc_counts *pc = &r->pc[i];
		__u64 ticks = pc->utime + pc->stime;

		if (!pc->stat_ok)
			continue;
		open_sample(r, "gpuprobed_process_cpu_seconds_total", L);
		/* ticks to nanoseconds first: exact for every usual tick rate */
		close_ns(r, ticks / (__u64)hz * 1000000000ull +
				    ticks % (__u64)hz * 1000000000ull / (__u64)hz);
	}
	family(r, "gpuprobed_process_context_switches_total", "counter",
	       "Context switches of the live process's current threads since they started (/proc/PID/task/*/status).");
	FOR_PROCS(r, i, p, L)
	{
		const struct proc_counts *pc = &r->pc[i];

		if (!pc->switches_ok)
			continue;
		kind_pair(r, "gpuprobed_process_context_switches_total", L, "voluntary", pc->vol,
			  "involuntary", pc->invol);
	}
	family(r, "gpuprobed_process_page_faults_total", "counter",
	       "Page faults of the live process since it started (/proc/PID/stat).");
	FOR_PROCS(r, i, p, L)
	{
		const struct proc_counts *pc = &r->pc[i];

		if (!pc->stat_ok)
			continue;
		kind_pair(r, "gpuprobed_process_page_faults_total", L, "minor", pc->minflt, "major",
			  pc->majflt);
	}
}

/*
 * Each process's ranked recommendations (report.json recommendations[]): what a fix would save, by
 * rule. Two findings of one rule for one process (the NCCL straggler of two jobs) are one series:
 * their sum.
 */
static void recommendation_family(struct render *r)
{
	const char *name = "gpuprobed_recommendation_saving_seconds";
	const struct gp_findings *fs = r->findings;

	family(r, name, "gauge",
	       "Host time a fix would save, by the rule that found it (docs/recommendations.md): the "
	       "process's ranked recommendations, as its report has them.");
	FOR_PROCS(r, i, p, L)
	for (size_t k = 0; fs && k < fs->n; k++) {
		const struct gp_finding *f = fs->v[k];
		__u64 ns = 0;
		size_t j = 0;

		if (f->pid != p->pid)
			continue;
		for (; j < fs->n; j++) /* an earlier one of the rule: said there */
			if (fs->v[j]->pid == p->pid && !strcmp(fs->v[j]->id, f->id)) {
				if (j < k)
					break;
				ns += fs->v[j]->impact_ns;
			}
		if (j < fs->n)
			continue;
		open_sample(r, name, L);
		label(r, true, "rule", f->id);
		close_ns(r, ns);
	}
}

void gp_metrics_process_families(struct render *r)
{
	__u64 live = 0;

	api_family(
		r, "gpuprobed_api_calls_total", API_CALLS,
		"Calls of a traced API made outside any other traced call (a runtime call's own driver calls are not counted again).");
	api_family(r, "gpuprobed_api_errors_total", API_ERRORS,
		   "Of gpuprobed_api_calls_total, the calls that returned an error.");
	api_family(r, "gpuprobed_api_seconds_total", API_SECONDS,
		   "Host-observed time inside those calls, entry to return (not GPU time).");
	duration_family(r);
	api_family(
		r, "gpuprobed_api_estimated_calls_total", API_ESTIMATED,
		"Of gpuprobed_api_calls_total, the calls not seen but estimated: the overhead budget attached the "
		"probe for part of the time and the counts were scaled up (absent while every call was seen).");
	xfer_family(
		r, "gpuprobed_transfer_bytes_total", XF_BYTES,
		"Bytes copied by copy calls, by direction and by the kind of host memory involved.");
	xfer_family(r, "gpuprobed_transfers_total", XF_CALLS,
		    "Copy calls, by direction and by the kind of host memory involved.");
	xfer_family(
		r, "gpuprobed_transfer_seconds_total", XF_SECONDS,
		"Host-observed time inside copy calls (asynchronous copies return before the copy is done).");
	memory_families(r);
	nccl_family(
		r, "gpuprobed_nccl_calls_total", NC_CALLS,
		"NCCL collective and point-to-point calls, by operation, over all communicators.");
	nccl_family(
		r, "gpuprobed_nccl_bytes_total", NC_BYTES,
		"Bytes of those calls as nccl-tests counts them (the message size), by operation.");
	nccl_family(
		r, "gpuprobed_nccl_seconds_total", NC_SECONDS,
		"Host-observed time inside those calls (enqueueing, not the collective's GPU time).");
	nccl_rank_families(r);
	cpu_families(r);
	recommendation_family(r);
	family(r, "gpuprobed_process_exited", "gauge",
	       "1 when the traced process has exited (its series stay for the grace period), else 0.");
	FOR_PROCS(r, i, p, L)
	{
		open_sample(r, "gpuprobed_process_exited", L);
		close_u64(r, p->exited);
		live += !p->exited;
	}
	family(r, "gpuprobed_traced_processes", "gauge", "Traced processes that are alive.");
	plain_u64(r, "gpuprobed_traced_processes", live);
}
