/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_md_containers.c — report.md's "Containers" (report.json
 * containers[]: one row per container, its processes' sums) and the lines
 * of a process's header that say where it runs.
 */
#include <stdio.h>
#include <string.h>

#include "report/report_md.h"

#define MD_PIDS_SHOWN 8 /* a container's pids listed in its row (all are in report.json) */

/* "web-1", else the first 12 hex digits of the id (as `podman ps`), else "" (a pod without one). */
static void container_text(char *buf, size_t len, const json_t *c)
{
	const char *name = gp_md_str(c, "name");

	if (*name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "%.12s", gp_md_str(c, "id"));
}

/* "namespace/name", else the uid; "" when not in a pod. */
static void pod_text(char *buf, size_t len, const json_t *pod)
{
	const char *ns = gp_md_str(pod, "namespace"), *name = gp_md_str(pod, "name");

	if (*name)
		snprintf(buf, len, "%s%s%s", ns, *ns ? "/" : "", name);
	else
		snprintf(buf, len, "%s", gp_md_str(pod, "uid"));
}

static void pids_text(char *buf, size_t len, const json_t *pids)
{
	const json_t *v;
	size_t i, off = 0, n = json_array_size(pids);

	buf[0] = '\0';
	json_array_foreach(pids, i, v) {
		int w;

		if (i == MD_PIDS_SHOWN) {
			snprintf(buf + off, len - off, ", … (%zu in all)", n);
			break;
		}
		w = snprintf(buf + off, len - off, "%s%lld", i ? ", " : "",
			     (long long)json_integer_value(v));
		if (w < 0 || (size_t)w >= len - off)
			break;
		off += (size_t)w;
	}
}

int gp_md_containers(const json_t *doc, FILE *out)
{
	static const char *const head[] = { "Container", "Runtime",   "Pod",
					    "Processes", "API calls", "GPU work host time (ns)",
					    "Copy bytes" };
	const json_t *rows = json_object_get(doc, "containers"), *r;
	struct gp_md_table *t;
	char c[256], pod[336], pids[160], n[32];
	size_t i;
	int err;

	if (!json_array_size(rows))
		return 0;
	fputs("## Containers\n\n", out);
	fputs("The traced processes that run in a container or a Kubernetes pod, by container "
	      "(report.json `containers`): each row sums its processes' own entries. GPU work host "
	      "time is the host time of the calls that queued GPU work (not GPU execution time); copy "
	      "bytes are their successful copies' bytes.\n\n",
	      out);
	t = gp_md_table_new(7, head, "llllrrr");
	json_array_foreach(rows, i, r) {
		const json_t *p = json_object_get(r, "pod");

		if (!t)
			break;
		container_text(c, sizeof(c), r);
		pod_text(pod, sizeof(pod), p);
		pids_text(pids, sizeof(pids), json_object_get(r, "processes"));
		gp_md_table_cell(t, "%s", *c ? c : "—");
		gp_md_table_cell(t, "%s", *gp_md_str(r, "runtime") ? gp_md_str(r, "runtime") : "—");
		gp_md_table_cell(t, "%s", *pod ? pod : "—");
		gp_md_table_cell(t, "%s", pids);
		gp_md_table_cell(t, "%s", gp_md_n(n, r, "calls"));
		gp_md_table_cell(t, "%s", gp_md_n(n, r, "gpu_work_host_ns"));
		gp_md_table_cell(t, "%s", gp_md_n(n, r, "bytes"));
	}
	err = gp_md_flush_table(t, out);
	fputc('\n', out);
	return err;
}

void gp_md_container_heading(char *buf, size_t len, const json_t *p)
{
	const json_t *ct = json_object_get(p, "container");
	char c[256], pod[336];

	buf[0] = '\0';
	if (!json_is_object(ct))
		return;
	container_text(c, sizeof(c), ct);
	pod_text(pod, sizeof(pod), json_object_get(ct, "pod"));
	if (*c)
		snprintf(buf, len, " (container %s)", c);
	else if (*pod)
		snprintf(buf, len, " (pod %s)", pod);
}

void gp_md_place_lines(const json_t *p, FILE *out)
{
	const json_t *ct = json_object_get(p, "container"), *pod = json_object_get(ct, "pod");
	json_int_t ns_pid = gp_md_int(p, "ns_pid");
	bool own_ns =
		json_is_integer(json_object_get(p, "ns_pid")) && ns_pid != gp_md_int(p, "pid");
	const char *rt = gp_md_str(ct, "runtime"), *id = gp_md_str(ct, "id"),
		   *name = gp_md_str(ct, "name");
	char c[256], pods[336];

	if (!json_is_object(ct)) {
		if (own_ns)
			fprintf(out, "- Pid %lld in its pid namespace\n", (long long)ns_pid);
		return;
	}
	container_text(c, sizeof(c), ct);
	if (!*rt)
		rt = "runtime not known";
	if (*c) /* the short id beside a name; alone, it is the name */
		fprintf(out, "- Container: %s (%s%s%.12s)", c, rt, *id && *name ? ", " : "",
			*name ? id : "");
	else
		fprintf(out, "- Container: not known (%s)", rt);
	if (own_ns)
		fprintf(out, ", pid %lld in its namespace", (long long)ns_pid);
	fputc('\n', out);
	if (json_is_object(pod)) {
		pod_text(pods, sizeof(pods), pod);
		fprintf(out, "- Pod: %s", pods);
		if (*gp_md_str(pod, "name"))
			fprintf(out, " (uid %s)", gp_md_str(pod, "uid"));
		fputc('\n', out);
	}
	if (*gp_md_str(ct, "cgroup"))
		fprintf(out, "- Cgroup: `%s`\n", gp_md_str(ct, "cgroup"));
}
