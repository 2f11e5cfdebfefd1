/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * session_info.c — the model's tables of the session itself: what it was (tool,
 * command line, host, its start and end), what a probe hit and a traced
 * call cost, the kernel's features and their stand-ins, the probes'
 * removal, the unwind tables' and the holds' summaries, the command
 * launched, the processes skipped, where the records came from and what a
 * merge was made of.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "model/model_internal.h"

void gp_model_set_session(struct gp_model *m, const struct gp_session_info *info)
{
	gp_model_tap_session(
		m, &(struct gp_op_session){ .tool_version = info->tool_version,
					    .command_line = info->command_line,
					    .mode = info->mode,
					    .hostname = info->hostname,
					    .kernel_release = info->kernel_release,
					    .start_mono_ns = info->start_mono_ns,
					    .start_realtime_ns = info->start_realtime_ns });
	/* an allocation failure leaves the previous value (or NULL, printed as "") */
	gp_replace_str(&m->session.tool_version, info->tool_version);
	gp_replace_str(&m->session.command_line, info->command_line);
	gp_replace_str(&m->session.mode, info->mode);
	gp_replace_str(&m->session.hostname, info->hostname);
	gp_replace_str(&m->session.kernel_release, info->kernel_release);
	m->session.start_mono_ns = info->start_mono_ns;
	m->session.start_realtime_ns = info->start_realtime_ns;
	m->session.set = true;
}

static char *dup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

void gp_model_set_source(struct gp_model *m, const struct gp_report_source *src)
{
	free((char *)m->source.kind);
	free((char *)m->source.capture_file);
	free((char *)m->source.cut);
	free((char *)m->source.corruption);
	m->source = *src;
	m->source.kind = dup_or_null(src->kind);
	m->source.capture_file = dup_or_null(src->capture_file);
	m->source.cut = dup_or_null(src->cut);
	m->source.corruption = dup_or_null(src->corruption);
}

bool gp_model_session_ended(const struct gp_model *m)
{
	return m->session.end_mono_ns != 0;
}

__u64 gp_model_last_event_ns(const struct gp_model *m)
{
	return m->last_event_ns;
}

void gp_model_set_probe_cost(struct gp_model *m, __u64 probe_hit_ns)
{
	gp_model_tap_probe_cost(m, &(struct gp_op_probe_cost){ .probe_hit_ns = probe_hit_ns });
	m->session.probe_hit_ns = probe_hit_ns;
}

int gp_model_set_kernel(struct gp_model *m, const char *features, int perf_event_paranoid)
{
	gp_model_tap_kernel(m,
			    &(struct gp_op_kernel){ .features = features,
						    .perf_event_paranoid = perf_event_paranoid });
	m->session.kernel.set = true;
	m->session.kernel.perf_event_paranoid = perf_event_paranoid;
	return gp_replace_str(&m->session.kernel.features, features);
}

int gp_model_kernel_replaced(struct gp_model *m, const char *feature, const char *since,
			     const char *by, const char *cost, bool by_request)
{
	struct gp_kernel_replaced *r;

	gp_model_tap_kernel_replaced(m,
				     &(struct gp_op_kernel_replaced){ .feature = feature,
								      .since = since,
								      .by = by,
								      .cost = cost,
								      .by_request = by_request });
	r = realloc(m->session.kernel.replaced, (m->session.kernel.nreplaced + 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	m->session.kernel.replaced = r;
	r += m->session.kernel.nreplaced;
	*r = (struct gp_kernel_replaced){ .feature = feature ? strdup(feature) : NULL,
					  .since = since ? strdup(since) : NULL,
					  .by = by ? strdup(by) : NULL,
					  .cost = cost ? strdup(cost) : NULL,
					  .by_request = by_request };
	if ((feature && !r->feature) || (since && !r->since) || (by && !r->by) ||
	    (cost && !r->cost)) {
		free(r->feature);
		free(r->since);
		free(r->by);
		free(r->cost);
		return -ENOMEM;
	}
	m->session.kernel.nreplaced++;
	return 0;
}

void gp_model_set_probe_removal(struct gp_model *m, __u64 probes, __u64 ns)
{
	gp_model_tap_probe_removal(m, &(struct gp_op_probe_removal){ .probes = probes, .ns = ns });
	m->session.kernel.removal_set = true;
	m->session.kernel.removal_probes = probes;
	m->session.kernel.removal_ns = ns;
}

void gp_model_set_probe_remover(struct gp_model *m, int pid)
{
	gp_model_tap_probe_remover(m, &(struct gp_op_probe_remover){ .pid = (__u32)pid });
	m->session.kernel.remover_pid = pid;
}

void gp_model_set_unwind(struct gp_model *m, const struct gp_unwind_summary *u)
{
	char *file = u->build_max_file ? strdup(u->build_max_file) : NULL;

	gp_model_tap_unwind(m, &(struct gp_op_unwind){ .procs = u->procs,
						       .procs_max = u->procs_max,
						       .procs_full = u->procs_full,
						       .maps = u->maps,
						       .maps_none = u->maps_none,
						       .maps_over = u->maps_over,
						       .files = u->files,
						       .files_built = u->files_built,
						       .files_reused = u->files_reused,
						       .files_evicted = u->files_evicted,
						       .rows = u->rows,
						       .rows_max = u->rows_max,
						       .pool_rows = u->pool_rows,
						       .build_ns = u->build_ns,
						       .build_ns_max = u->build_ns_max,
						       .build_max_file = u->build_max_file,
						       .fail_open = u->fail_open,
						       .fail_not_elf = u->fail_not_elf,
						       .fail_no_cfi = u->fail_no_cfi,
						       .fail_too_big = u->fail_too_big,
						       .fail_pool_full = u->fail_pool_full,
						       .fail_files_full = u->fail_files_full,
						       .fail_no_segment = u->fail_no_segment,
						       .fail_other = u->fail_other,
						       .python_holds = u->python_holds });
	free((char *)m->session.unwind.build_max_file);
	m->session.unwind = *u;
	m->session.unwind.build_max_file = file;
	m->session.unwind_set = true;
}

void gp_model_set_holds(struct gp_model *m, const struct gp_holds_summary *h)
{
	gp_model_tap_holds(m, &(struct gp_op_holds){ .holds = h->holds,
						     .total_ns = h->total_ns,
						     .max_ns = h->max_ns,
						     .timed_out = h->timed_out,
						     .exec = h->exec,
						     .map = h->map,
						     .python = h->python,
						     .files_left_out = h->files_left_out });
	m->session.holds = *h;
	m->session.holds_set = true;
}

int gp_model_hold_file(struct gp_model *m, __u64 dev, __u64 ino, __u32 reason, const char *path,
		       __u64 holds, __u64 total_ns, __u64 max_ns)
{
	struct gp_hold_file_row *r = NULL;

	for (size_t i = 0; i < m->session.nhold_files && !r; i++)
		if (m->session.hold_files[i].dev == dev && m->session.hold_files[i].ino == ino &&
		    m->session.hold_files[i].reason == reason)
			r = &m->session.hold_files[i];
	if (!r) {
		if (GP_ARRAY_GROW(m->session.hold_files, m->session.caphold_files,
				  m->session.nhold_files + 1, 16))
			return -ENOMEM;
		r = &m->session.hold_files[m->session.nhold_files++];
		*r = (struct gp_hold_file_row){ .dev = dev, .ino = ino, .reason = reason };
	}
	if (path && !r->path && !(r->path = strdup(path)))
		return -ENOMEM;
	gp_model_tap_hold_file(m, &(struct gp_op_hold_file){ .dev = dev,
							     .ino = ino,
							     .reason = reason,
							     .path = path,
							     .holds = holds,
							     .total_ns = total_ns,
							     .max_ns = max_ns });
	r->holds = holds;
	r->total_ns = total_ns;
	r->max_ns = max_ns;
	return 0;
}

int gp_model_hold_timeout(struct gp_model *m, __u32 pid, __u32 reason, __u64 held_ns)
{
	if (GP_ARRAY_GROW(m->session.timed_out, m->session.captimed_out, m->session.ntimed_out + 1,
			  16))
		return -ENOMEM;
	gp_model_tap_hold_timeout(m, &(struct gp_op_hold_timeout){
					     .pid = pid, .reason = reason, .held_ns = held_ns });
	m->session.timed_out[m->session.ntimed_out++] =
		(struct gp_hold_timed_out){ .pid = pid, .reason = reason, .held_ns = held_ns };
	return 0;
}

void gp_model_set_probe_call_cost(struct gp_model *m, __u64 probe_call_ns)
{
	gp_model_tap_probe_call_cost(
		m, &(struct gp_op_probe_call_cost){ .probe_call_ns = probe_call_ns });
	m->session.probe_call_ns = probe_call_ns;
}

void gp_model_set_session_end(struct gp_model *m, __u64 end_mono_ns)
{
	gp_model_tap_session_end(m, &(struct gp_op_session_end){ .end_mono_ns = end_mono_ns });
	m->session.end_mono_ns = end_mono_ns;
}

void gp_model_set_timeline_files(struct gp_model *m, __u32 files)
{
	m->session.timeline_files = files; /* an output of this run, not in the capture */
}

int gp_model_skipped_add(struct gp_model *m, __u32 pid, const char *comm, const char *reason)
{
	struct gp_skipped *v = realloc(m->skipped, (m->nskipped + 1) * sizeof(*v));

	gp_model_tap_skipped(m,
			     &(struct gp_op_skipped){ .pid = pid, .comm = comm, .reason = reason });
	if (!v)
		return -ENOMEM;
	m->skipped = v;
	v[m->nskipped] = (struct gp_skipped){ .pid = pid,
					      .comm = gp_dup_str(comm),
					      .reason = gp_dup_str(reason) };
	if (!v[m->nskipped].comm || !v[m->nskipped].reason) {
		free(v[m->nskipped].comm);
		free(v[m->nskipped].reason);
		return -ENOMEM;
	}
	m->nskipped++;
	return 0;
}

int gp_model_set_launch(struct gp_model *m, const char *command, bool exited, int exit_status,
			int term_signal)
{
	gp_model_tap_launch(m, &(struct gp_op_launch){ .command = command,
						       .exited = exited,
						       .exit_status = exit_status,
						       .term_signal = term_signal });
	m->launch.set = true;
	m->launch.exited = exited;
	m->launch.exit_status = exit_status;
	m->launch.term_signal = term_signal;
	return gp_replace_str(&m->launch.command, command);
}

void gp_model_set_merge(struct gp_model *m, const struct gp_merge_info *merge)
{
	m->merge = merge;
}

void gp_session_release(struct gp_model *m)
{
	for (size_t i = 0; i < m->nskipped; i++) {
		free(m->skipped[i].comm);
		free(m->skipped[i].reason);
	}
	free(m->skipped);
	free(m->launch.command);
	free((char *)m->source.kind);
	free((char *)m->source.capture_file);
	free((char *)m->source.cut);
	free((char *)m->source.corruption);
	free(m->session.tool_version);
	free(m->session.command_line);
	free(m->session.mode);
	free(m->session.hostname);
	free(m->session.kernel_release);
	free(m->session.kernel.features);
	for (size_t i = 0; i < m->session.kernel.nreplaced; i++) {
		struct gp_kernel_replaced *r = &m->session.kernel.replaced[i];

		free(r->feature);
		free(r->since);
		free(r->by);
		free(r->cost);
	}
	free(m->session.kernel.replaced);
	free((char *)m->session.unwind.build_max_file);
	free(m->session.timed_out);
	for (size_t i = 0; i < m->session.nhold_files; i++)
		free(m->session.hold_files[i].path);
	free(m->session.hold_files);
}
