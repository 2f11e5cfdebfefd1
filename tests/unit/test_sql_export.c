/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_sql_export.c — the SQL export of a capture (src/sql/): the processes
 * table says where each process runs (ns_pid, container and pod columns,
 * NULL when not known) as report.json does, and meta says the schema's
 * version.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "records.h"
#include "places.h"
#include "capture/capture_writer.h"
#include "sql/sql_export.h"

/* The places' model written as a capture at path. */
static void write_capture(const char *path)
{
	struct gp_cap_header h = { .abi_version = GP_ABI_VERSION };
	struct gp_capture_writer_stats ws;
	struct gp_capture_writer *w;
	struct gp_model *m;
	char err[512];

	w = gp_capture_writer_open(path, &h, err, sizeof(err));
	if (!w)
		fail_msg("%s", err);
	m = pl_model(NULL, &(struct gp_model_tap){ .ctx = w, .record = gp_capture_writer_op },
		     true);
	assert_int_equal(gp_capture_writer_close(w, &ws), 0);
	assert_int_equal(ws.lost_ops, 0);
	gp_model_free(m);
}

/* A column as text ("NULL" for NULL). */
static const char *text(sqlite3_stmt *st, int col)
{
	const unsigned char *s = sqlite3_column_text(st, col);

	return sqlite3_column_type(st, col) == SQLITE_NULL ? "NULL" : (const char *)s;
}

static void processes_say_where_they_run(void **state)
{
	static const struct {
		long long pid, ns_pid;
		const char *runtime, *id, *name, *pod_uid, *pod_name, *pod_ns;
	} want[] = {
		{ PL_WEB1, 1, "podman", PL_ID_A, "web-1", "NULL", "NULL", "NULL" },
		{ PL_WEB2, 7, "podman", PL_ID_A, "web-1", "NULL", "NULL", "NULL" },
		{ PL_HOST, PL_HOST, "NULL", "NULL", "NULL", "NULL", "NULL", "NULL" },
		{ PL_K8S, 1, "containerd", PL_ID_B, "NULL", PL_UID_B, "trainer-0", "ml" },
		{ PL_PODONLY, 3, "kubernetes", "NULL", "NULL", PL_UID_C, "NULL", "NULL" },
	};
	char cap[PATH_MAX], db_path[PATH_MAX + 8];
	struct gp_sql_export_stats es;
	sqlite3 *db;
	sqlite3_stmt *st;
	size_t n = 0;
	int fd;

	snprintf(cap, sizeof(cap), "/tmp/gp_sql_export_XXXXXX");
	fd = mkstemp(cap);
	assert_true(fd >= 0);
	close(fd);
	write_capture(cap);
	snprintf(db_path, sizeof(db_path), "%s.sqlite", cap);
	assert_int_equal(
		gp_sql_export(cap, db_path, &(struct gp_sql_export_opts){ .force = true }, &es), 0);
	assert_true(es.complete);

	assert_int_equal(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(
		sqlite3_prepare_v2(
			db,
			"SELECT pid, ns_pid, container_runtime, container_id, container_name,"
			" pod_uid, pod_name, pod_namespace FROM processes ORDER BY pid",
			-1, &st, NULL),
		SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		assert_true(n < sizeof(want) / sizeof(want[0]));
		assert_int_equal(sqlite3_column_int64(st, 0), want[n].pid);
		assert_int_equal(sqlite3_column_int64(st, 1), want[n].ns_pid);
		assert_string_equal(text(st, 2), want[n].runtime);
		assert_string_equal(text(st, 3), want[n].id);
		assert_string_equal(text(st, 4), want[n].name);
		assert_string_equal(text(st, 5), want[n].pod_uid);
		assert_string_equal(text(st, 6), want[n].pod_name);
		assert_string_equal(text(st, 7), want[n].pod_ns);
		n++;
	}
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	sqlite3_finalize(st);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT value FROM meta WHERE key = 'schema_version'",
					    -1, &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(st, 0), GP_SQL_SCHEMA_VERSION);
	sqlite3_finalize(st);
	sqlite3_close(db);
	unlink(db_path);
	unlink(cap);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(processes_say_where_they_run),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
