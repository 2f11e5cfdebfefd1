/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * session_sql.c — a session's --sqlite FILE: its capture, once closed,
 * exported into FILE (sql/sql_export.h), the same database `gpuprobed
 * export` makes of it.
 */
#include "log.h"
#include "session/session_internal.h"
#include "sql/sql_export.h"

int gp_session_export_sqlite(struct session *s)
{
	struct gp_sql_export_stats st;
	int err = gp_sql_export(s->capture.path, s->opt->sqlite_path,
				&(struct gp_sql_export_opts){ .force = true }, &st);

	if (!err)
		gp_info("sqlite %s: %llu calls from %s", s->opt->sqlite_path,
			(unsigned long long)st.calls, s->capture.path);
	return err;
}
