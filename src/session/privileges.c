/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* privileges.c — effective capabilities from /proc/self/status (see privileges.h). */
#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>

#include "session/privileges.h"

enum {
	CAP_DAC_READ_SEARCH_ = 2,
	CAP_SYS_PTRACE_ = 19,
	CAP_SYS_ADMIN_ = 21,
	CAP_PERFMON_ = 38,
	CAP_BPF_ = 39
};

static unsigned long long effective_caps(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	unsigned long long caps = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1)
			break;
	fclose(f);
	return caps;
}

bool gp_has_sys_admin(void)
{
	return effective_caps() & (1ULL << CAP_SYS_ADMIN_);
}

int gp_check_privileges(char *missing, size_t len)
{
	unsigned long long caps = effective_caps();
	bool admin = caps & (1ULL << CAP_SYS_ADMIN_);
	char buf[128] = "";

#define HAS(c) ((caps & (1ULL << (c))) != 0)
	if (!admin && !HAS(CAP_BPF_))
		strcat(buf, ", CAP_BPF");
	if (!admin && !HAS(CAP_PERFMON_))
		strcat(buf, ", CAP_PERFMON");
	if (!HAS(CAP_SYS_PTRACE_))
		strcat(buf, ", CAP_SYS_PTRACE");
#undef HAS
	if (!buf[0])
		return 0;
	snprintf(missing, len, "%s", buf + 2);
	return -EPERM;
}
