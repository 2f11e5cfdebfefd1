/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_doc_containers.c — where the traced processes run: a process's
 * "container" (runtime, id, name, Kubernetes pod, cgroup), and the
 * top-level containers[], each container's processes and the sums of their
 * own entries (so that they always agree with processes[]). Every field:
 * docs/report-format.md ("Containers").
 */
#include <stdlib.h>
#include <string.h>

#include "text/labels.h"
#include "report/report_builders.h"

static json_t *opt_str(const char *s)
{
	return s ? gp_j_str(s) : json_null();
}

json_t *gp_doc_container(struct gp_doc *d, const struct gp_process *p)
{
	json_t *o, *pod;

	if (!gp_in_container(p))
		return json_null();
	o = gp_doc_obj_new(d);
	gp_doc_put(d, o, "runtime", opt_str(p->place.runtime));
	gp_doc_put(d, o, "id", opt_str(p->place.id));
	gp_doc_put(d, o, "name", opt_str(p->place.name));
	if (p->place.pod_uid) {
		pod = gp_doc_obj_new(d);
		gp_doc_put(d, pod, "uid", gp_j_str(p->place.pod_uid));
		gp_doc_put(d, pod, "name", opt_str(p->place.pod_name));
		gp_doc_put(d, pod, "namespace", opt_str(p->place.pod_namespace));
	} else {
		pod = json_null();
	}
	gp_doc_put(d, o, "pod", pod);
	gp_doc_put(d, o, "cgroup", opt_str(p->place.cgroup));
	return o;
}

/* A process entry in a container, and what its container is known by: its id, else its pod uid. */
struct member {
	const json_t *proc, *ct;
	const char *key;
	bool by_pod;
};

static const char *str_of(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static __u64 u64_of(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (__u64)json_integer_value(v) : 0;
}

/* By container, then pid: a container's entries together, its pids ascending. */
static int cmp_member(const void *a, const void *b)
{
	const struct member *x = a, *y = b;
	__u64 px = u64_of(x->proc, "pid"), py = u64_of(y->proc, "pid");
	int c;

	if (x->by_pod != y->by_pod)
		return x->by_pod ? 1 : -1; /* a pod uid is never taken for a container id */
	if ((c = strcmp(x->key, y->key)))
		return c;
	return (px > py) - (px < py);
}

/* One container: its n members from first; its name, from the first member that knows it. */
struct group {
	const struct member *first;
	size_t n;
	const char *name;
};

/* Named first, by name; then by id (pod-only containers by their pod's uid, last). */
static int cmp_group(const void *a, const void *b)
{
	const struct group *x = a, *y = b;
	int c;

	if (!x->name != !y->name)
		return x->name ? -1 : 1;
	if (x->name && (c = strcmp(x->name, y->name)))
		return c;
	if (x->first->by_pod != y->first->by_pod)
		return x->first->by_pod ? 1 : -1;
	return strcmp(x->first->key, y->first->key);
}

static json_t *group_entry(struct gp_doc *d, const struct group *g)
{
	json_t *o = gp_doc_obj_new(d), *pids = gp_doc_arr_new(d), *pod = NULL;
	const char *runtime = NULL, *id = NULL;
	__u64 calls = 0, host_ns = 0, bytes = 0, last_pid = 0;

	for (size_t i = 0; i < g->n; i++) {
		const struct member *mb = &g->first[i];
		const json_t *gw = json_object_get(mb->proc, "gpu_work"), *t;
		const json_t *work = json_object_get(gw, "total");
		__u64 pid = u64_of(mb->proc, "pid");
		size_t j;

		runtime = runtime ? runtime : str_of(mb->ct, "runtime");
		id = id ? id : str_of(mb->ct, "id");
		if (!pod && json_is_object(json_object_get(mb->ct, "pod")))
			pod = json_object_get(mb->ct, "pod");
		if (!i || pid != last_pid) /* a pid reused in the container: listed once */
			gp_doc_push(d, pids, gp_j_u64(pid));
		last_pid = pid;
		calls += u64_of(mb->proc, "api_calls");
		host_ns += u64_of(work, "host_ns");
		json_array_foreach(json_object_get(mb->proc, "transfers"), j, t)
			bytes += u64_of(t, "bytes");
	}
	gp_doc_put(d, o, "runtime", opt_str(runtime));
	gp_doc_put(d, o, "id", opt_str(id));
	gp_doc_put(d, o, "name", opt_str(g->name));
	gp_doc_put(d, o, "pod", pod ? json_deep_copy(pod) : json_null());
	gp_doc_put(d, o, "processes", pids);
	gp_doc_put(d, o, "calls", gp_j_u64(calls));
	gp_doc_put(d, o, "gpu_work_host_ns", gp_j_u64(host_ns));
	gp_doc_put(d, o, "bytes", gp_j_u64(bytes));
	return o;
}

json_t *gp_doc_containers(struct gp_doc *d, const json_t *procs)
{
	json_t *arr = gp_doc_arr_new(d);
	size_t n = 0, ng = 0, np = json_array_size(procs), i;
	struct member *mb = np ? calloc(np, sizeof(*mb)) : NULL;
	struct group *gs = np ? calloc(np, sizeof(*gs)) : NULL;
	const json_t *p;

	if (np && (!mb || !gs)) {
		d->failed = true;
		goto out;
	}
	json_array_foreach(procs, i, p) {
		const json_t *ct = json_object_get(p, "container");
		const char *id = str_of(ct, "id");
		const char *uid = str_of(json_object_get(ct, "pod"), "uid");

		if (id || uid)
			mb[n++] = (struct member){ p, ct, id ? id : uid, !id };
	}
	if (!n)
		goto out;
	qsort(mb, n, sizeof(*mb), cmp_member);
	for (size_t k = 0; k < n; k++) {
		struct group *g = &gs[ng];

		if (k && mb[k].by_pod == mb[k - 1].by_pod && !strcmp(mb[k].key, mb[k - 1].key)) {
			g = &gs[ng - 1];
			g->n++;
		} else {
			*g = (struct group){ .first = &mb[k], .n = 1 };
			ng++;
		}
		if (!g->name)
			g->name = str_of(mb[k].ct, "name");
	}
	qsort(gs, ng, sizeof(*gs), cmp_group);
	for (size_t k = 0; k < ng; k++)
		gp_doc_push(d, arr, group_entry(d, &gs[k]));
out:
	free(gs);
	free(mb);
	return arr;
}
