/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * metrics_collect.c — what the /metrics page collects of each traced
 * process before rendering (see metrics_internal.h): its label set (pid,
 * comm; container, pod and namespace; the job from its cgroup or its
 * environment), and for a live one what the kernel counts of it
 * (/proc/PID/stat, /proc/PID/task/N/status).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/metrics_internal.h"
#include "text/labels.h"
#include "proc_maps.h"
#include "processes/containers.h"

/* ---- /proc ---------------------------------------------------------------- */

/* The job of a live process: its cgroup v2 path, or the value of job_env; "" when unknown. */
static char *job_id(struct render *r, const struct gp_process *p)
{
	char path[4096];
	size_t len = 0;
	char *buf, *res = NULL;

	if (p->exited) /* a group's: the cgroup it was admitted from (a pid's series: unknown) */
		return strdup(r->o->pool && r->o->job_source == GP_JOB_CGROUP && p->place.cgroup
				      ? p->place.cgroup
				      : "");
	if (r->o->job_source == GP_JOB_CGROUP) {
		snprintf(path, sizeof(path), "%s/%u/cgroup", r->proc_root, p->pid);
		buf = gp_read_whole_file(path, &len);
		if (buf) {
			struct gp_place pl;

			/* v2's path, or on a hybrid or v1 machine the systemd (else another) hierarchy's */
			gp_place_from_cgroup(buf, &pl);
			res = strdup(pl.cgroup);
		}
		free(buf);
	} else if (r->o->job_source == GP_JOB_ENV && r->o->job_env && *r->o->job_env) {
		size_t klen = strlen(r->o->job_env);

		snprintf(path, sizeof(path), "%s/%u/environ", r->proc_root, p->pid);
		buf = gp_read_whole_file(path, &len);
		/* NUL-separated NAME=value entries */
		for (size_t i = 0; buf && i < len; i += strlen(buf + i) + 1)
			if (!strncmp(buf + i, r->o->job_env, klen) && buf[i + klen] == '=') {
				res = strdup(buf + i + klen + 1);
				break;
			}
		free(buf);
	}
	return res ? res : strdup("");
}

static void read_stat(struct render *r, __u32 pid, struct proc_counts *pc)
{
	char path[4096];
	char *buf, *s;
	unsigned long long v[13];

	snprintf(path, sizeof(path), "%s/%u/stat", r->proc_root, pid);
	buf = gp_read_whole_file(path, NULL);
	/* the name (field 2) may hold spaces and parentheses: fields 3.. follow its last ')' */
	s = buf ? strrchr(buf, ')') : NULL;
	if (s && sscanf(s + 1, " %*c %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
			&v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9],
			&v[10], &v[11]) == 12) {
		/* v[i] is field i + 4: minflt 10, majflt 12, utime 14, stime 15 */
		pc->minflt = v[6];
		pc->majflt = v[8];
		pc->utime = v[10];
		pc->stime = v[11];
		pc->stat_ok = true;
	}
	free(buf);
}

/* Context switches summed over the live threads (status is per thread). */
static void read_switches(struct render *r, __u32 pid, struct proc_counts *pc)
{
	char path[4096];
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "%s/%u/task", r->proc_root, pid);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		char *buf, *s;
		unsigned long long vol, invol;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%u/task/%s/status", r->proc_root, pid, e->d_name);
		buf = gp_read_whole_file(path, NULL);
		s = buf ? strstr(buf, "\nvoluntary_ctxt_switches:") : NULL;
		if (s &&
		    sscanf(s, "\nvoluntary_ctxt_switches: %llu\nnonvoluntary_ctxt_switches: %llu",
			   &vol, &invol) == 2) {
			pc->vol += vol;
			pc->invol += invol;
			pc->switches_ok = true;
		}
		free(buf);
	}
	closedir(d);
}

/* ---- labels of the processes --------------------------------------------- */

static void opt_label(FILE *f, const char *key, const char *value)
{
	if (!value || !*value)
		return; /* "" is no label to Prometheus: absent, as rules and their tests see it */
	fprintf(f, ",%s=\"", key);
	gp_metrics_put_value(f, value);
	fputc('"', f);
}

/* container, pod, namespace: where p runs, each absent on the host or when not known. */
void gp_metrics_place_labels(FILE *f, const struct gp_process *p)
{
	char c[256] = "";

	if (!p)
		return;
	gp_container_label(p, c, sizeof(c));
	opt_label(f, "container", c);
	opt_label(f, "pod", p->place.pod_name);
	opt_label(f, "namespace", p->place.pod_namespace);
}

char *gp_metrics_label_text(struct render *r, const struct gp_process *p)
{
	char *buf = NULL, *job = NULL;
	size_t len = 0;
	FILE *f;

	if (r->o->job_source != GP_JOB_NONE && !(job = job_id(r, p)))
		return NULL;
	f = open_memstream(&buf, &len);
	if (!f) {
		free(job);
		return NULL;
	}
	if (!r->o->pool) /* a group's series have none: the pool adds its processes up */
		fprintf(f, "pid=\"%u\",", p->pid);
	fputs("comm=\"", f);
	gp_metrics_put_value(f, p->comm ? p->comm : "");
	fputc('"', f);
	gp_metrics_place_labels(f, p);
	if (job) {
		fputs(",job_id=\"", f);
		gp_metrics_put_value(f, job);
		fputc('"', f);
	}
	free(job);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

int gp_metrics_collect(struct render *r, size_t i)
{
	const struct gp_process *p = r->m->procs[i];

	/* a reused pid: only its newest entry, or two series would share one label set */
	if (gp_u64map_get(&r->m->by_pid, p->pid) != p)
		return 0;
	if (!(r->labels[i] = gp_metrics_label_text(r, p)))
		return -ENOMEM;
	if (!p->exited) {
		read_stat(r, p->pid, &r->pc[i]);
		read_switches(r, p->pid, &r->pc[i]);
	}
	return 0;
}
