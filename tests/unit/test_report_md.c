/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_report_md.c — report.md: the sections a reader relies on are there
 * (nsys-shaped API table labelled host-observed, transfers with the
 * pageable caveat exactly when attached late, leaks vs live at end,
 * unknown kernels labelled as such, instrumentation of the probes that fired
 * and a count of those that did not, loss counters: the ones not 0 in a
 * table, the zeros counted, "no event was lost" said even when all are 0),
 * and the table/number helpers behave; where processes run: the
 * Containers table and each process's container, only when one is in one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "records.h"
#include "scenario.h"
#include "places.h"
#include "text/md_table.h"

static void has(const char *text, const char *needle)
{
	if (!strstr(text, needle))
		fail_msg("report.md lacks \"%s\"", needle);
}

static void lacks(const char *text, const char *needle)
{
	if (strstr(text, needle))
		fail_msg("report.md should not contain \"%s\"", needle);
}

/* The line containing needle, which must contain each of words in order. */
static void line_has_in_order(const char *text, const char *needle, const char *const *words,
			      size_t n)
{
	const char *at = strstr(text, needle), *eol;

	if (!at)
		fail_msg("no line with \"%s\"", needle);
	while (at > text && at[-1] != '\n')
		at--;
	eol = strchr(at, '\n');
	for (size_t i = 0; i < n; i++) {
		const char *w = strstr(at, words[i]);

		if (!w || (eol && w > eol))
			fail_msg("\"%s\" missing or out of order in the line of \"%s\"", words[i],
				 needle);
		at = w + strlen(words[i]);
	}
}

static void sections_of_a_running_process(void **state)
{
	static const char *const api_head[] = {
		"Time (%)", "Total Time (ns)", "Num Calls", "Avg (ns)", "Med (ns)", "Min (ns)",
		"Max (ns)", "StdDev (ns)",     "p99 (ns)",  "Errors",	"Name"
	};
	struct gp_model *m = scenario_model(false, true);
	char *md = sink_output(gp_report_md_write, m);

	has(md, "# gpuprobed report");
	has(md, "## Process 4242 — train");
	has(md, "### API summary: runtime, driver, NCCL (host-observed)");
	line_has_in_order(md, "| Time (%)", api_head, sizeof(api_head) / sizeof(api_head[0]));
	has(md, "| cudaErrorMemoryAllocation");
	has(md, "### Transfers");
	has(md, "4.19");     /* GB/s of the synchronous 1 MiB HtoD copy */
	lacks(md, "Caveat"); /* traced from start */
	has(md, "#### Live at end of trace: 2 allocations");
	lacks(md, "#### Leaks");
	has(md, "`void scale<float>(float*, int)`");
	has(md, "unknown (no symbol at the launch site); func 0xb2, called from 0x405678");
	has(md, "| legacy default");
	has(md, "| 4243 | loader");
	has(md, "## Instrumentation (what was touched)");
	has(md, "`/opt/venv/lib/libcudart.so.13` (pid 4242):");
	has(md, "| `cudaLaunchKernel` | 0x71c40 |                   4 |                       4 |");
	has(md, "## Loss counters");
	has(md, "| ringbuf_full |     2 |");
	lacks(md, "| malformed_records");
	has(md, "The other 23 counters of report.json's `drops` are 0.");
	free(md);
	gp_model_free(m);
}

static void late_attach_and_exit(void **state)
{
	struct gp_model *m = scenario_model(true, false);
	char *md = sink_output(gp_report_md_write, m);

	has(md, "**Caveat:**");
	has(md, "\"pageable\" means \"outside every pinned range allocated while traced\"");
	has(md, "#### Leaks: 2 allocations, 1,114,112 bytes");
	lacks(md, "Live at end of trace");
	has(md, "- Exited at +");
	free(md);
	gp_model_free(m);
}

static void empty_report_still_shows_losses(void **state)
{
	struct gp_model *m = gp_model_new(NULL);
	char *md = sink_output(gp_report_md_write, m);

	has(md, "No traced process made a traced call.");
	has(md, "No probes were placed.");
	has(md, "## Loss counters");
	lacks(md, "| malformed_records");
	has(md, "No event was lost: each of the 24 loss counters (report.json's `drops`) is 0.");
	free(md);
	gp_model_free(m);
}

static void table_and_numbers(void **state)
{
	static const char *const head[] = { "Name", "N" };
	struct gp_md_table *t = gp_md_table_new(2, head, "lr");
	char *buf = NULL, n[32];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(t);
	gp_md_table_cell(t, "a|b");
	gp_md_table_cell(t, "%d", 12345);
	gp_md_table_cell(t, "—");
	gp_md_table_cell(t, "7");
	assert_int_equal(gp_md_table_rows(t), 2);
	assert_int_equal(gp_md_table_print(t, f), 0);
	fclose(f);
	assert_string_equal(buf, "| Name |     N |\n"
				 "| :--- | ----: |\n"
				 "| a\\|b | 12345 |\n"
				 "| —    |     7 |\n");
	free(buf);
	gp_md_table_free(t);
	gp_md_table_free(NULL);

	assert_string_equal(gp_md_num(n, 0), "0");
	assert_string_equal(gp_md_num(n, 999), "999");
	assert_string_equal(gp_md_num(n, 1000), "1,000");
	assert_string_equal(gp_md_num(n, 1234567), "1,234,567");
	assert_string_equal(gp_md_num(n, UINT64_MAX), "18,446,744,073,709,551,615");
	assert_string_equal(gp_md_snum(n, -1234), "-1,234");
	assert_string_equal(gp_md_bytes(n, 17), "17 B");
	assert_string_equal(gp_md_bytes(n, 4096), "4 KiB");
	assert_string_equal(gp_md_bytes(n, 1536 * 1024), "1.5 MiB");
	assert_string_equal(gp_md_bytes(n, 1ULL << 63), "8 EiB");
}

static void containers_section(void **state)
{
	struct gp_model *m = pl_model(NULL, NULL, false);
	char *md = sink_output(gp_report_md_write, m);
	const char *sec = strstr(md, "## Containers\n"), *end;
	char *table;

	if (getenv("GP_TEST_SHOW"))
		fputs(md, stderr);
	assert_non_null(sec);
	/* after the machine-wide summary, before the processes */
	assert_true(strstr(md, "## Machine-wide summary") < sec);
	assert_true(sec < strstr(md, "## Process 4242"));
	sec = strstr(sec, "| Container");
	assert_non_null(sec);
	end = strstr(sec, "\n\n");
	assert_non_null(end);
	table = strndup(sec, (size_t)(end - sec) + 1);
	assert_string_equal(
		table,
		"| Container | Runtime | Pod | Processes  | API calls | GPU work host time (ns) | Copy bytes |\n"
		"| :-------- | :------ | :-- | :--------- | --------: | ----------------------: | ---------: |\n"
		"| web-1     | podman  | —   | 4242, 4250 |         4 |                 253,017 |  1,052,672 |\n");
	free(table);
	has(md, "## Process 4242 — basic_ops (container web-1)\n");
	has(md, "- Container: web-1 (podman, a1b2c3d4e5f6), pid 1 in its namespace\n");
	has(md, "- Cgroup: `" PL_CG_A "`\n");
	has(md, "## Process 4250 — worker (container web-1)\n");
	has(md, "- Container: web-1 (podman, a1b2c3d4e5f6), pid 7 in its namespace\n");
	has(md, "## Process 5000 — host_job\n"); /* on the host: nothing said */
	lacks(md, "- Cgroup: `/user.slice");
	lacks(md, "- Pod:");
	free(md);
	gp_model_free(m);
}

static void containers_in_pods_and_none(void **state)
{
	struct gp_model *m = pl_model(NULL, NULL, true);
	char *md = sink_output(gp_report_md_write, m);

	if (getenv("GP_TEST_SHOW"))
		fputs(md, stderr);
	has(md,
	    "| web-1        | podman     | —                                    | 4242, 4250 |");
	has(md,
	    "| 0badc0de0bad | containerd | ml/trainer-0                         | 6000       |");
	has(md, "| —            | kubernetes | " PL_UID_C " | 6100       |");
	has(md, "## Process 6000 — trainer (container 0badc0de0bad)\n");
	has(md, "- Container: 0badc0de0bad (containerd), pid 1 in its namespace\n");
	has(md, "- Pod: ml/trainer-0 (uid " PL_UID_B ")\n");
	has(md, "## Process 6100 — sidecar (pod " PL_UID_C ")\n");
	has(md, "- Container: not known (kubernetes), pid 3 in its namespace\n");
	has(md, "- Pod: " PL_UID_C "\n");
	free(md);
	gp_model_free(m);

	/* no process in a container: no section */
	m = scenario_model(false, true);
	md = sink_output(gp_report_md_write, m);
	lacks(md, "## Containers");
	lacks(md, "- Container:");
	lacks(md, "in its pid namespace");
	free(md);
	gp_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sections_of_a_running_process),
		cmocka_unit_test(late_attach_and_exit),
		cmocka_unit_test(empty_report_still_shows_losses),
		cmocka_unit_test(table_and_numbers),
		cmocka_unit_test(containers_section),
		cmocka_unit_test(containers_in_pods_and_none),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
