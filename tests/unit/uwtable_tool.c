/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * uwtable_tool.c — what building one file's unwind table costs, for the
 * bench (scripts/bench_unwind.py): uwtable_tool [-r REPS] [-g SLACK] FILE
 * builds FILE's table REPS times (src/symbolize/unwind_table.c) and prints
 * one JSON object: rows, bytes, FDEs, stop causes, each build's time, and
 * the process's peak resident memory before the first build and after the
 * builds (VmHWM: the ELF pages read count, as they do in gpuprobed).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/proc_maps.h"
#include "symbolize/unwind_table.h"

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

int main(int argc, char **argv)
{
	unsigned slack = GP_UW_GAP_SLACK;
	struct gp_uw_table_stats st;
	struct gp_uw_table t;
	struct stat sb;
	long hwm0, reps = 1;
	int opt, err = 0;

	while ((opt = getopt(argc, argv, "r:g:")) != -1) {
		if (opt == 'r')
			reps = strtol(optarg, NULL, 10);
		else if (opt == 'g')
			slack = (unsigned)strtoul(optarg, NULL, 10);
		else
			goto usage;
	}
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
		printf("%s\"%s\": %llu", c ? ", " : "", gp_uw_stop_name(c),
		       (unsigned long long)st.stop_bytes[c]);
	printf("}, \"rbp_unknown_bytes\": %llu}\n", (unsigned long long)st.rbp_unknown_bytes);
	return err ? 2 : 0;
usage:
	fprintf(stderr, "usage: uwtable_tool [-r REPS] [-g SLACK] FILE\n");
	return 64;
}
