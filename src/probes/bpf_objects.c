/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bpf_objects.c — a session's BPF objects (bpf_objects.h): loading with the
 * maps the followers share with the API object, the kernel-side scope, and
 * the order in which they stop.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "gpu_api.skel.h"
#include "procs.skel.h"
#include "sched.skel.h"

#include "probes/bpf_objects.h"
#include "array.h"
#include "probes/uprobe_multi.h"
#include "gpuprobed/events.h"
#include "log.h"

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && gp_log_level < LOG_DEBUG)
		return 0;
	/* libbpf's warnings precede our own one-line error; show them with -v. */
	if ((level == LIBBPF_INFO || level == LIBBPF_WARN) && gp_log_level < LOG_INFO)
		return 0;
	return vfprintf(stderr, fmt, ap); /* libbpf's lines carry their own prefix */
}

static void raise_fd_limit(void)
{
	struct rlimit rl;

	/* Two descriptors per probe (perf event + link) without uprobe_multi. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static __u32 pid_max(void)
{
	unsigned long v = 4194304; /* the largest pid_max the kernel allows */
	FILE *f = fopen("/proc/sys/kernel/pid_max", "re");

	if (f) {
		if (fscanf(f, "%lu", &v) != 1)
			v = 4194304;
		fclose(f);
	}
	return (__u32)v;
}

/*
 * Every map a follower declares that the owner declares too (those of
 * common.bpf.h) becomes the owner's: one list of shared maps, the header's.
 */
static int share_maps(struct bpf_object *obj, struct bpf_object *owner)
{
	struct bpf_map *m;

	bpf_object__for_each_map(m, obj) {
		struct bpf_map *o;
		int err;

		if (bpf_map__is_internal(m)) /* .bss, .rodata: each object's own */
			continue;
		o = bpf_object__find_map_by_name(owner, bpf_map__name(m));
		if (!o)
			continue;
		err = bpf_map__reuse_fd(m, bpf_map__fd(o));
		if (err)
			return err;
	}
	return 0;
}

/*
 * What the kernel lacks, told to each object before its load (common.bpf.h):
 * the programs then run their stand-ins, and the verifier sees only those.
 */
#define SET_STAND_INS(rodata, kf)                                                 \
	do {                                                                      \
		(rodata)->no_task_btf = (kf)->replaced[GP_KF_TASK_BTF];           \
		(rodata)->no_task_storage = (kf)->replaced[GP_KF_TASK_STORAGE];   \
		(rodata)->no_attach_cookie = (kf)->replaced[GP_KF_ATTACH_COOKIE]; \
	} while (0)

static int load_followers(struct gp_bpf *b, const struct gp_bpf_opts *o)
{
	struct bpf_object *owner = b->api->obj;
	int err;

	b->sched = sched_bpf__open();
	b->procs = procs_bpf__open();
	if (!b->sched || !b->procs) {
		err = -errno;
		gp_err("open BPF objects (scheduler, processes): %s", strerror(-err));
		return err;
	}
	b->sched->rodata->sched_slices = o->sched_slices;
	b->sched->rodata->switch_has_prev_state = b->kernel.switch_prev_state;
	SET_STAND_INS(b->sched->rodata, &b->kernel);
	SET_STAND_INS(b->procs->rodata, &b->kernel);
	/* the scheduler program with a fetching add, or the one without (sched.bpf.c) */
	bpf_program__set_autoload(b->kernel.replaced[GP_KF_ATOMICS]
					  ? b->sched->progs.gp_sched_switch
					  : b->sched->progs.gp_sched_switch_no_fetch,
				  false);
	/* an iterator, attached at its first read (gp_bpf_inflight) */
	bpf_program__set_autoattach(b->sched->progs.gp_inflight_iter, false);
	err = share_maps(b->sched->obj, owner);
	if (!err)
		err = share_maps(b->procs->obj, owner);
	if (!err)
		err = sched_bpf__load(b->sched);
	if (!err)
		err = procs_bpf__load(b->procs);
	if (err) {
		gp_err("load BPF programs (scheduler and process tracepoints): %s (-v shows libbpf's reasons)",
		       strerror(-err));
		return err;
	}
	return 0;
}

int gp_bpf_load(struct gp_bpf *b, const struct gp_bpf_opts *o)
{
	__u64 ring_bytes = (__u64)o->ringbuf_mb << 20;
	int err;

	libbpf_set_print(libbpf_print);
	raise_fd_limit();
	if (!b->kernel_probed && (err = gp_kernel_features_probe(&b->kernel, o->no_uprobe_multi)))
		return err;
	b->kernel_probed = true;
	b->api = gpu_api_bpf__open();
	if (!b->api) {
		err = -errno;
		gp_err("open BPF object: %s", strerror(-err));
		return err;
	}
	SET_STAND_INS(b->api->rodata, &b->kernel);
	/* the return program with bpf_loop, or the one without (gpu_api.bpf.c): only one is loaded */
	b->api_exit = b->kernel.replaced[GP_KF_BPF_LOOP] ? b->api->progs.gp_api_exit_no_loop
							 : b->api->progs.gp_api_exit;
	bpf_program__set_autoload(b->kernel.replaced[GP_KF_BPF_LOOP]
					  ? b->api->progs.gp_api_exit
					  : b->api->progs.gp_api_exit_no_loop,
				  false);
	b->multi = !b->kernel.replaced[GP_KF_UPROBE_MULTI];
	if (b->multi) {
		bpf_program__set_expected_attach_type(b->api->progs.gp_api_enter,
						      GP_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(b->api_exit, GP_BPF_TRACE_UPROBE_MULTI);
	}
	err = bpf_map__set_max_entries(b->api->maps.events, (__u32)ring_bytes);
	if (!err)
		err = bpf_map__set_max_entries(b->api->maps.tgid_bits, (pid_max() + 63) / 64);
	if (!err) /* entries are allocated as they are used: the bound costs nothing until reached */
		err = bpf_map__set_max_entries(b->api->maps.api_agg, o->agg_keys ? o->agg_keys : 1);
	if (!err &&
	    b->kernel.replaced
		    [GP_KF_TASK_STORAGE]) { /* entries as threads first call: see common.bpf.h */
		err = bpf_map__set_type(b->api->maps.task_state, BPF_MAP_TYPE_HASH);
		if (!err)
			err = bpf_map__set_max_entries(b->api->maps.task_state,
						       GP_TASK_STATE_HASH_MAX);
	}
	if (!err) /* an mmapable array is allocated whole at the load */
		err = bpf_map__set_max_entries(b->api->maps.uw_rows,
					       o->unwind_rows ? o->unwind_rows : 1);
	if (!err)
		err = gpu_api_bpf__load(b->api);
	if (err) {
		gp_err("load BPF programs: %s (the kernel has every feature they use; -v shows the verifier's "
		       "reasons)",
		       strerror(-err));
		return err;
	}
	return load_followers(b, o);
}

int gp_bpf_set_scope(struct gp_bpf *b, __u32 flags, const char *const *names, int nnames)
{
	struct gp_scope sc = { .self_tgid = (__u32)getpid(), .flags = flags };
	__u32 zero = 0;

	for (int i = 0; i < nnames && i < GP_MAX_NAMES; i++)
		snprintf(sc.names[sc.nnames++], GP_NAME_LEN, "%s", names[i]);
	int err = bpf_map__update_elem(b->api->maps.scope, &zero, sizeof(zero), &sc, sizeof(sc),
				       BPF_ANY);

	if (err) {
		gp_err("configure the BPF programs: %s", strerror(-err));
		return err;
	}
	return 0;
}

int gp_bpf_follow(struct gp_bpf *b)
{
	struct timespec ts;
	int err;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	b->sched->bss->window_start_ns = (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
	err = sched_bpf__attach(b->sched);
	if (!err)
		err = procs_bpf__attach(b->procs);
	if (err) {
		gp_err("attach the scheduler and process tracepoints: %s", strerror(-err));
		return err;
	}
	return 0;
}

void gp_bpf_stop_counting(struct gp_bpf *b)
{
	__atomic_store_n(&b->api->bss->closing, 1, __ATOMIC_SEQ_CST);
}

void gp_bpf_stop_admitting(struct gp_bpf *b)
{
	procs_bpf__detach(b->procs);
}

void gp_bpf_stop_scheduler(struct gp_bpf *b)
{
	sched_bpf__detach(b->sched);
}

void gp_bpf_gate(struct gp_bpf *b, bool open)
{
	__atomic_store_n(&b->api->bss->gate_closed, open ? 0 : 1, __ATOMIC_SEQ_CST);
}

long gp_bpf_inflight(struct gp_bpf *b, struct gp_inflight **v, size_t *cap)
{
	size_t bytes = 0;
	int fd, err = 0;

	if (!b->inflight) {
		b->inflight = bpf_program__attach_iter(b->sched->progs.gp_inflight_iter, NULL);
		if (!b->inflight)
			return -errno;
	}
	fd = bpf_iter_create(bpf_link__fd(b->inflight));
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t got;

		if (GP_ARRAY_GROW(*v, *cap, bytes / sizeof(**v) + 64, 64)) {
			err = -ENOMEM;
			break;
		}
		got = read(fd, (char *)*v + bytes, *cap * sizeof(**v) - bytes);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			err = -errno;
			break;
		}
		if (!got)
			break;
		bytes += (size_t)got;
	}
	close(fd);
	if (!err && bytes % sizeof(**v))
		err = -EIO;
	return err ? err : (long)(bytes / sizeof(**v));
}

void gp_bpf_release(struct gp_bpf *b)
{
	bpf_link__destroy(b->inflight);
	procs_bpf__destroy(b->procs);
	sched_bpf__destroy(b->sched);
	gpu_api_bpf__destroy(b->api);
	*b = (struct gp_bpf){ 0 };
}
