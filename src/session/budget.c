/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* budget.c — reading the aggregates and carrying out the duty cycle (budget.h). */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_api.skel.h"

#include "probes/bpf_objects.h"
#include "processes/procs.h"
#include "probes/uprobes.h"
#include "collect/agg.h"
#include "session/budget.h"
#include "session/counters.h"
#include "log.h"
#include "model/model.h"

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static void read_aggregates(struct gp_budget *b, __u64 now)
{
	int err;

	b->agg_at_ns = b->read_ns = now;
	if ((err = gp_agg_collect(b->agg)))
		gp_warn("read the kernel's call aggregates: %s", strerror(-err));
}

/* What tgid's calls counted since the last read stand for (agg.h). */
static double duty_weight(void *ctx, __u32 tgid)
{
	struct gp_budget *b = ctx;

	return gp_duty_weight(b->duty, gp_model_process_attach_ns(b->model, tgid), b->read_ns);
}

/*
 * The hot probes in (true) or out. A call is counted only while both its
 * entry and its return probe are in place and the kernel's gate is open:
 * the window is from the end of the opening to the start of the closing
 * (what is cut at either end is duty_cut).
 */
static void gate(struct gp_budget *b, bool open)
{
	if (!open) {
		gp_bpf_gate(b->bpf, false); /* counting stops here */
		gp_duty_closed(b->duty, now_ns());
		gp_uprobes_gate(b->probes, false);
		return;
	}
	gp_uprobes_gate(b->probes, true);
	b->duty->on_start = now_ns();
	gp_bpf_gate(b->bpf, true);
}

/* Our own process traced (1) or not (0): the measurement of a traced call runs the programs' work. */
static int admit_self(struct gp_budget *b, bool on)
{
	int fd = bpf_map__fd(b->bpf->api->maps.tgid_bits);
	__u32 tgid = (__u32)getpid(), word = tgid >> 6;
	__u64 bits;

	if (bpf_map_lookup_elem(fd, &word, &bits))
		return -errno;
	bits = on ? bits | 1ull << (tgid & 63) : bits & ~(1ull << (tgid & 63));
	return bpf_map_update_elem(fd, &word, &bits, BPF_ANY) ? -errno : 0;
}

static int discard(void *ctx, void *data, size_t len)
{
	return 0;
}

/*
 * The measurement's traces gone: its records out of the ring, its hits and
 * any loss it caused off the counters (nothing else is traced yet).
 */
static void forget_measurement(struct gp_budget *b, unsigned idx)
{
	struct ring_buffer *rb =
		ring_buffer__new(bpf_map__fd(b->bpf->api->maps.events), discard, NULL, NULL);
	int ncpu = libbpf_num_possible_cpus();
	__u64 *zeros = ncpu > 0 ? calloc((size_t)ncpu, sizeof(*zeros)) : NULL;

	int agg = bpf_map__fd(b->bpf->api->maps.api_agg);
	struct gp_api_agg_key key, next;
	bool first = true;

	if (rb) {
		ring_buffer__consume(rb);
		ring_buffer__free(rb);
	}
	/* --aggregate: the calls counted in the kernel instead (only ours are there yet) */
	while (bpf_map_get_next_key(agg, first ? NULL : &key, &next) == 0) {
		first = false;
		key = next;
		if (next.tgid == (__u32)getpid() && bpf_map_delete_elem(agg, &next) == 0)
			first = true; /* deleted: start over (the next key of a deleted one is undefined) */
	}
	if (!zeros)
		return;
	for (__u32 k = 2 * idx; k <= 2 * idx + 1; k++)
		bpf_map_update_elem(b->counters->hits_fd, &k, zeros, BPF_ANY);
	for (__u32 d = 0; d < GP_BPF_DROP_MAX; d++)
		bpf_map_update_elem(b->counters->drops_fd, &d, zeros, BPF_ANY);
	free(zeros);
}

/*
 * A traced cudaLaunchKernel's cost with this session's options: both hits
 * and both programs' whole work, on a probe placed with that API's cookie
 * while gpuprobed's own process is admitted (before any target is).
 */
static double measure_traced_call(struct gp_budget *b)
{
	const unsigned idx =
		GP_MAX_PROBES - 1; /* a probe index no library gets before it is forgotten */
	double call;
	int err;

	if ((err = admit_self(b, true)))
		return err;
	call = gp_uprobes_measure_call_ns(b->probes, GP_API_CUDA_LAUNCH_KERNEL, idx);
	admit_self(b, false);
	forget_measurement(b, idx);
	return call;
}

double gp_budget_measure_probe_cost(struct gp_budget *b, bool daemon)
{
	double hit = gp_uprobes_measure_hit_ns(b->probes), call = measure_traced_call(b);

	if (call > 0) {
		gp_info("a traced call costs %.0f ns here (two probe hits and our programs' work)",
			call);
		gp_model_set_probe_call_cost(b->model, (__u64)(call + 0.5));
	} else {
		gp_warn("could not measure what a traced call costs here (a traced probe on gpuprobed's own "
			"gp_hit_cost_target: %s)",
			strerror((int)-call));
	}
	if (hit > 0) {
		gp_info("a probe hit costs %.0f ns here (+ %d ns of our programs' work)", hit,
			GP_PROGRAM_HIT_NS);
		gp_model_set_probe_cost(b->model, (__u64)(hit + 0.5));
	} else {
		gp_warn("could not measure what a probe hit costs here (a probe on gpuprobed's own "
			"gp_hit_cost_target: %s)%s",
			strerror((int)-hit),
			daemon ? ": the daemon's estimates use " GP_PROBE_HIT_COST_TEXT : "");
	}
	/* a hit's share of a traced call; else the bare hit and our programs' usual work */
	return call > 0 ? call / 2 : hit > 0 ? hit + GP_PROGRAM_HIT_NS : hit;
}

int gp_budget_start_duty(struct gp_budget *b, double hit_ns)
{
	if (!(b->duty = malloc(sizeof(*b->duty))))
		return -ENOMEM;
	gp_duty_init(b->duty, b->overhead_budget ? *b->overhead_budget : 0, hit_ns, now_ns());
	b->probes->gating = b->probes->aggregate;
	b->probes->gate_open = true;
	gp_model_set_sampling(b->model, &b->duty->report);
	if (b->agg)
		gp_agg_set_weight(b->agg, duty_weight, b);
	return 0;
}

/*
 * The duty cycle's step at each drain: close the window when it is over;
 * at a period's end, read the aggregates (weighted), the hit counters and
 * the traced CPU time, plan the next period and open the window.
 */
static void duty_step(struct gp_budget *b)
{
	struct gp_duty *d = b->duty;
	__u64 now = now_ns();
	bool was_open = d->open;
	double was = d->duty;
	__u64 over = d->report.over_budget;

	switch (gp_duty_due(d, now)) {
	case GP_DUTY_NOTHING:
		return;
	case GP_DUTY_CLOSE:
		gate(b, false);
		return;
	case GP_DUTY_PERIOD_END:
		break;
	}
	if (b->overhead_budget)
		gp_duty_set_budget(d, *b->overhead_budget);
	if (b->agg)
		read_aggregates(b, now);
	gp_counters_collect(b->counters, b->probes, b->model);
	gp_duty_next_period(d, now, b->counters->hits_gated, b->counters->hits_other,
			    gp_procs_cpu_delta_ns(b->procs));
	if (!was_open)
		gate(b, true);
	gp_model_set_sampling(b->model, &d->report);
	if (d->report.over_budget > over && !over)
		gp_warn("overhead budget %.3g%%: over it even with the hot probes attached %.0f%% of the time "
			"(the other probes cost too much on their own)",
			100 * d->budget, 100 * GP_DUTY_MIN);
	if ((was < 1) != (d->duty < 1))
		gp_notice(
			"overhead budget %.3g%%: hot probes attached %s (probes would cost %.3g%% of the "
			"traced CPU time)",
			100 * d->budget,
			d->duty < 1 ? "for part of each second: their counts are estimates"
				    : "all the time again",
			100 * d->report.overhead_full);
}

void gp_budget_step(struct gp_budget *b)
{
	if (b->duty) {
		duty_step(b);
		return;
	}
	if (b->agg) {
		__u64 now = now_ns();

		if (now - b->agg_at_ns >= 1000000000ull)
			read_aggregates(b, now);
	}
}

void gp_budget_process_exited(struct gp_budget *b, __u32 pid)
{
	if (!b->agg)
		return;
	if (b->duty) { /* the others' part of the period is not over: theirs wait */
		b->read_ns = now_ns();
		gp_agg_collect_process(b->agg, pid);
	} else {
		read_aggregates(b, now_ns());
	}
}

void gp_budget_detached(struct gp_budget *b)
{
	if (b->duty && b->duty->open)
		gp_duty_closed(b->duty, now_ns());
}

void gp_budget_finish(struct gp_budget *b)
{
	if (b->agg)
		read_aggregates(b, now_ns()); /* after the detach: final totals */
	if (b->duty)
		gp_model_set_sampling(b->model, &b->duty->report);
}

void gp_budget_release(struct gp_budget *b)
{
	free(b->duty);
	gp_agg_free(b->agg);
	b->duty = NULL;
	b->agg = NULL;
}
