/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * containers.c — where a process runs: its pid namespace's pid, container and pod, from /proc and
 * the runtimes' files (see containers.h). Hand-written: no Debian library parses the cgroup paths
 * container runtimes write.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "processes/containers.h"

#define UID_LEN		36
#define CACHE_SLOTS	64
/* a miss is looked again after this: a container's files may appear just after its first process */
#define NEGATIVE_TTL_NS 1000000000ull

struct span {
	const char *s;
	size_t n;
};

static bool span_is(struct span c, const char *lit)
{
	size_t n = strlen(lit);

	return c.n == n && memcmp(c.s, lit, n) == 0;
}

/* Strips prefix from c when c starts with it. */
static bool span_eat_prefix(struct span *c, const char *prefix)
{
	size_t n = strlen(prefix);

	if (c->n < n || memcmp(c->s, prefix, n) != 0)
		return false;
	c->s += n;
	c->n -= n;
	return true;
}

static void span_eat_suffix(struct span *c, const char *suffix)
{
	size_t n = strlen(suffix);

	if (c->n >= n && memcmp(c->s + c->n - n, suffix, n) == 0)
		c->n -= n;
}

static void copy_span(char *dst, size_t cap, const char *s, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

static bool is_lower_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* Only full ids: a shorter or longer run of hex is some other name. */
static bool is_id(struct span c)
{
	size_t i;

	if (c.n != GP_CONTAINER_ID_MAX)
		return false;
	for (i = 0; i < c.n; i++)
		if (!is_lower_hex(c.s[i]))
			return false;
	return true;
}

/* A pod uid, with dashes (cgroupfs) or underscores (systemd: '-' separates slice levels). */
static bool is_uid(struct span c)
{
	size_t i;

	if (c.n != UID_LEN)
		return false;
	for (i = 0; i < c.n; i++) {
		bool sep = i == 8 || i == 13 || i == 18 || i == 23;

		if (sep ? c.s[i] != '-' && c.s[i] != '_' : !is_lower_hex(c.s[i]))
			return false;
	}
	return true;
}

/* The component of path that ends at end (trailing slashes skipped); n == 0: none left. */
static struct span comp_before(const char *path, const char *end)
{
	struct span c;

	while (end > path && end[-1] == '/')
		end--;
	c.s = end;
	while (c.s > path && c.s[-1] != '/')
		c.s--;
	c.n = (size_t)(end - c.s);
	return c;
}

static const struct {
	const char *prefix, *runtime;
} id_forms[] = {
	/* libpod-conmon-<id>.scope and crio-conmon-<id>.scope fail is_id: monitors, no container */
	{ "libpod-", "podman" },      { "docker-", "docker" }, { "cri-containerd-", "containerd" },
	{ "nerdctl-", "containerd" }, { "crio-", "cri-o" },
};

/* The runtime whose container c names (parent: the component above; kube: under kubepods). */
static const char *id_of(struct span c, struct span parent, bool kube, struct span *id)
{
	size_t i;

	for (i = 0; i < sizeof(id_forms) / sizeof(id_forms[0]); i++) {
		*id = c;
		if (!span_eat_prefix(id, id_forms[i].prefix))
			continue;
		span_eat_suffix(id, ".scope");
		if (is_id(*id))
			return id_forms[i].runtime;
	}
	*id = c;
	if (is_id(c) && span_is(parent, "docker"))
		return "docker";
	if (is_id(c) && kube)
		return "kubernetes";
	return NULL;
}

/* kubepods-[burstable-|besteffort-]pod<uid>.slice (systemd) or pod<uid> (cgroupfs). */
static bool uid_of(struct span c, char *uid, size_t cap)
{
	static const char *const prefixes[] = { "kubepods-burstable-pod", "kubepods-besteffort-pod",
						"kubepods-pod" };
	size_t i;

	span_eat_suffix(&c, ".slice");
	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (span_eat_prefix(&c, prefixes[i]))
			break;
	if (i == sizeof(prefixes) / sizeof(prefixes[0]) && !span_eat_prefix(&c, "pod"))
		return false;
	if (!is_uid(c) || cap <= UID_LEN)
		return false;
	for (i = 0; i < UID_LEN; i++)
		uid[i] = c.s[i] == '_' ? '-' : c.s[i];
	uid[UID_LEN] = '\0';
	return true;
}

/* Where the outermost kubepods component starts; NULL when there is none. */
static const char *kubepods_at(const char *path, size_t len)
{
	const char *at = NULL;
	struct span c;

	for (c = comp_before(path, path + len); c.n; c = comp_before(path, c.s))
		if (span_is(c, "kubepods") || span_is(c, "kubepods.slice"))
			at = c.s;
	return at;
}

/* Scans from the innermost component outward: the innermost container wins. */
static void recognise(const char *path, size_t len, struct gp_place *p)
{
	const char *kube = kubepods_at(path, len), *runtime;
	struct span c, id;

	for (c = comp_before(path, path + len); c.n; c = comp_before(path, c.s)) {
		bool under_kube = kube && c.s > kube;

		if (!p->id[0]) {
			runtime = id_of(c, comp_before(path, c.s), under_kube, &id);
			if (runtime) {
				copy_span(p->runtime, sizeof(p->runtime), runtime, strlen(runtime));
				copy_span(p->id, sizeof(p->id), id.s, id.n);
				continue;
			}
		}
		/* nothing above a pod is its container */
		if (under_kube && uid_of(c, p->pod_uid, sizeof(p->pod_uid)))
			return;
	}
}

/* True when controllers, a comma-separated list, holds item. */
static bool has_controller(struct span controllers, const char *item)
{
	const char *end = controllers.s + controllers.n, *comma;
	struct span c = { controllers.s, 0 };

	for (;;) {
		comma = memchr(c.s, ',', (size_t)(end - c.s));
		c.n = (size_t)((comma ? comma : end) - c.s);
		if (span_is(c, item))
			return true;
		if (!comma)
			return false;
		c.s = comma + 1;
	}
}

/* How good a line's path is: v2 > name=systemd > another v1 > "/" (0); -1: malformed. */
static int line_rank(struct span line, struct span *path)
{
	const char *c1 = memchr(line.s, ':', line.n), *c2, *end = line.s + line.n;
	struct span hier, ctl;
	size_t i;

	if (!c1 || c1 == line.s || !(c2 = memchr(c1 + 1, ':', (size_t)(end - c1 - 1))))
		return -1;
	hier = (struct span){ line.s, (size_t)(c1 - line.s) };
	ctl = (struct span){ c1 + 1, (size_t)(c2 - c1 - 1) };
	*path = (struct span){ c2 + 1, (size_t)(end - c2 - 1) };
	for (i = 0; i < hier.n; i++)
		if (hier.s[i] < '0' || hier.s[i] > '9')
			return -1;
	if (!path->n || path->s[0] != '/')
		return -1;
	if (span_is(*path, "/"))
		return 0;
	if (span_is(hier, "0") && !ctl.n)
		return 3;
	return has_controller(ctl, "name=systemd") ? 2 : 1;
}

/* The first line of rank rank whose path names a container or pod, into p; false if none. */
static bool recognise_rank(const char *cgroup_text, int rank, struct gp_place *p)
{
	struct span line, path;
	const char *nl;

	for (line.s = cgroup_text; line.s && *line.s; line.s = nl ? nl + 1 : NULL) {
		nl = strchr(line.s, '\n');
		line.n = nl ? (size_t)(nl - line.s) : strlen(line.s);
		if (line_rank(line, &path) != rank)
			continue;
		copy_span(p->cgroup, sizeof(p->cgroup), path.s, path.n);
		/* the whole path, not the copy: an overlong one keeps its innermost components */
		recognise(path.s, path.n, p);
		if (p->id[0] || p->pod_uid[0])
			return true;
	}
	return false;
}

bool gp_place_from_cgroup(const char *cgroup_text, struct gp_place *p)
{
	struct span line, path, best = { NULL, 0 };
	int rank, best_rank = -1;
	const char *nl;

	if (!p)
		return false;
	p->cgroup[0] = p->runtime[0] = p->id[0] = p->pod_uid[0] = '\0';
	/*
	 * The best-ranked line that names a container: a runtime may have made the container's
	 * cgroup in one hierarchy only (a v1 controller's, while the others stay where they were).
	 */
	for (rank = 3; rank > 0; rank--)
		if (recognise_rank(cgroup_text, rank, p))
			return true;
	for (line.s = cgroup_text; line.s && *line.s; line.s = nl ? nl + 1 : NULL) {
		nl = strchr(line.s, '\n');
		line.n = nl ? (size_t)(nl - line.s) : strlen(line.s);
		rank = line_rank(line, &path);
		if (rank > best_rank) {
			best_rank = rank;
			best = path;
		}
	}
	p->cgroup[0] = p->runtime[0] = p->id[0] = p->pod_uid[0] = '\0';
	if (best_rank >= 0)
		copy_span(p->cgroup, sizeof(p->cgroup), best.s, best.n);
	return false;
}

bool gp_place_matches(const struct gp_place *p, const char *what)
{
	size_t i, n;

	if (!p || !what || !what[0])
		return false;
	if (p->name[0] && strcmp(p->name, what) == 0)
		return true;
	if (!p->id[0])
		return false;
	n = strlen(what);
	if (n < 12 || n > GP_CONTAINER_ID_MAX)
		return false;
	for (i = 0; i < n; i++)
		if (!is_lower_hex(what[i]))
			return false;
	return strncmp(p->id, what, n) == 0;
}

/* The host's files: names by container id (podman, docker) and pods by uid, found or not. */
struct id_slot {
	char runtime[16], id[GP_CONTAINER_ID_MAX + 1]; /* a runtime's miss is not another's */
	char name[256];
	bool found;
	uint64_t looked_ns;
};

struct pod_slot {
	char uid[40];
	char dir[NAME_MAX + 1]; /* <namespace>_<name>_<uid> under var/log/pods */
	char pod_name[256], pod_namespace[64];
	char name[256]; /* its only container's name; "": none or several */
	struct timespec dir_mtime;
	bool found;
	uint64_t looked_ns;
};

struct gp_places {
	char root[PATH_MAX]; /* no trailing '/': "" is "/" */
	struct id_slot ids[CACHE_SLOTS];
	struct pod_slot pods[CACHE_SLOTS];
	unsigned int next_id, next_pod; /* the slot a new key takes, round-robin */
	json_t *podman;			/* containers.json as last read */
	struct stat podman_st;		/* and its file then */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A slot worth using: found, or not found less than a second ago. */
static bool slot_fresh(bool found, uint64_t looked_ns)
{
	return found || mono_ns() - looked_ns < NEGATIVE_TTL_NS;
}

struct gp_places *gp_places_new(const char *root)
{
	struct gp_places *ps = calloc(1, sizeof(*ps));
	size_t n;

	if (!ps)
		return NULL;
	if (root && strlen(root) >= sizeof(ps->root)) {
		free(ps);
		return NULL;
	}
	snprintf(ps->root, sizeof(ps->root), "%s", root ? root : "");
	n = strlen(ps->root);
	while (n && ps->root[n - 1] == '/')
		ps->root[--n] = '\0';
	return ps;
}

void gp_places_free(struct gp_places *ps)
{
	if (!ps)
		return;
	json_decref(ps->podman);
	free(ps);
}

/* ROOT/ then fmt's text into buf; false when it does not fit. */
static bool root_path(const struct gp_places *ps, char *buf, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static bool root_path(const struct gp_places *ps, char *buf, size_t cap, const char *fmt, ...)
{
	int n = snprintf(buf, cap, "%s/", ps->root), m;
	va_list ap;

	if (n < 0 || (size_t)n >= cap)
		return false;
	va_start(ap, fmt);
	m = vsnprintf(buf + n, cap - (size_t)n, fmt, ap);
	va_end(ap);
	return m >= 0 && (size_t)m < cap - (size_t)n;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* containers.json, re-read only when it changed (podman replaces it whole). Rootful only. */
static json_t *podman_containers(struct gp_places *ps)
{
	char path[PATH_MAX];
	struct stat st;

	if (!root_path(ps, path, sizeof(path),
		       "var/lib/containers/storage/overlay-containers/containers.json") ||
	    stat(path, &st) != 0) {
		json_decref(ps->podman);
		ps->podman = NULL;
		memset(&ps->podman_st, 0, sizeof(ps->podman_st));
		return NULL;
	}
	if (same_file(&st, &ps->podman_st))
		return ps->podman;
	json_decref(ps->podman);
	ps->podman = json_load_file(path, 0, NULL);
	ps->podman_st = st;
	return ps->podman;
}

static bool podman_name(struct gp_places *ps, const char *id, char *name, size_t cap)
{
	json_t *all = podman_containers(ps), *c;
	const char *s, *first;
	size_t i;

	json_array_foreach(all, i, c) {
		s = json_string_value(json_object_get(c, "id"));
		if (!s || strcmp(s, id) != 0)
			continue;
		first = json_string_value(json_array_get(json_object_get(c, "names"), 0));
		if (!first)
			return false;
		copy_span(name, cap, first, strlen(first));
		return true;
	}
	return false;
}

static bool docker_name(struct gp_places *ps, const char *id, char *name, size_t cap)
{
	char path[PATH_MAX];
	const char *s;
	json_t *cfg;
	bool ok = false;

	if (!root_path(ps, path, sizeof(path), "var/lib/docker/containers/%s/config.v2.json", id))
		return false;
	cfg = json_load_file(path, 0, NULL);
	s = json_string_value(json_object_get(cfg, "Name"));
	if (s) {
		s += s[0] == '/';
		copy_span(name, cap, s, strlen(s));
		ok = s[0] != '\0';
	}
	json_decref(cfg);
	return ok;
}

static struct id_slot *id_slot(struct gp_places *ps, const struct gp_place *p)
{
	struct id_slot *s;
	size_t i;

	for (i = 0; i < CACHE_SLOTS; i++)
		if (strcmp(ps->ids[i].id, p->id) == 0 &&
		    strcmp(ps->ids[i].runtime, p->runtime) == 0)
			return &ps->ids[i];
	s = &ps->ids[ps->next_id++ % CACHE_SLOTS];
	memset(s, 0, sizeof(*s));
	snprintf(s->runtime, sizeof(s->runtime), "%s", p->runtime);
	snprintf(s->id, sizeof(s->id), "%s", p->id);
	return s;
}

static void container_name(struct gp_places *ps, struct gp_place *p)
{
	struct id_slot *s = id_slot(ps, p);
	bool podman = strcmp(p->runtime, "podman") == 0;

	if (!s->looked_ns || !slot_fresh(s->found, s->looked_ns)) {
		s->found = podman ? podman_name(ps, p->id, s->name, sizeof(s->name))
				  : docker_name(ps, p->id, s->name, sizeof(s->name));
		if (!s->found)
			s->name[0] = '\0';
		s->looked_ns = mono_ns();
	}
	snprintf(p->name, sizeof(p->name), "%s", s->name);
}

/* The pod's only container's name (its one directory); "" when it has none or several. */
static void pod_container(struct gp_places *ps, struct pod_slot *s)
{
	char path[PATH_MAX], only[sizeof(s->name)] = "";
	struct dirent *e;
	struct stat st;
	int count = 0;
	DIR *d;

	s->name[0] = '\0';
	if (!root_path(ps, path, sizeof(path), "var/log/pods/%s", s->dir) || !(d = opendir(path)))
		return;
	if (fstat(dirfd(d), &st) == 0)
		s->dir_mtime = st.st_mtim;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || fstatat(dirfd(d), e->d_name, &st, 0) != 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		if (count++ == 0)
			snprintf(only, sizeof(only), "%s", e->d_name);
	}
	closedir(d);
	/* several containers: the CRI's labels would say which, and they are not read here */
	if (count == 1)
		snprintf(s->name, sizeof(s->name), "%s", only);
}

/* Splits <namespace>_<name>_<uid> when it ends in uid (neither namespace nor name has '_'). */
static bool pod_dir_is(struct pod_slot *s, const char *dir)
{
	size_t n = strlen(dir), u = strlen(s->uid);
	const char *us = strchr(dir, '_');
	size_t ns_len, name_len;

	if (n <= u + 1 || dir[n - u - 1] != '_' || strcmp(dir + n - u, s->uid) != 0 || !us)
		return false;
	ns_len = (size_t)(us - dir);
	if (!ns_len || n - u - 1 <= ns_len + 1)
		return false;
	name_len = n - u - 1 - ns_len - 1;
	copy_span(s->pod_namespace, sizeof(s->pod_namespace), dir, ns_len);
	copy_span(s->pod_name, sizeof(s->pod_name), us + 1, name_len);
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	return true;
}

static bool pod_find(struct gp_places *ps, struct pod_slot *s)
{
	char path[PATH_MAX];
	struct dirent *e;
	bool found = false;
	DIR *d;

	if (!root_path(ps, path, sizeof(path), "var/log/pods") || !(d = opendir(path)))
		return false;
	while (!found && (e = readdir(d)))
		found = pod_dir_is(s, e->d_name);
	closedir(d);
	if (found)
		pod_container(ps, s);
	return found;
}

static struct pod_slot *pod_slot(struct gp_places *ps, const char *uid)
{
	struct pod_slot *s;
	size_t i;

	for (i = 0; i < CACHE_SLOTS; i++)
		if (strcmp(ps->pods[i].uid, uid) == 0)
			return &ps->pods[i];
	s = &ps->pods[ps->next_pod++ % CACHE_SLOTS];
	memset(s, 0, sizeof(*s));
	snprintf(s->uid, sizeof(s->uid), "%s", uid);
	return s;
}

/* A pod found before: its directory's entries change as its containers start. */
static bool pod_still(struct gp_places *ps, struct pod_slot *s)
{
	char path[PATH_MAX];
	struct stat st;

	if (!root_path(ps, path, sizeof(path), "var/log/pods/%s", s->dir) || stat(path, &st) != 0)
		return false;
	if (st.st_mtim.tv_sec != s->dir_mtime.tv_sec || st.st_mtim.tv_nsec != s->dir_mtime.tv_nsec)
		pod_container(ps, s);
	return true;
}

static void pod_names(struct gp_places *ps, struct gp_place *p)
{
	struct pod_slot *s = pod_slot(ps, p->pod_uid);

	if (s->found)
		s->found = pod_still(ps, s);
	if (!s->found && (!s->looked_ns || !slot_fresh(false, s->looked_ns))) {
		s->pod_name[0] = s->pod_namespace[0] = s->name[0] = '\0';
		s->found = pod_find(ps, s);
		s->looked_ns = mono_ns();
	}
	if (!s->found)
		return;
	snprintf(p->pod_name, sizeof(p->pod_name), "%s", s->pod_name);
	snprintf(p->pod_namespace, sizeof(p->pod_namespace), "%s", s->pod_namespace);
	if (!p->name[0])
		snprintf(p->name, sizeof(p->name), "%s", s->name);
}

void gp_places_names(struct gp_places *ps, struct gp_place *p)
{
	if (!ps || !p)
		return;
	if (p->id[0] && (!strcmp(p->runtime, "podman") || !strcmp(p->runtime, "docker")))
		container_name(ps, p);
	/* containerd, cri-o: no name of their own on disk; the pod's directory may say it */
	if (p->pod_uid[0])
		pod_names(ps, p);
}

/* A small /proc file whole into buf (NUL-terminated); its length, or -errno. */
static ssize_t read_text(const char *path, char *buf, size_t cap)
{
	ssize_t n, len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	while ((size_t)len < cap - 1 && (n = read(fd, buf + len, cap - 1 - (size_t)len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			close(fd);
			return -err;
		}
		len += n;
	}
	close(fd);
	buf[len] = '\0';
	return len;
}

/* The last number of NSpid: (the innermost namespace's pid); pid when the kernel has no line. */
static pid_t ns_pid_of(pid_t pid)
{
	char path[64], text[4096], *line, *end;
	long v, last = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (read_text(path, text, sizeof(text)) < 0)
		return pid;
	line = strstr(text, "\nNSpid:");
	if (!line)
		return pid;
	for (line += strlen("\nNSpid:");; line = end) {
		v = strtol(line, &end, 10);
		if (end == line || *line == '\n')
			break;
		last = v;
	}
	return last > 0 && last <= INT_MAX ? (pid_t)last : pid;
}

int gp_places_of_pid(struct gp_places *ps, pid_t pid, struct gp_place *p)
{
	char path[64], text[16384];
	ssize_t n;

	if (!p)
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	n = read_text(path, text, sizeof(text));
	if (n < 0)
		return (int)n;
	p->ns_pid = ns_pid_of(pid);
	if (gp_place_from_cgroup(text, p))
		gp_places_names(ps, p);
	return 0;
}
