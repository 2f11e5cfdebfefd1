/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sql_schema.c — the SQL export's schema (docs/sql.md is its reference):
 * the tables (and, with the indices of calls, their time index), created
 * before any row; the other indices and the views, created after the last
 * row (an index built once over sorted data is faster than one kept up to
 * date row by row, unless the rows come in its order). The views reproduce
 * report.json's tables
 * from the rows with the report's own arithmetic (docs/report-format.md),
 * so that they can be checked against it.
 */
#include <errno.h>

#include "sql/sql_internal.h"

static const char tables[] =
	"CREATE TABLE meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;\n"
	"CREATE TABLE strings (id INTEGER PRIMARY KEY, text TEXT NOT NULL);\n"
	"CREATE TABLE apis (id INTEGER PRIMARY KEY, name TEXT NOT NULL, layer TEXT NOT NULL,\n"
	"  async INTEGER NOT NULL);\n"
	"CREATE TABLE error_names (layer TEXT, code INTEGER, name TEXT, PRIMARY KEY (layer, code)) WITHOUT ROWID;\n"
	"CREATE TABLE calls (id INTEGER PRIMARY KEY, start_ns INTEGER, end_ns INTEGER, pid INTEGER, tid INTEGER,\n"
	"  api INTEGER, result INTEGER, parent_api INTEGER, nested_in INTEGER, stack_id INTEGER, op TEXT,\n"
	"  bytes INTEGER, stream INTEGER, device INTEGER, kernel_id INTEGER, ret_addr INTEGER);\n"
	/* a side table, a row only where one is not 0: a narrower calls row is less SQLite work a call */
	"CREATE TABLE call_cpu (call_id INTEGER PRIMARY KEY, offcpu_ns INTEGER, vol_switches INTEGER,\n"
	"  invol_switches INTEGER, minor_faults INTEGER, major_faults INTEGER);\n"
	"CREATE TABLE transfers (call_id INTEGER PRIMARY KEY, direction TEXT, host_memory TEXT, sync INTEGER,\n"
	"  bytes INTEGER, src INTEGER, dst INTEGER);\n"
	"CREATE TABLE allocations (call_id INTEGER PRIMARY KEY, pid INTEGER, ptr INTEGER, bytes INTEGER,\n"
	"  kind TEXT, device INTEGER, start_ns INTEGER, free_call_id INTEGER, freed_ns INTEGER);\n"
	"CREATE TABLE nccl_calls (call_id INTEGER PRIMARY KEY, pid INTEGER, comm INTEGER, comm_id INTEGER,\n"
	"  seq INTEGER, op TEXT, dtype TEXT, count INTEGER, bytes INTEGER, root_or_peer INTEGER, stream INTEGER);\n"
	"CREATE TABLE sched_slices (pid INTEGER, tid INTEGER, start_ns INTEGER, end_ns INTEGER, cpu INTEGER,\n"
	"  left_as TEXT, minor_faults INTEGER, major_faults INTEGER, oncpu_threads_start INTEGER,\n"
	"  oncpu_threads_end INTEGER);\n"
	"CREATE TABLE processes (pid INTEGER, comm TEXT, cmdline TEXT, attach_ns INTEGER, exit_ns INTEGER,\n"
	"  exited INTEGER, traced_from_start INTEGER, traced_because TEXT, parent_pid INTEGER, execs INTEGER,\n"
	"  api_calls INTEGER, api_total_ns INTEGER, nested_left_out INTEGER, ns_pid INTEGER,\n"
	"  container_runtime TEXT, container_id TEXT, container_name TEXT, pod_uid TEXT,\n"
	"  pod_name TEXT, pod_namespace TEXT);\n"
	"CREATE TABLE threads (pid INTEGER, tid INTEGER, name TEXT, calls INTEGER, errors INTEGER,\n"
	"  host_ns INTEGER, first_ns INTEGER, last_ns INTEGER, device INTEGER, window_start_ns INTEGER,\n"
	"  window_end_ns INTEGER, oncpu_ns INTEGER, offcpu_ns INTEGER, runnable_ns INTEGER,\n"
	"  vol_switches INTEGER, invol_switches INTEGER, minor_faults INTEGER, major_faults INTEGER);\n"
	"CREATE TABLE libraries (pid INTEGER, path TEXT, layer TEXT, static INTEGER, build_id TEXT);\n"
	"CREATE TABLE kernels (id INTEGER PRIMARY KEY, pid INTEGER, name INTEGER, mangled INTEGER,\n"
	"  resolved INTEGER, unresolved_reason TEXT, func INTEGER, ret_addr INTEGER, sites INTEGER,\n"
	"  calls INTEGER, launches INTEGER, driver_launches INTEGER, errors INTEGER, host_ns INTEGER);\n"
	"CREATE TABLE streams (pid INTEGER, stream INTEGER, created INTEGER, destroyed INTEGER,\n"
	"  kernels INTEGER, graph_launches INTEGER, copies INTEGER, copy_bytes INTEGER, memsets INTEGER,\n"
	"  memset_bytes INTEGER, collectives INTEGER, collective_bytes INTEGER, event_records INTEGER,\n"
	"  event_waits INTEGER, sync_calls INTEGER, sync_ns INTEGER);\n"
	"CREATE TABLE events (pid INTEGER PRIMARY KEY, created INTEGER, destroyed INTEGER, records INTEGER,\n"
	"  sync_calls INTEGER, sync_ns INTEGER);\n"
	"CREATE TABLE nccl_comms (pid INTEGER, comm INTEGER, comm_id INTEGER, rank INTEGER, nranks INTEGER,\n"
	"  device INTEGER, parent INTEGER, destroyed INTEGER, collectives INTEGER);\n"
	"CREATE TABLE stacks (id INTEGER PRIMARY KEY, pid INTEGER, native_frames INTEGER,\n"
	"  python_frames INTEGER, truncated TEXT, calls INTEGER, bytes INTEGER, host_ns INTEGER);\n"
	"CREATE TABLE frames (id INTEGER PRIMARY KEY, pid INTEGER, kind TEXT, addr INTEGER, function INTEGER,\n"
	"  symbol INTEGER, file INTEGER, build_id INTEGER, sym_offset INTEGER, file_offset INTEGER,\n"
	"  line INTEGER);\n"
	"CREATE TABLE stack_frames (stack_id INTEGER, depth INTEGER, frame_id INTEGER,\n"
	"  PRIMARY KEY (stack_id, depth)) WITHOUT ROWID;\n"
	"CREATE TABLE recommendations (id INTEGER PRIMARY KEY, rank INTEGER, verdict INTEGER, rule TEXT,\n"
	"  pid INTEGER, comm TEXT, title TEXT, impact_ns INTEGER, impact_share REAL, estimate TEXT,\n"
	"  method TEXT, action TEXT, about TEXT, evidence TEXT, overlaps TEXT, explained_by TEXT);\n"
	"CREATE TABLE recommendation_sites (recommendation_id INTEGER, position INTEGER, path TEXT,\n"
	"  calls INTEGER, host_ns INTEGER, PRIMARY KEY (recommendation_id, position)) WITHOUT ROWID;\n";

/*
 * The indices of calls (--indices, and the cache of `gpuprobed query`; each
 * costs about as much as the rest of the export a call: docs/sql.md, Cost).
 * The time index is kept up to date as the rows arrive: they come nearly in
 * time order, so its entries are appended at its end, on the writer thread,
 * for less than a sort of them afterwards would cost. The others are a scan
 * and a sort of every call each, after the rows.
 */
static const char time_index[] = "CREATE INDEX calls_start ON calls (start_ns);\n";

static const char lookup_indices[] =
	"CREATE INDEX calls_pid ON calls (pid, tid);\n"
	"CREATE INDEX calls_api ON calls (api);\n"
	"CREATE INDEX calls_kernel ON calls (kernel_id) WHERE kernel_id IS NOT NULL;\n"
	"CREATE INDEX calls_nested_in ON calls (nested_in) WHERE nested_in IS NOT NULL;\n";

static const char finish[] =
	"CREATE INDEX nccl_calls_comm ON nccl_calls (comm_id, seq);\n"
	"CREATE INDEX sched_slices_tid ON sched_slices (tid, start_ns);\n"
	/* calls with names */
	"CREATE VIEW calls_named AS SELECT c.id, c.start_ns, c.end_ns, c.end_ns - c.start_ns AS dur_ns,\n"
	"  c.pid, c.tid, a.name AS api, a.layer, c.result, e.name AS error, pa.name AS parent_api,\n"
	"  c.nested_in, c.stack_id, c.op, c.bytes, c.stream, c.device, c.kernel_id, s.text AS kernel,\n"
	"  COALESCE(u.offcpu_ns, 0) AS offcpu_ns, COALESCE(u.vol_switches, 0) AS vol_switches,\n"
	"  COALESCE(u.invol_switches, 0) AS invol_switches, COALESCE(u.minor_faults, 0) AS minor_faults,\n"
	"  COALESCE(u.major_faults, 0) AS major_faults\n"
	"  FROM calls c JOIN apis a ON a.id = c.api LEFT JOIN apis pa ON pa.id = c.parent_api\n"
	"  LEFT JOIN call_cpu u ON u.call_id = c.id\n"
	"  LEFT JOIN error_names e ON e.layer = a.layer AND e.code = c.result\n"
	"  LEFT JOIN kernels k ON k.id = c.kernel_id LEFT JOIN strings s ON s.id = k.name;\n"
	"CREATE VIEW kernels_named AS SELECT k.id, k.pid, n.text AS name, m.text AS mangled, k.resolved,\n"
	"  k.unresolved_reason, k.func, k.ret_addr, k.sites, k.calls, k.launches, k.driver_launches,\n"
	"  k.errors, k.host_ns FROM kernels k LEFT JOIN strings n ON n.id = k.name\n"
	"  LEFT JOIN strings m ON m.id = k.mangled;\n"
	"CREATE VIEW frames_named AS SELECT f.id, f.pid, f.kind, f.addr, fn.text AS function,\n"
	"  sy.text AS symbol, fi.text AS file, b.text AS build_id, f.sym_offset, f.file_offset, f.line\n"
	"  FROM frames f LEFT JOIN strings fn ON fn.id = f.function LEFT JOIN strings sy ON sy.id = f.symbol\n"
	"  LEFT JOIN strings fi ON fi.id = f.file LEFT JOIN strings b ON b.id = f.build_id;\n"
	/*
	 * report.json's cuda_api[] (docs/report-format.md): the outermost calls of each
	 * (process, API), ordered like the report. The percentiles are the report's: the
	 * nearest-rank sample's log-linear bucket (64 sub-buckets per power of two), its
	 * middle, clamped to [min, max]; the rank is ceil(p/100 x calls) in double precision.
	 */
	"CREATE VIEW api_summary AS\n"
	"WITH RECURSIVE sh(s) AS (SELECT 0 UNION ALL SELECT s + 1 FROM sh WHERE s < 57),\n"
	"o AS (SELECT c.pid, c.api, c.end_ns - c.start_ns AS d, c.result, COALESCE(u.offcpu_ns, 0) AS offcpu_ns,\n"
	"        COALESCE(u.vol_switches, 0) AS vol_switches, COALESCE(u.invol_switches, 0) AS invol_switches,\n"
	"        COALESCE(u.minor_faults, 0) AS minor_faults, COALESCE(u.major_faults, 0) AS major_faults,\n"
	"        ROW_NUMBER() OVER (PARTITION BY c.pid, c.api ORDER BY c.end_ns - c.start_ns) AS rk\n"
	"      FROM calls c LEFT JOIN call_cpu u ON u.call_id = c.id WHERE c.parent_api IS NULL),\n"
	"g AS (SELECT pid, api, COUNT(*) AS n, SUM(d) AS total, MIN(d) AS mn, MAX(d) AS mx,\n"
	"        SUM(result != 0) AS errors, SUM(offcpu_ns) AS offcpu, SUM(vol_switches) AS vol,\n"
	"        SUM(invol_switches) AS invol, SUM(minor_faults) AS minf, SUM(major_faults) AS majf,\n"
	"        CAST(SUM(d) AS REAL) / COUNT(*) AS mean\n"
	"      FROM o GROUP BY pid, api),\n"
	"v AS (SELECT g.*, SUM((o.d - g.mean) * (o.d - g.mean)) AS m2,\n"
	"        50.0 / 100.0 * g.n AS w50, 99.0 / 100.0 * g.n AS w99\n"
	"      FROM g JOIN o ON o.pid = g.pid AND o.api = g.api GROUP BY g.pid, g.api),\n"
	"r AS (SELECT v.*,\n"
	"        MAX(1, MIN(n, CAST(w50 AS INTEGER) + (w50 > CAST(w50 AS INTEGER)))) AS r50,\n"
	"        MAX(1, MIN(n, CAST(w99 AS INTEGER) + (w99 > CAST(w99 AS INTEGER)))) AS r99 FROM v),\n"
	"q AS (SELECT r.*, o1.d AS s50, o2.d AS s99 FROM r\n"
	"        JOIN o o1 ON o1.pid = r.pid AND o1.api = r.api AND o1.rk = r.r50\n"
	"        JOIN o o2 ON o2.pid = r.pid AND o2.api = r.api AND o2.rk = r.r99),\n"
	"b AS (SELECT q.*,\n"
	"        CASE WHEN mn = mx THEN mn WHEN s50 < 64 THEN s50 ELSE\n"
	"          (SELECT ((s50 >> s) << s) + ((1 << s) - 1) / 2 FROM sh WHERE (s50 >> s) BETWEEN 64 AND 127)\n"
	"        END AS mid50,\n"
	"        CASE WHEN mn = mx THEN mn WHEN s99 < 64 THEN s99 ELSE\n"
	"          (SELECT ((s99 >> s) << s) + ((1 << s) - 1) / 2 FROM sh WHERE (s99 >> s) BETWEEN 64 AND 127)\n"
	"        END AS mid99 FROM q),\n"
	"t AS (SELECT pid, SUM(total) AS all_ns FROM g GROUP BY pid)\n"
	"SELECT b.pid, a.name, a.layer AS family, n AS calls, 0 AS aggregated_calls, 0 AS estimated_calls,\n"
	"  errors,\n"
	"  (SELECT json_group_array(json_object('code', code, 'name', ename, 'count', cnt)) FROM\n"
	"     (SELECT c.result AS code, COALESCE(e.name, CAST(c.result AS TEXT)) AS ename, COUNT(*) AS cnt\n"
	"      FROM calls c LEFT JOIN error_names e ON e.layer = a.layer AND e.code = c.result\n"
	"      WHERE c.pid = b.pid AND c.api = b.api AND c.parent_api IS NULL AND c.result != 0\n"
	"      GROUP BY c.result ORDER BY c.result)) AS error_codes,\n"
	"  CASE WHEN t.all_ns > 0 THEN ROUND(100.0 * total / t.all_ns * 100.0) / 100.0 ELSE 0.0 END\n"
	"    AS time_pct,\n"
	"  total AS total_ns, (total + n / 2) / n AS avg_ns, MAX(mn, MIN(mx, mid50)) AS med_ns,\n"
	"  mn AS min_ns, mx AS max_ns,\n"
	"  CASE WHEN n < 2 THEN 0 ELSE CAST(ROUND(sqrt(m2 / (n - 1))) AS INTEGER) END AS stddev_ns,\n"
	"  MAX(mn, MIN(mx, mid99)) AS p99_ns, offcpu AS offcpu_ns, vol AS voluntary_switches,\n"
	"  invol AS involuntary_switches, minf AS minor_faults, majf AS major_faults,\n"
	"  (SELECT json_group_array(json_object('api', iname, 'calls', cnt)) FROM\n"
	"     (SELECT ia.name AS iname, COUNT(*) AS cnt FROM calls i JOIN apis ia ON ia.id = i.api\n"
	"      WHERE i.pid = b.pid AND i.parent_api = b.api AND i.nested_in IS NOT NULL\n"
	"      GROUP BY i.api ORDER BY MIN(i.id) LIMIT 8)) AS implemented_by\n"
	"FROM b JOIN apis a ON a.id = b.api JOIN t ON t.pid = b.pid\n"
	"ORDER BY b.pid, total DESC, a.name;\n"
	/* report.json's transfers[]: successful copies by (direction, host memory, sync) */
	"CREATE VIEW transfer_summary AS\n"
	"SELECT c.pid, x.direction, x.host_memory, x.sync = 1 AS sync, COUNT(*) AS calls,\n"
	"  SUM(x.bytes) AS bytes, MIN(x.bytes) AS min_bytes, MAX(x.bytes) AS max_bytes,\n"
	"  SUM(c.end_ns - c.start_ns) AS total_ns,\n"
	"  CASE WHEN x.sync AND SUM(c.end_ns - c.start_ns) > 0\n"
	"    THEN SUM(x.bytes) / SUM(c.end_ns - c.start_ns) * 1000000000\n"
	"      + SUM(x.bytes) % SUM(c.end_ns - c.start_ns) * 1000000000 / SUM(c.end_ns - c.start_ns)\n"
	"    END AS bandwidth_bytes_per_s\n"
	"FROM transfers x JOIN calls c ON c.id = x.call_id WHERE c.result = 0\n"
	"GROUP BY c.pid, x.direction, x.host_memory, x.sync\n"
	"ORDER BY c.pid, CASE x.direction WHEN 'HtoD' THEN 0 WHEN 'DtoH' THEN 1 WHEN 'DtoD' THEN 2\n"
	"  WHEN 'HtoH' THEN 3 WHEN 'PtoP' THEN 4 ELSE 5 END,\n"
	"  CASE x.host_memory WHEN 'pageable' THEN 0 WHEN 'pinned' THEN 1 WHEN 'managed' THEN 2\n"
	"  WHEN 'device' THEN 3 ELSE 4 END, x.sync DESC;\n"
	/* report.json's memsets[]: successful memsets by sync */
	"CREATE VIEW memset_summary AS\n"
	"SELECT c.pid, a.async = 0 AS sync, COUNT(*) AS calls, SUM(c.bytes) AS bytes,\n"
	"  SUM(c.end_ns - c.start_ns) AS total_ns\n"
	"FROM calls c JOIN apis a ON a.id = c.api\n"
	"WHERE c.op = 'memset' AND c.result = 0 AND c.parent_api IS NULL\n"
	"GROUP BY c.pid, sync ORDER BY c.pid, sync DESC;\n";

int gp_sql_schema_create(sqlite3 *db, bool indices)
{
	return gp_sql_exec(db, tables) || (indices && gp_sql_exec(db, time_index)) ? -EIO : 0;
}

int gp_sql_schema_finish(sqlite3 *db, bool indices)
{
	if (indices && gp_sql_exec(db, lookup_indices))
		return -EIO;
	return gp_sql_exec(db, finish) || gp_sql_nsys_views(db) ? -EIO : 0;
}
