/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* report_sections.c — the registry of a process's report sections (report_sections.h). */
#include "report/report_builders.h"
#include "report/report_md.h"
#include "report/report_sections.h"

/* The builders of report_doc*.c take (d, p): the window is the CPU section's alone. */
#define WINDOWLESS(fn)                                                                            \
	static json_t *fn##_w(struct gp_doc *d, const struct gp_process *p, __u64 from, __u64 to) \
	{                                                                                         \
		(void)from;                                                                       \
		(void)to;                                                                         \
		return fn(d, p);                                                                  \
	}
WINDOWLESS(gp_doc_api)
WINDOWLESS(gp_doc_nested_api)
WINDOWLESS(gp_doc_gpu_work)
WINDOWLESS(gp_doc_transfers)
WINDOWLESS(gp_doc_memsets)
WINDOWLESS(gp_doc_memory)
WINDOWLESS(gp_doc_kernels)
WINDOWLESS(gp_doc_graphs)
WINDOWLESS(gp_doc_nccl)
WINDOWLESS(gp_doc_streams)
WINDOWLESS(gp_doc_events)
WINDOWLESS(gp_doc_threads)
WINDOWLESS(gp_doc_stacks)
#undef WINDOWLESS

/* Inner calls left out with an outer call that never returned (nesting.c). */
static json_t *nested_left_out(struct gp_doc *d, const struct gp_process *p, __u64 from, __u64 to)
{
	(void)d;
	(void)from;
	(void)to;
	return gp_j_u64(p->nested_left_out + p->nwaiting);
}

/* report.md's renderers that need only the process (most). */
#define PROCESS_ONLY(fn)                                                 \
	static int fn##_r(const json_t *doc, const json_t *p, FILE *out) \
	{                                                                \
		(void)doc;                                               \
		return fn(p, out);                                       \
	}
PROCESS_ONLY(gp_md_nested)
PROCESS_ONLY(gp_md_gpu_work)
PROCESS_ONLY(gp_md_kernels)
PROCESS_ONLY(gp_md_nccl)
PROCESS_ONLY(gp_md_stacks)
PROCESS_ONLY(gp_md_streams)
PROCESS_ONLY(gp_md_cpu)
#undef PROCESS_ONLY

const struct gp_report_section gp_report_sections[] = {
	/* key               build                render          md order */
	{ "cuda_api", gp_doc_api_w, gp_md_api_table, 1 },
	{ NULL, NULL, gp_md_errors, 3 }, /* from cuda_api */
	{ "nested_api", gp_doc_nested_api_w, gp_md_nested_r, 2 },
	{ "nested_left_out", nested_left_out, NULL, 0 }, /* said by the nested section */
	{ "gpu_work", gp_doc_gpu_work_w, gp_md_gpu_work_r, 4 },
	{ "transfers", gp_doc_transfers_w, gp_md_transfers, 5 },
	{ "memsets", gp_doc_memsets_w, NULL, 0 }, /* shown with the transfers */
	{ "memory", gp_doc_memory_w, gp_md_memory, 6 },
	{ "kernels", gp_doc_kernels_w, gp_md_kernels_r, 7 },
	{ "graph_launches", gp_doc_graphs_w, NULL, 0 }, /* shown with the kernels */
	{ "nccl", gp_doc_nccl_w, gp_md_nccl_r, 8 },
	{ "streams", gp_doc_streams_w, gp_md_streams_r, 10 },
	{ "events", gp_doc_events_w, NULL, 0 }, /* shown with the streams */
	{ "cpu", gp_doc_cpu, gp_md_cpu_r, 11 },
	{ "threads", gp_doc_threads_w, gp_md_threads, 12 },
	{ "stacks", gp_doc_stacks_w, gp_md_stacks_r, 9 },
};
const size_t gp_report_nsections = sizeof(gp_report_sections) / sizeof(gp_report_sections[0]);

const struct gp_report_section *gp_next_md_section(unsigned *order)
{
	const struct gp_report_section *next = NULL;

	for (size_t i = 0; i < gp_report_nsections; i++) {
		const struct gp_report_section *s = &gp_report_sections[i];

		if (s->render && s->md_order > *order && (!next || s->md_order < next->md_order))
			next = s;
	}
	if (next)
		*order = next->md_order;
	return next;
}
