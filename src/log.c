/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* log.c — stderr logging with syslog levels (see log.h). */
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

int gp_log_level = LOG_NOTICE;
int gp_log_syslog_prefix;

void gp_log(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > gp_log_level)
		return;
	if (gp_log_syslog_prefix)
		fprintf(stderr, "<%d>", level);
	fputs("gpuprobed: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
