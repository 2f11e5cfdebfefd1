/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * uwtable_tool.c — what unwind tables cost, for the bench
 * (scripts/bench_unwind.py).
 *
 * uwtable_tool [-r REPS] [-g SLACK] FILE builds FILE's table REPS times
 * (src/stacks/unwind_table.c) and prints one JSON object: rows, bytes,
 * FDEs, stop causes, each build's time, and the process's peak resident
 * memory before the first build and after the builds (VmHWM: the ELF pages
 * read count, as they do in gpuprobed).
 *
 * uwtable_tool -a [-m MIB] (needs CAP_BPF) does what src/stacks/unwind_maps.c
 * does in a session with every process of this machine at once, into BPF
 * maps of its own shaped like the session's (a pool of MIB MiB, default 32):
 * every process published, then published again (nothing changed: what a
 * refresh costs), then forgotten. It prints the times, the tables built,
 * the pool's use, the refusals and its own peak memory.
 */
#include <bpf/bpf.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "stacks/unwind_maps.h"
#include "proc_maps.h"
#include "model/view.h"
#include "stacks/unwind_table.h"

static long vm_kb(const char *field)
{
	char *s = gp_read_whole_file("/proc/self/status", NULL), *p;
	long kb = -1;

	if (!s)
		return -1;
	p = strstr(s, field);
	if (p)
		kb = strtol(p + strlen(field), NULL, 10);
	free(s);
	return kb;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The pids of this machine but ours, into v (at most n). */
static int all_pids(pid_t *v, int n)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int k = 0;

	while (d && (e = readdir(d)) && k < n)
		if (isdigit((unsigned char)e->d_name[0]) && atoi(e->d_name) != getpid())
			v[k++] = atoi(e->d_name);
	if (d)
		closedir(d);
	return k;
}

static int all_processes(unsigned mib)
{
	LIBBPF_OPTS(bpf_map_create_opts, mm, .map_flags = BPF_F_MMAPABLE);
	struct gp_unwind_maps m = { .nrows = (__u32)((__u64)mib * 1024 * 1024 / 8) };
	int npids, published = 0, refused = 0, gone = 0, other = 0;
	static pid_t pids[65536];
	long hwm0 = vm_kb("VmHWM:");
	struct gp_unwind_stats st;
	struct gp_unwind *u;
	double t0, t1, t2;

	m.rows_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "uw_rows", 4, sizeof(struct gp_uw_row),
				   m.nrows, &mm);
	m.files_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "uw_files", 4, sizeof(struct gp_uw_file),
				    GP_UW_MAX_FILES, NULL);
	m.procs_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "uw_procs", 4, sizeof(struct gp_uw_proc),
				    GP_UW_MAX_PROCS, NULL);
	m.maps_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "uw_maps", 4, sizeof(struct gp_uw_map),
				   GP_UW_MAX_PROCS * GP_UW_MAX_MAPS, NULL);
	if (m.rows_fd < 0 || m.files_fd < 0 || m.procs_fd < 0 || m.maps_fd < 0) {
		fprintf(stderr, "uwtable_tool: BPF maps: %s\n", strerror(errno));
		return 1;
	}
	u = gp_unwind_new(&m);
	if (!u) {
		fprintf(stderr, "uwtable_tool: %s\n", strerror(errno));
		return 1;
	}
	npids = all_pids(pids, (int)(sizeof(pids) / sizeof(pids[0])));
	t0 = now_ms();
	for (int i = 0; i < npids; i++) {
		int err = gp_unwind_process(u, pids[i]);

		if (!err)
			published++;
		else if (err == -ENOSPC)
			refused++;
		else if (err == -ESRCH)
			gone++;
		else
			other++;
	}
	t1 = now_ms();
	for (int i = 0; i < npids; i++)
		gp_unwind_process(u, pids[i]);
	t2 = now_ms();
	gp_unwind_get_stats(u, &st);
	printf("{\"max_procs\": %d, \"pids\": %d, \"published\": %d, \"refused\": %d, \"gone\": %d, \"errors\": %d, "
	       "\"first_ms\": %.1f, \"again_ms\": %.1f, \"files\": %llu, \"files_built\": %llu, "
	       "\"files_evicted\": %llu, \"rows\": %llu, \"rows_max\": %llu, \"pool_rows\": %llu, "
	       "\"maps\": %llu, \"maps_none\": %llu, \"maps_over\": %llu, \"build_ms\": %.1f, "
	       "\"build_max_ms\": %.1f, \"build_max_file\": \"%s\", \"hwm_before_kb\": %ld, "
	       "\"hwm_kb\": %ld, \"fail\": {",
	       GP_UW_MAX_PROCS, npids, published, refused, gone, other, t1 - t0, t2 - t1,
	       (unsigned long long)st.files, (unsigned long long)st.files_built,
	       (unsigned long long)st.files_evicted, (unsigned long long)st.rows,
	       (unsigned long long)st.rows_max, (unsigned long long)st.pool_rows,
	       (unsigned long long)st.maps, (unsigned long long)st.maps_none,
	       (unsigned long long)st.maps_over, st.build_ns / 1e6, st.build_ns_max / 1e6,
	       st.build_max_path, hwm0, vm_kb("VmHWM:"));
	for (int f = 0; f < GP_UWF_MAX; f++)
		printf("%s\"%s\": %llu", f ? ", " : "", gp_unwind_fail_name(f),
		       (unsigned long long)st.fail[f]);
	printf("}}\n");
	for (int i = 0; i < npids; i++)
		gp_unwind_forget(u, pids[i]);
	gp_unwind_free(u);
	close(m.rows_fd);
	close(m.files_fd);
	close(m.procs_fd);
	close(m.maps_fd);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned slack = GP_UW_GAP_SLACK;
	struct gp_uw_table_stats st;
	long hwm0, reps = 1, mib = 32;
	struct gp_uw_table t;
	bool all = false;
	struct stat sb;
	int opt, err = 0;

	while ((opt = getopt(argc, argv, "r:g:am:")) != -1) {
		if (opt == 'r')
			reps = strtol(optarg, NULL, 10);
		else if (opt == 'g')
			slack = (unsigned)strtoul(optarg, NULL, 10);
		else if (opt == 'a')
			all = true;
		else if (opt == 'm')
			mib = strtol(optarg, NULL, 10);
		else
			goto usage;
	}
	if (all)
		return optind == argc && mib > 0 && mib < 4096 ? all_processes((unsigned)mib) : 64;
	if (optind != argc - 1 || reps < 1)
		goto usage;
	if (stat(argv[optind], &sb)) {
		fprintf(stderr, "uwtable_tool: %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	hwm0 = vm_kb("VmHWM:");
	printf("{\"file\": \"%s\", \"size\": %lld, \"build_ms\": [", argv[optind],
	       (long long)sb.st_size);
	for (long i = 0; i < reps; i++) {
		err = gp_uw_table_build(argv[optind], slack, &t, &st);
		printf("%s%.3f", i ? ", " : "", st.build_ns / 1e6);
		gp_uw_table_release(&t);
		if (err)
			break;
	}
	printf("], \"error\": %d, \"rows\": %llu, \"bytes\": %llu, \"fdes\": %llu, "
	       "\"fdes_debug\": %llu, \"exec_bytes\": %llu, \"hwm_before_kb\": %ld, "
	       "\"hwm_kb\": %ld, \"stop_bytes\": {",
	       err, (unsigned long long)st.rows, (unsigned long long)st.bytes,
	       (unsigned long long)st.fdes, (unsigned long long)st.fdes_debug,
	       (unsigned long long)st.exec_bytes, hwm0, vm_kb("VmHWM:"));
	for (unsigned c = 0; c < 8; c++)
		printf("%s\"%s\": %llu", c ? ", " : "", gp_uw_stop_cause_name(c),
		       (unsigned long long)st.stop_bytes[c]);
	printf("}, \"rbp_unknown_bytes\": %llu}\n", (unsigned long long)st.rbp_unknown_bytes);
	return err ? 2 : 0;
usage:
	fprintf(stderr,
		"usage: uwtable_tool [-r REPS] [-g SLACK] FILE | uwtable_tool -a [-m MIB]\n");
	return 64;
}
