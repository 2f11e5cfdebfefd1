/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sql_nsys_views.c — the SQL export's views with Nsight Systems' names and
 * columns (docs/sql.md, "nsys-style views"), so that SQL written for
 * `nsys export --type sqlite` runs unchanged where the data is the same:
 * the host's CUDA API calls. Nothing GPU-side (nsys's KERNEL, MEMCPY, ...
 * tables): gpuprobed has no GPU timestamps.
 *
 * As nsys has them (its schema reference, 2026.4): times are ns on the
 * session's timeline (0 = the capture's start: utcEpochNs + start is the
 * wall time); globalTid is the pid in bits 24-47 and the tid in bits 0-23
 * (hardware and VM ids 0); runtime and driver calls share one table, told
 * apart by eventClass (0 runtime, 1 driver); names are ids into StringIds.
 * Differences: a name has no CUPTI version suffix (cudaLaunchKernel, not
 * cudaLaunchKernel_v7000: nsys's reports strip it to the same); the rows
 * are the calls the program made, not those a library (the runtime, NCCL)
 * made inside its own calls (nested_api[]); they are views, so SQL that
 * alters or updates nsys's tables (some of its documentation's examples)
 * fails here; nsys's PROCESSES is not one of them (SQLite's names ignore
 * case: it is gpuprobed's own processes table).
 */
#include <errno.h>

#include "sql/sql_internal.h"

/* The id ranges StringIds joins: strings' own ids, then the API names, then the thread names. */
#define API_NAME_IDS	"4294967296"
#define THREAD_NAME_IDS "8589934592"

static const char views[] =
	"CREATE TABLE ENUM_NSYS_EVENT_CLASS (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);\n"
	"INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (0, 'TRACE_PROCESS_EVENT_CUDA_RUNTIME', 'CUDA runtime'),\n"
	"  (1, 'TRACE_PROCESS_EVENT_CUDA_DRIVER', 'CUDA driver');\n"
	"CREATE VIEW StringIds AS\n"
	"  SELECT id, text AS value FROM strings\n"
	"  UNION ALL SELECT " API_NAME_IDS " + id, name FROM apis\n"
	"  UNION ALL SELECT " THREAD_NAME_IDS " + rowid, name\n"
	"    FROM threads WHERE name IS NOT NULL;\n"
	"CREATE VIEW CUPTI_ACTIVITY_KIND_RUNTIME AS\n"
	"  SELECT c.start_ns - t0.value AS start, c.end_ns - t0.value AS \"end\",\n"
	"    CASE a.layer WHEN 'cudart' THEN 0 ELSE 1 END AS eventClass, (c.pid << 24) | c.tid AS globalTid,\n"
	"    c.id AS correlationId, " API_NAME_IDS " + c.api AS nameId, c.result AS returnValue,\n"
	"    c.stack_id AS callchainId\n"
	"  FROM calls c JOIN apis a ON a.id = c.api JOIN meta t0 ON t0.key = 'start_mono_ns'\n"
	"  WHERE c.parent_api IS NULL AND a.layer IN ('cudart', 'cuda');\n"
	"CREATE VIEW ThreadNames AS\n"
	"  SELECT " THREAD_NAME_IDS " + rowid AS nameId, NULL AS priority,\n"
	"    (pid << 24) | tid AS globalTid\n"
	"  FROM threads WHERE name IS NOT NULL;\n"
	"CREATE VIEW CUDA_CALLCHAINS AS\n"
	"  SELECT s.stack_id AS id, COALESCE(f.function, f.symbol) AS symbol, f.file AS module,\n"
	"    f.function IS NULL AND f.symbol IS NULL AS unresolved, f.addr AS originalIP, s.depth AS stackDepth\n"
	"  FROM stack_frames s JOIN frames f ON f.id = s.frame_id;\n"
	"CREATE VIEW TARGET_INFO_SESSION_START_TIME AS\n"
	"  SELECT value AS utcEpochNs,\n"
	"    strftime('%Y-%m-%dT%H:%M:%S', value / 1000000000, 'unixepoch')\n"
	"      || printf('.%03dZ', value / 1000000 % 1000) AS utcTime,\n"
	"    strftime('%Y-%m-%dT%H:%M:%S', value / 1000000000, 'unixepoch', 'localtime')\n"
	"      || printf('.%03d', value / 1000000 % 1000) AS localTime\n"
	"  FROM meta WHERE key = 'start_realtime_ns';\n";

int gp_sql_nsys_views(sqlite3 *db)
{
	return gp_sql_exec(db, views) ? -EIO : 0;
}
