/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * clock_align.c — the offsets that put several captures on one time axis
 * (clock_align.h). The recorded CLOCK_REALTIME relation is only as good as
 * the hosts' time synchronisation (NTP: milliseconds), so wherever two
 * captures hold ranks of one communicator the collectives refine it: every
 * rank's synchronisation that awaited collective #k returns (release_ns)
 * right after the collective ended, and it ends on every rank at once, so
 * the difference of two hosts' earliest releases of #k is their offset plus
 * wake-up noise. The median over the collectives is the offset; half the
 * spread of the middle 80 % of the estimates its uncertainty. Causality
 * bounds it too: no release of #k on one host comes before any rank's
 * entry into #k on the other.
 */
#include <errno.h>
#include <stdlib.h>

#include "model/clock_align.h"

/* One capture's view of one communicator, per collective: its earliest release and latest entry. */
struct host_comm {
	__u64 *rel, *entry; /* [seq - 1]; 0: none seen */
	size_t n;
};

static void host_comm_free(struct host_comm *h)
{
	free(h->rel);
	free(h->entry);
	*h = (struct host_comm){ 0 };
}

static int host_comm_of(const struct gp_model *m, __u64 comm_id, struct host_comm *h)
{
	*h = (struct host_comm){ 0 };
	for (size_t i = 0; i < m->nprocs; i++) {
		const struct gp_nccl *nc = m->procs[i]->nccl;

		for (size_t k = 0; nc && k < nc->ncomms; k++) {
			const struct gp_nccl_comm *c = nc->comms[k];

			if (!c->comm_id_known || c->comm_id != comm_id)
				continue;
			if (c->narrivals > h->n) {
				__u64 *r = realloc(h->rel, c->narrivals * sizeof(*r));

				if (r)
					h->rel = r;
				__u64 *e = r ? realloc(h->entry, c->narrivals * sizeof(*e)) : NULL;

				if (!e) {
					host_comm_free(h);
					return -ENOMEM;
				}
				h->entry = e;
				for (size_t s = h->n; s < c->narrivals; s++)
					h->rel[s] = h->entry[s] = 0;
				h->n = c->narrivals;
			}
			for (size_t s = 0; s < c->narrivals; s++) {
				__u64 r = c->arrivals[s].release_ns, e = c->arrivals[s].entry_ns;

				if (r && (!h->rel[s] || r < h->rel[s]))
					h->rel[s] = r;
				if (e > h->entry[s])
					h->entry[s] = e;
			}
		}
	}
	return 0;
}

static int cmp_s64(const void *a, const void *b)
{
	__s64 x = *(const __s64 *)a, y = *(const __s64 *)b;

	return (x > y) - (x < y);
}

/* An offset of capture i from capture j's collectives of one communicator (j at offset off_j). */
struct fit {
	size_t n; /* collectives used; 0: none */
	__s64 offset, half_spread;
	bool bounded;
	__s64 lo, hi;
};

static int fit_pair(const struct host_comm *hi_, const struct host_comm *hj, __s64 off_j,
		    struct fit *f)
{
	size_t n = hi_->n < hj->n ? hi_->n : hj->n, k = 0;
	__s64 *d = n ? malloc(n * sizeof(*d)) : NULL;
	bool have_lo = false, have_hi = false;

	*f = (struct fit){ 0 };
	if (n && !d)
		return -ENOMEM;
	for (size_t s = 0; s < n; s++) {
		if (hi_->rel[s] && hj->rel[s])
			d[k++] = (__s64)(hj->rel[s] - hi_->rel[s]) + off_j;
		/* a release of #s on one side comes after every entry into #s on the other */
		if (hi_->rel[s] && hj->entry[s]) {
			__s64 lo = (__s64)(hj->entry[s] - hi_->rel[s]) + off_j;

			if (!have_lo || lo > f->lo)
				f->lo = lo;
			have_lo = true;
		}
		if (hj->rel[s] && hi_->entry[s]) {
			__s64 hi = (__s64)(hj->rel[s] - hi_->entry[s]) + off_j;

			if (!have_hi || hi < f->hi)
				f->hi = hi;
			have_hi = true;
		}
	}
	f->bounded = have_lo && have_hi && f->lo <= f->hi;
	if (k) {
		qsort(d, k, sizeof(*d), cmp_s64);
		f->n = k;
		f->offset = k % 2 ? d[k / 2] : d[k / 2 - 1] + (d[k / 2] - d[k / 2 - 1]) / 2;
		f->half_spread = (d[(9 * (k - 1) + 9) / 10] - d[(k - 1) / 10]) / 2;
		if (f->bounded && f->offset < f->lo)
			f->offset = f->lo;
		if (f->bounded && f->offset > f->hi)
			f->offset = f->hi;
		/* the causal bounds, when tighter, are the uncertainty */
		if (f->bounded) {
			__s64 w = f->offset - f->lo > f->hi - f->offset ? f->offset - f->lo
									: f->hi - f->offset;

			if (w < f->half_spread)
				f->half_spread = w;
		}
	}
	free(d);
	return 0;
}

/* The best fit of capture i against an aligned capture j over every communicator they share. */
static int fit_best(const struct gp_clock_in *in, size_t i, size_t j, __s64 off_j, struct fit *best,
		    __u64 *comm_id)
{
	const struct gp_model *m = in[i].m;

	*best = (struct fit){ 0 };
	for (size_t p = 0; p < m->nprocs; p++) {
		const struct gp_nccl *nc = m->procs[p]->nccl;

		for (size_t k = 0; nc && k < nc->ncomms; k++) {
			const struct gp_nccl_comm *c = nc->comms[k];
			struct host_comm a, b;
			struct fit f;
			int err;

			if (!c->comm_id_known)
				continue;
			if ((err = host_comm_of(m, c->comm_id, &a)))
				return err;
			if ((err = host_comm_of(in[j].m, c->comm_id, &b))) {
				host_comm_free(&a);
				return err;
			}
			err = fit_pair(&a, &b, off_j, &f);
			host_comm_free(&a);
			host_comm_free(&b);
			if (err)
				return err;
			if (f.n > best->n) {
				*best = f;
				*comm_id = c->comm_id;
			}
		}
	}
	return 0;
}

int gp_clock_align(const struct gp_clock_in *in, size_t n, struct gp_merge_capture *out)
{
	bool *done = calloc(n ? n : 1, sizeof(*done));

	if (!done)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		out[i].realtime_known = in[i].realtime_known && in[0].realtime_known;
		out[i].realtime_offset_ns =
			out[i].realtime_known ? in[i].wall_minus_mono_ns - in[0].wall_minus_mono_ns
					      : 0;
		out[i].uncertainty_ns = -1;
		out[i].method = "none";
	}
	if (n) {
		out[0].method = "reference";
		out[0].uncertainty_ns = 0;
		done[0] = true;
	}
	for (;;) {
		size_t bi = n, bj = 0;
		struct fit best = { 0 };
		__u64 best_comm = 0;

		/* the capture with the most collectives shared with one already aligned */
		for (size_t i = 0; i < n; i++) {
			for (size_t j = 0; !done[i] && j < n; j++) {
				struct fit f;
				__u64 comm = 0;
				int err;

				if (!done[j])
					continue;
				if ((err = fit_best(in, i, j, out[j].offset_ns, &f, &comm))) {
					free(done);
					return err;
				}
				if (f.n >= GP_CLOCK_MIN_COLLECTIVES && f.n > best.n) {
					best = f;
					best_comm = comm;
					bi = i;
					bj = j;
				}
			}
		}
		if (bi < n) {
			out[bi].method = "collectives";
			out[bi].offset_ns = best.offset;
			out[bi].uncertainty_ns =
				best.half_spread +
				(out[bj].uncertainty_ns > 0 ? out[bj].uncertainty_ns : 0);
			out[bi].collectives = best.n;
			out[bi].aligned_to = bj;
			out[bi].comm_id = best_comm;
			out[bi].bounded = best.bounded;
			out[bi].lo_ns = best.lo;
			out[bi].hi_ns = best.hi;
			done[bi] = true;
			continue;
		}
		/* none shares collectives with the aligned ones: the next by its recorded relation, if any */
		for (bi = 0; bi < n && done[bi]; bi++)
			;
		if (bi == n)
			break;
		if (out[bi].realtime_known) {
			out[bi].method = "realtime";
			out[bi].offset_ns = out[bi].realtime_offset_ns;
		}
		done[bi] = true;
	}
	free(done);
	return 0;
}
