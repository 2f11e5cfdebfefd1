/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * containers.h — where a traced process runs: the pid inside its own pid
 * namespace, its container (runtime, id, name) and its Kubernetes pod (uid,
 * name, namespace), read from the kernel's files (/proc/PID/cgroup,
 * /proc/PID/status) and the runtimes' own files on the host, never by
 * calling a runtime's API while tracing.
 *
 * The container id comes from the process's cgroup path, in the formats the
 * runtimes write (cgroup v1, v2 and hybrid; systemd and cgroupfs drivers):
 *   podman    .../libpod-<id>.scope[/container], /libpod_parent/libpod-<id>
 *   docker    .../docker-<id>.scope, /docker/<id>
 *   containerd (Kubernetes, nerdctl)  .../cri-containerd-<id>.scope, .../nerdctl-<id>.scope
 *   cri-o     .../crio-<id>.scope (crio-conmon-<id>.scope is the monitor: no container)
 *   kubepods  /kubepods[.slice]/...pod<uid>[.slice]/<id>  (cgroupfs driver: the bare id)
 * The name, where the host's files say it: podman's containers.json, docker's
 * containers/<id>/config.v2.json, and for a pod the kubelet's log directory
 * (/var/log/pods/<namespace>_<name>_<uid>/<container>/).
 */
#ifndef GP_CONTAINERS_H
#define GP_CONTAINERS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define GP_CONTAINER_ID_MAX 64

struct gp_place {
	pid_t ns_pid;	  /* the pid inside its pid namespace (the host's pid when none) */
	char runtime[16]; /* "podman", "docker", "containerd", "cri-o", "kubernetes"; "": none */
	char id[GP_CONTAINER_ID_MAX +
		1];	  /* the container's full id (hex); "": not in a container */
	char name[256];	  /* its name where the runtime's files say it; "": not known */
	char pod_uid[40]; /* Kubernetes pod uid (dashes, as the API shows it); "": none */
	char pod_name[256],
		pod_namespace[64]; /* "": not known (no kubelet log directory for the pod) */
	char cgroup[512]; /* the cgroup path the id was read from (v2, else name=systemd) */
};

/*
 * Parses the text of /proc/PID/cgroup into p's cgroup, runtime, id and
 * pod_uid (names untouched). Returns true when the process is in a
 * container or pod.
 */
bool gp_place_from_cgroup(const char *cgroup_text, struct gp_place *p);

/*
 * The runtimes' files on the host, read under root ("" or NULL: "/"; the
 * tests give a directory of their own). Results are cached by container id.
 */
struct gp_places;
struct gp_places *gp_places_new(const char *root);
void gp_places_free(struct gp_places *ps);

/*
 * Where pid runs, filled in whole (p zeroed first; ns_pid from NSpid).
 * Returns 0, or -errno when /proc/PID/cgroup cannot be read (the process is gone).
 */
int gp_places_of_pid(struct gp_places *ps, pid_t pid, struct gp_place *p);

/*
 * gp_places_of_pid's last step: p's name, pod_name and pod_namespace from the
 * files under root, for the runtime, id and pod_uid gp_place_from_cgroup gave.
 */
void gp_places_names(struct gp_places *ps, struct gp_place *p);

/*
 * True when p is the container named by what: its full id, a unique prefix
 * of it (at least 12 hex digits, as `podman ps` shows), or its name.
 */
bool gp_place_matches(const struct gp_place *p, const char *what);

#endif
