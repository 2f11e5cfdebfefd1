/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* counters.c — the kernel's probe hit and loss counters into the model (counters.h). */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <stdlib.h>

#include "probes/uprobes.h"
#include "session/counters.h"
#include "model/model.h"

/* The sum over the CPUs of a per-CPU array's key (0 when it cannot be read). */
static __u64 percpu_sum(int fd, __u32 key, __u64 *vals, int ncpu)
{
	__u64 total = 0;

	if (bpf_map_lookup_elem(fd, &key, vals) == 0)
		for (int c = 0; c < ncpu; c++)
			total += vals[c];
	return total;
}

void gp_counters_collect(struct gp_counters *c, const struct gp_uprobes *probes, struct gp_model *m)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *vals;

	if (ncpu <= 0 || !(vals = calloc((size_t)ncpu, sizeof(*vals))))
		return;
	c->hits_gated = c->hits_other = 0;
	for (size_t i = 0; i < probes->n; i++) {
		const struct gp_probe *p = &probes->v[i];
		__u64 entries = percpu_sum(c->hits_fd, 2 * p->idx, vals, ncpu);
		__u64 returns = percpu_sum(c->hits_fd, 2 * p->idx + 1, vals, ncpu);

		gp_model_probe_hits(m, p->idx, entries, returns);
		*(p->gated ? &c->hits_gated : &c->hits_other) += entries + returns;
	}
	c->drops = c->estimates = 0; /* totals: also read once a second for the daemon */
	for (__u32 d = 0; d < GP_BPF_DROP_MAX; d++) {
		__u64 total = percpu_sum(c->drops_fd, d, vals, ncpu);

		gp_model_drop_set(m, gp_bpf_drop_name(d), total);
		if (d == GP_DROP_SWITCH_IN_UNSEEN)
			c->estimates += total;
		else
			c->drops += total;
	}
	free(vals);
}
