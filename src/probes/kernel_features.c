/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* kernel_features.c — what the running kernel offers (kernel_features.h). */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "probes/kernel_features.h"
#include "probes/uprobe_multi.h"
#include "log.h"

static const struct {
	const char *name, *since, *what, *replacement, *cost;
} features[GP_KF_N] = {
	[GP_KF_BTF] = { "btf", "5.4",
			"BTF type information (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF)" },
	[GP_KF_RING_BUFFER] = { "ring_buffer", "5.8",
				"the BPF ring buffer (BPF_MAP_TYPE_RINGBUF)" },
	[GP_KF_TASK_BTF] = { "current_task_btf", "5.11", "bpf_get_current_task_btf",
			     "the current task's fields read with bpf_probe_read_kernel",
			     "a helper call for each field a probe reads of the task (2 a call, ~20 ns each)" },
	[GP_KF_TASK_STORAGE] = { "task_storage", "5.11",
				 "BPF task storage (BPF_MAP_TYPE_TASK_STORAGE)",
				 "a hash map by thread id, its entry deleted when the thread exits",
				 "a hash lookup a probe instead of a task-storage access; at most 65536 threads in "
				 "traced calls at once (past that: task_storage drops)" },
	[GP_KF_ATOMICS] = { "atomics", "5.12", "BPF atomic fetch-add (BPF_ATOMIC)",
			    "the scheduler's program without it: an add, then a read",
			    "--timeline-sched's count of a process's threads on a CPU can be off by one when two "
			    "CPUs change it at once" },
	[GP_KF_ATTACH_COOKIE] = { "attach_cookie", "5.15",
				  "BPF attach cookies (bpf_get_attach_cookie)",
				  "each probe found by its site: the breakpoint's memory area (the kernel's "
				  "per-thread cache of them) and a hash of the sites placed",
				  "~10 kernel reads and a hash lookup at each entry; a return takes its entry's "
				  "probe (a return without its entry is not counted as that probe's hit)" },
	[GP_KF_BPF_LOOP] = { "bpf_loop", "5.17", "the bpf_loop helper (the stack walks)",
			     "the return program whose walks' steps are global functions in bounded loops",
			     "the same frames; the thread's state looked up again at each step (with task "
			     "storage's stand-in: two kernel reads and a hash lookup)" },
	[GP_KF_UPROBE_MULTI] = { "uprobe_multi", "6.6", "uprobe_multi links",
				 "one perf-event link per probe",
				 "each probe placed and removed on its own; removing a link waits for an RCU grace "
				 "period under a kernel-wide lock (~0.1 s a link measured), which a process of its own "
				 "does after the session" },
};

const char *gp_kfeature_name(enum gp_kfeature f)
{
	return features[f].name;
}

const char *gp_kfeature_since(enum gp_kfeature f)
{
	return features[f].since;
}

const char *gp_kfeature_replacement(enum gp_kfeature f)
{
	return features[f].replacement;
}

const char *gp_kfeature_cost(enum gp_kfeature f)
{
	return features[f].cost;
}

/*
 * BPF_ATOMIC with BPF_FETCH (Linux 5.12 made the atomic instructions more
 * than an add): a socket filter that fetch-adds a word on its own stack.
 */
static bool probe_atomics(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = 0 },
		{ .code = BPF_STX | BPF_MEM | BPF_DW,
		  .dst_reg = BPF_REG_10,
		  .src_reg = BPF_REG_1,
		  .off = -8 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_2, .imm = 1 },
		{ .code = BPF_STX | BPF_ATOMIC | BPF_DW,
		  .dst_reg = BPF_REG_10,
		  .src_reg = BPF_REG_2,
		  .off = -8,
		  .imm = BPF_ADD | BPF_FETCH },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, NULL, "GPL", insns,
			       sizeof(insns) / sizeof(insns[0]), NULL);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* Whether the sched_switch tracepoint passes prev_state: its btf_trace_ typedef's arguments (5.18: 4 + __data). */
static bool switch_passes_prev_state(void)
{
	struct btf *btf = btf__load_vmlinux_btf();
	const struct btf_type *t;
	bool yes = true; /* the current signature, where BTF cannot say */
	__s32 id;

	if (!btf)
		return yes;
	id = btf__find_by_name_kind(btf, "btf_trace_sched_switch", BTF_KIND_TYPEDEF);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	if (t)
		t = btf__type_by_id(btf, t->type); /* a pointer */
	if (t && btf_is_ptr(t))
		t = btf__type_by_id(btf, t->type);
	if (t && btf_is_func_proto(t))
		yes = btf_vlen(t) >= 5;
	btf__free(btf);
	return yes;
}

static int read_paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	int v = GP_KF_PARANOID_UNKNOWN;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = GP_KF_PARANOID_UNKNOWN;
		fclose(f);
	}
	return v;
}

int gp_kernel_features_probe(struct gp_kernel_features *kf, bool no_uprobe_multi)
{
	struct utsname uts;

	memset(kf, 0, sizeof(*kf));
	kf->has[GP_KF_BTF] = access("/sys/kernel/btf/vmlinux", R_OK) == 0;
	kf->has[GP_KF_RING_BUFFER] = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) == 1;
	kf->has[GP_KF_TASK_BTF] = libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE,
							  BPF_FUNC_get_current_task_btf, NULL) == 1;
	kf->has[GP_KF_TASK_STORAGE] =
		libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1;
	kf->has[GP_KF_ATOMICS] = probe_atomics();
	kf->has[GP_KF_ATTACH_COOKIE] =
		libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_attach_cookie, NULL) ==
		1;
	kf->has[GP_KF_BPF_LOOP] =
		libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_loop, NULL) == 1;
	kf->has[GP_KF_UPROBE_MULTI] = gp_uprobe_multi_supported();
	kf->perf_event_paranoid = read_paranoid();
	kf->switch_prev_state = switch_passes_prev_state();
	if (uname(&uts))
		snprintf(uts.release, sizeof(uts.release), "?");
	for (int f = 0; f < GP_KF_N; f++) {
		bool wanted_off = f == GP_KF_UPROBE_MULTI && no_uprobe_multi;

		if (kf->has[f] && !wanted_off)
			continue;
		if (!features[f].replacement) {
			gp_err("this kernel (Linux %s) lacks %s, which gpuprobed needs: Linux %s or later has it",
			       uts.release, features[f].what, features[f].since);
			return -EOPNOTSUPP;
		}
		kf->replaced[f] = true;
		kf->by_request[f] = wanted_off;
		if (wanted_off)
			gp_info("%s not used (--no-%s): %s", features[f].what, "uprobe-multi",
				features[f].replacement);
		else
			gp_warn("this kernel (Linux %s) lacks %s (Linux %s): %s instead; %s",
				uts.release, features[f].what, features[f].since,
				features[f].replacement, features[f].cost);
	}
	return 0;
}

void gp_kernel_features_used(const struct gp_kernel_features *kf, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = 0;
	for (int f = 0; f < GP_KF_N && at < len; f++)
		if (kf->has[f] && !kf->replaced[f])
			at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? "," : "",
					       features[f].name);
}

int gp_kernel_perf_events_allowed(const struct gp_kernel_features *kf, bool sys_admin)
{
	if (kf->perf_event_paranoid <= 2 || sys_admin)
		return 0;
	gp_err("kernel.perf_event_paranoid is %d here: perf_event_open, which gpuprobed's tracepoints%s use, "
	       "needs CAP_SYS_ADMIN; grant it (the systemd unit: docs/daemon.md), or set "
	       "kernel.perf_event_paranoid=2",
	       kf->perf_event_paranoid,
	       kf->replaced[GP_KF_UPROBE_MULTI] ? " and perf-event uprobes" : "");
	return -EPERM;
}
