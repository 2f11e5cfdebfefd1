/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_containers.c — where a process runs (src/processes/containers.c): the
 * container and pod read from /proc/PID/cgroup texts of every runtime's
 * format, in cgroup v2, v1 and hybrid texts, systemd and cgroupfs drivers;
 * conmon monitors and host processes (no container); malformed lines,
 * overlong paths, ids of the wrong length or case; names from a root of the
 * test's own (podman's containers.json, docker's config.v2.json, the
 * kubelet's pod log directories), the cache's negative results re-looked
 * once the files change; this test's own pid and a gone one; matching by
 * id, prefix and name.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "processes/containers.h"

#define ID1  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID2  "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define ID3  "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
#define UID  "3f1c2b5e-8d7a-4c1e-9b2f-0a1b2c3d4e5f"
#define UID_ "3f1c2b5e_8d7a_4c1e_9b2f_0a1b2c3d4e5f" /* as the systemd driver spells it */
#define UID2 "11111111-2222-4333-8444-555555555555"

/* A place with guard bytes after it: nothing may write past its end. */
struct guarded {
	struct gp_place p;
	unsigned char guard[64];
};

static void guard_init(struct guarded *g)
{
	memset(g, 0, sizeof(*g));
	memset(g->guard, 0xa5, sizeof(g->guard));
	strcpy(g->p.name, "kept");
	strcpy(g->p.pod_name, "kept-pod");
	strcpy(g->p.pod_namespace, "kept-ns");
}

static void guard_check(const struct guarded *g)
{
	size_t i;

	for (i = 0; i < sizeof(g->guard); i++)
		assert_int_equal(g->guard[i], 0xa5);
	assert_string_equal(g->p.name, "kept");
	assert_string_equal(g->p.pod_name, "kept-pod");
	assert_string_equal(g->p.pod_namespace, "kept-ns");
	assert_true(strlen(g->p.cgroup) < sizeof(g->p.cgroup));
	assert_true(strlen(g->p.id) < sizeof(g->p.id));
	assert_true(strlen(g->p.runtime) < sizeof(g->p.runtime));
	assert_true(strlen(g->p.pod_uid) < sizeof(g->p.pod_uid));
}

/* text parsed into a guarded place: the result, and p's fields as expected. */
static void expect_text(const char *text, const char *cgroup, const char *runtime, const char *id,
			const char *uid)
{
	struct guarded g;
	bool in;

	guard_init(&g);
	strcpy(g.p.id, "stale");
	in = gp_place_from_cgroup(text, &g.p);
	guard_check(&g);
	assert_int_equal(in, id[0] || uid[0]);
	assert_string_equal(g.p.cgroup, cgroup);
	assert_string_equal(g.p.runtime, runtime);
	assert_string_equal(g.p.id, id);
	assert_string_equal(g.p.pod_uid, uid);
}

/* path as cgroup v2, v1 (name=systemd and other controllers) and hybrid texts. */
static void expect_path(const char *path, const char *runtime, const char *id, const char *uid)
{
	char text[4096];

	snprintf(text, sizeof(text), "0::%s\n", path);
	expect_text(text, path, runtime, id, uid);
	snprintf(text, sizeof(text),
		 "12:memory:%s\n11:cpuset:/\n4:cpu,cpuacct:%s\n1:name=systemd:%s\n", path, path,
		 path);
	expect_text(text, path, runtime, id, uid);
	snprintf(text, sizeof(text), "12:memory:%s\n5:pids:%s\n1:name=systemd:%s\n0::/\n", path,
		 path, path);
	expect_text(text, path, runtime, id, uid);
}

static void podman(void **state)
{
	expect_path("/machine.slice/libpod-" ID1 ".scope", "podman", ID1, "");
	expect_path("/machine.slice/libpod-" ID1 ".scope/container", "podman", ID1, "");
	expect_path("/libpod_parent/libpod-" ID1, "podman", ID1, "");
	expect_path("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID2 ".scope",
		    "podman", ID2, "");
	/* the innermost container wins: podman inside a docker container */
	expect_path("/system.slice/docker-" ID1 ".scope/machine.slice/libpod-" ID2
		    ".scope/container",
		    "podman", ID2, "");
}

static void docker(void **state)
{
	expect_path("/system.slice/docker-" ID1 ".scope", "docker", ID1, "");
	expect_path("/docker/" ID2, "docker", ID2, "");
	expect_path("/docker/" ID2 "/", "docker", ID2, "");
	/* a bare id counts only under docker (or kubepods) */
	expect_path("/other/" ID2, "", "", "");
}

static void containerd_and_crio(void **state)
{
	expect_path("/system.slice/cri-containerd-" ID1 ".scope", "containerd", ID1, "");
	expect_path("/system.slice/nerdctl-" ID2 ".scope", "containerd", ID2, "");
	expect_path("/machine.slice/crio-" ID3 ".scope", "cri-o", ID3, "");
}

static void conmon_is_no_container(void **state)
{
	expect_path("/machine.slice/libpod-conmon-" ID1 ".scope", "", "", "");
	expect_path("/system.slice/crio-conmon-" ID1 ".scope", "", "", "");
	expect_path("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
		    ".slice/crio-conmon-" ID1 ".scope",
		    "", "", UID);
}

static void kubepods_systemd(void **state)
{
	static const char *const qos[] = {
		"/kubepods.slice/kubepods-pod" UID_ ".slice",
		"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice",
		"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice",
	};
	static const struct {
		const char *comp, *runtime;
	} ctrs[] = {
		{ "cri-containerd-" ID1 ".scope", "containerd" },
		{ "crio-" ID1 ".scope", "cri-o" },
		{ "docker-" ID1 ".scope", "docker" },
	};
	char path[512];
	size_t i, j;

	for (i = 0; i < 3; i++) {
		for (j = 0; j < 3; j++) {
			snprintf(path, sizeof(path), "%s/%s", qos[i], ctrs[j].comp);
			expect_path(path, ctrs[j].runtime, ID1, UID);
		}
		/* the pod's own slice: a pod, no container */
		expect_path(qos[i], "", "", UID);
	}
	/* the QoS slices themselves are no pod */
	expect_path("/kubepods.slice/kubepods-besteffort.slice", "", "", "");
}

static void kubepods_cgroupfs(void **state)
{
	static const char *const qos[] = {
		"/kubepods/pod" UID,
		"/kubepods/burstable/pod" UID,
		"/kubepods/besteffort/pod" UID,
	};
	static const struct {
		const char *comp, *runtime;
	} ctrs[] = {
		{ ID2, "kubernetes" },
		{ "crio-" ID2, "cri-o" },
		{ "cri-containerd-" ID2, "containerd" },
		{ "docker-" ID2, "docker" },
	};
	char path[512];
	size_t i, j;

	for (i = 0; i < 3; i++) {
		for (j = 0; j < 4; j++) {
			snprintf(path, sizeof(path), "%s/%s", qos[i], ctrs[j].comp);
			expect_path(path, ctrs[j].runtime, ID2, UID);
		}
	}
	/* pods count only under kubepods; nothing above the pod is its container */
	expect_path("/pod" UID "/" ID2, "", "", "");
	expect_path("/docker/" ID1 "/kubepods/besteffort/pod" UID, "", "", UID);
	expect_path("/docker/" ID1 "/kubepods/besteffort/pod" UID "/" ID2, "kubernetes", ID2, UID);
}

static void host_process(void **state)
{
	expect_path("/user.slice/user-0.slice/session-1.scope", "", "", "");
	expect_text("0::/\n", "/", "", "", "");
	/* v1 with name=systemd at the root: the first other line with a path */
	expect_text("9:name=systemd:/\n4:memory:/process_api/2f6500dce02cda29484e1236667fef43\n"
		    "3:cpuset:/\n0::/\n",
		    "/process_api/2f6500dce02cda29484e1236667fef43", "", "", "");
	/* v2 wins over v1 lines */
	expect_text("1:name=systemd:/system.slice/docker-" ID2
		    ".scope\n0::/machine.slice/libpod-" ID1 ".scope\n",
		    "/machine.slice/libpod-" ID1 ".scope", "podman", ID1, "");
	/* a container's cgroup in one v1 hierarchy only, another line elsewhere: the one naming it */
	expect_text("9:name=systemd:/\n8:pids:/kubepods/besteffort/pod" UID "/" ID1
		    "\n4:memory:/process_api/2f6500dce02cda29484e1236667fef43\n0::/\n",
		    "/kubepods/besteffort/pod" UID "/" ID1, "kubernetes", ID1, UID);
}

static void malformed(void **state)
{
	static const char *const texts[] = {
		"",
		"garbage",
		"0:",
		"::",
		":::",
		"0::",
		"0::relative/path",
		"x::/docker/" ID1 "\n",
		":name=systemd:/docker/" ID1 "\n",
		"\n\n\n",
	};
	struct guarded g;
	size_t i;

	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		expect_text(texts[i], "", "", "", "");
	guard_init(&g);
	assert_false(gp_place_from_cgroup(NULL, &g.p));
	guard_check(&g);
	assert_false(gp_place_from_cgroup("0::/docker/" ID1, NULL));
	/* malformed lines around a good one; no final newline */
	expect_text("junk\n1:name=systemd\n\n0::/docker/" ID1, "/docker/" ID1, "docker", ID1, "");
	/* a path with ':' in it keeps them */
	expect_text("0::/a:b/docker-" ID1 ".scope\n", "/a:b/docker-" ID1 ".scope", "docker", ID1,
		    "");
}

static void wrong_ids(void **state)
{
	const char *id63 = ID1 + 1;
	char path[256];

	snprintf(path, sizeof(path), "/system.slice/docker-%s.scope", id63);
	expect_path(path, "", "", "");
	snprintf(path, sizeof(path), "/system.slice/docker-%sa.scope", ID1);
	expect_path(path, "", "", "");
	expect_path("/docker/" ID1 "0", "", "", "");
	expect_path(
		"/machine.slice/libpod-0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789a"
		"bcdef.scope",
		"", "", "");
	expect_path(
		"/machine.slice/libpod-g123456789abcdef0123456789abcdef0123456789abcdef0123456789a"
		"bcdef.scope",
		"", "", "");
	expect_path("/machine.slice/libpod-.scope", "", "", "");
	expect_path("/machine.slice/libpod-" ID1 ".scopex", "", "", "");
	/* pod uids: wrong separators, case, length */
	expect_path("/kubepods/pod3f1c2b5e8-d7a-4c1e-9b2f-0a1b2c3d4e5f/" ID2, "kubernetes", ID2,
		    "");
	expect_path("/kubepods/pod3F1C2B5E-8D7A-4C1E-9B2F-0A1B2C3D4E5F/" ID2, "kubernetes", ID2,
		    "");
	expect_path("/kubepods/pod" UID "0/" ID2, "kubernetes", ID2, "");
}

static void overlong(void **state)
{
	size_t n = 3000, i;
	char *text = malloc(n + 200), *path;
	struct guarded g;

	assert_non_null(text);
	strcpy(text, "0::");
	path = text + 3;
	for (i = 0; i < n; i += 10)
		memcpy(path + i, "/aaaaaaaaa", 10);
	strcpy(path + n, "/docker-" ID1 ".scope\n");
	guard_init(&g);
	/* the id is read from the whole path; the copy is cut */
	assert_true(gp_place_from_cgroup(text, &g.p));
	guard_check(&g);
	assert_string_equal(g.p.id, ID1);
	assert_int_equal(strlen(g.p.cgroup), sizeof(g.p.cgroup) - 1);
	assert_memory_equal(g.p.cgroup, path, sizeof(g.p.cgroup) - 1);
	/* one overlong component of hex */
	for (i = 0; i < n; i++)
		path[i + 1] = 'a';
	path[0] = '/';
	path[n + 1] = '\0';
	guard_init(&g);
	assert_false(gp_place_from_cgroup(text, &g.p));
	guard_check(&g);
	free(text);
}

static char root[] = "/tmp/gp_test_containers_XXXXXX";

static void mkdirs(const char *rel)
{
	char path[1024], *s;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (s = path + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
		*s = '/';
	}
	assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
}

/* Writes rel under root whole, by rename as the runtimes do. */
static void write_rel(const char *rel, const char *text)
{
	char path[1024], tmp[1100];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(rename(tmp, path), 0);
}

#define PODMAN_DIR  "var/lib/containers/storage/overlay-containers"
#define PODMAN_JSON PODMAN_DIR "/containers.json"

static int setup_root(void **state)
{
	strcpy(root, "/tmp/gp_test_containers_XXXXXX");
	assert_non_null(mkdtemp(root));
	mkdirs(PODMAN_DIR);
	write_rel(PODMAN_JSON,
		  "[{\"id\":\"" ID1 "\",\"names\":[\"web\",\"alias\"],\"image\":\"x\"},"
		  "{\"id\":\"" ID2 "\",\"names\":[\"db\"]}]");
	mkdirs("var/lib/docker/containers/" ID3);
	write_rel("var/lib/docker/containers/" ID3 "/config.v2.json",
		  "{\"ID\":\"" ID3 "\",\"Name\":\"/web-1\",\"State\":{}}");
	mkdirs("var/log/pods/ml_trainer-0_" UID "/trainer");
	mkdirs("var/log/pods/default_two-5f7c_" UID2 "/app");
	mkdirs("var/log/pods/default_two-5f7c_" UID2 "/sidecar");
	return 0;
}

static int teardown_root(void **state)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
	return 0;
}

/* The place of a cgroup path, named from root. */
static void named(struct gp_places *ps, const char *path, struct gp_place *p)
{
	char text[1024];

	memset(p, 0, sizeof(*p));
	snprintf(text, sizeof(text), "0::%s\n", path);
	assert_true(gp_place_from_cgroup(text, p));
	gp_places_names(ps, p);
}

static void names(void **state)
{
	struct gp_places *ps = gp_places_new(root);
	struct gp_place p;

	assert_non_null(ps);
	named(ps, "/machine.slice/libpod-" ID1 ".scope/container", &p);
	assert_string_equal(p.name, "web");
	named(ps, "/machine.slice/libpod-" ID2 ".scope", &p);
	assert_string_equal(p.name, "db");
	named(ps, "/machine.slice/libpod-" ID3 ".scope", &p);
	assert_string_equal(p.name, "");
	named(ps, "/system.slice/docker-" ID3 ".scope", &p);
	assert_string_equal(p.runtime, "docker");
	assert_string_equal(p.name, "web-1");
	named(ps, "/docker/" ID1, &p);
	assert_string_equal(p.name, "");
	/* a pod of one container: its name */
	named(ps, "/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID2 ".scope", &p);
	assert_string_equal(p.pod_name, "trainer-0");
	assert_string_equal(p.pod_namespace, "ml");
	assert_string_equal(p.name, "trainer");
	/* several: which one is not known here */
	named(ps, "/kubepods/besteffort/pod" UID2 "/" ID3, &p);
	assert_string_equal(p.runtime, "kubernetes");
	assert_string_equal(p.pod_name, "two-5f7c");
	assert_string_equal(p.pod_namespace, "default");
	assert_string_equal(p.name, "");
	/* docker's own name stays */
	named(ps, "/kubepods/pod" UID "/docker-" ID3, &p);
	assert_string_equal(p.name, "web-1");
	assert_string_equal(p.pod_name, "trainer-0");
	/* a pod with no directory */
	named(ps, "/kubepods/pod22222222-2222-4333-8444-555555555555/" ID3, &p);
	assert_string_equal(p.pod_uid, "22222222-2222-4333-8444-555555555555");
	assert_string_equal(p.pod_name, "");
	assert_string_equal(p.name, "");
	gp_places_free(ps);
	gp_places_free(NULL);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void cache(void **state)
{
	struct gp_places *ps = gp_places_new(root);
	struct gp_place p;
	double t0 = now_s();

	assert_non_null(ps);
	named(ps, "/machine.slice/libpod-" ID3 ".scope", &p);
	assert_string_equal(p.name, "");
	write_rel(PODMAN_JSON, "[{\"id\":\"" ID1 "\",\"names\":[\"web\"]},"
			       "{\"id\":\"" ID2 "\",\"names\":[\"db\"]},"
			       "{\"id\":\"" ID3 "\",\"names\":[\"late\"]}]");
	/* a negative result is kept for a second (asserted only when this ran fast) */
	named(ps, "/machine.slice/libpod-" ID3 ".scope", &p);
	if (now_s() - t0 < 0.5)
		assert_string_equal(p.name, "");
	/* a positive one meanwhile is still read from the changed file */
	named(ps, "/machine.slice/libpod-" ID2 ".scope", &p);
	assert_string_equal(p.name, "db");
	usleep(1100 * 1000);
	named(ps, "/machine.slice/libpod-" ID3 ".scope", &p);
	assert_string_equal(p.name, "late");
	/* found names are kept even when the file loses them */
	write_rel(PODMAN_JSON, "[]");
	named(ps, "/machine.slice/libpod-" ID3 ".scope", &p);
	assert_string_equal(p.name, "late");
	/* a pod's second container (its directory's mtime changes): no one name any more */
	named(ps, "/kubepods/pod" UID "/" ID1, &p);
	assert_string_equal(p.name, "trainer");
	mkdirs("var/log/pods/ml_trainer-0_" UID "/init");
	named(ps, "/kubepods/pod" UID "/" ID1, &p);
	assert_string_equal(p.pod_name, "trainer-0");
	assert_string_equal(p.name, "");
	gp_places_free(ps);
}

static void root_forms(void **state)
{
	struct gp_places *ps;
	char slashed[64];
	struct gp_place p;

	snprintf(slashed, sizeof(slashed), "%s//", root);
	ps = gp_places_new(slashed);
	assert_non_null(ps);
	named(ps, "/docker/" ID3, &p);
	assert_string_equal(p.name, "web-1");
	gp_places_free(ps);
	/* the host's own root: nothing there for these ids, and nothing breaks */
	ps = gp_places_new(NULL);
	assert_non_null(ps);
	named(ps, "/docker/" ID3, &p);
	gp_places_free(ps);
	ps = gp_places_new("");
	assert_non_null(ps);
	gp_places_free(ps);
}

/* The last NSpid field of /proc/self/status, read here independently. */
static pid_t own_ns_pid(void)
{
	char line[512];
	pid_t last = getpid();
	FILE *f = fopen("/proc/self/status", "r");
	char *s, *end;
	long v;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "NSpid:", 6) != 0)
			continue;
		for (s = line + 6; (v = strtol(s, &end, 10)), end != s; s = end)
			last = (pid_t)v;
	}
	fclose(f);
	return last;
}

static void own_pid(void **state)
{
	struct gp_places *ps = gp_places_new(root);
	char text[16384];
	struct gp_place p, q;
	FILE *f;
	size_t n;

	assert_non_null(ps);
	memset(&p, 0x5a, sizeof(p));
	assert_int_equal(gp_places_of_pid(ps, getpid(), &p), 0);
	assert_true(p.ns_pid > 0);
	assert_int_equal(p.ns_pid, own_ns_pid());
	assert_true(p.cgroup[0] == '/');
	/* the same as parsing the text read here (on a host: no container at all) */
	f = fopen("/proc/self/cgroup", "r");
	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	memset(&q, 0, sizeof(q));
	gp_place_from_cgroup(text, &q);
	assert_string_equal(p.cgroup, q.cgroup);
	assert_string_equal(p.id, q.id);
	assert_string_equal(p.runtime, q.runtime);
	assert_string_equal(p.pod_uid, q.pod_uid);
	gp_places_free(ps);
}

static void gone_pid(void **state)
{
	struct gp_places *ps = gp_places_new(root);
	struct gp_place p;
	pid_t child = fork();
	int rc;

	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	assert_int_equal(waitpid(child, NULL, 0), child);
	rc = gp_places_of_pid(ps, child, &p);
	assert_true(rc == -ENOENT || rc == -ESRCH);
	assert_string_equal(p.id, "");
	assert_int_equal(gp_places_of_pid(ps, -1, &p), -ENOENT);
	gp_places_free(ps);
}

static void matches(void **state)
{
	struct gp_place p;

	memset(&p, 0, sizeof(p));
	assert_false(gp_place_matches(&p, ID1));
	assert_false(gp_place_matches(&p, ""));
	strcpy(p.id, ID1);
	strcpy(p.name, "web");
	assert_true(gp_place_matches(&p, ID1));
	assert_true(gp_place_matches(&p, "0123456789ab"));
	assert_true(gp_place_matches(&p, "0123456789abcdef0123"));
	assert_false(gp_place_matches(&p, "0123456789a"));
	assert_false(gp_place_matches(&p, "0123456789AB"));
	assert_false(gp_place_matches(&p, "0123456789abx"));
	assert_false(gp_place_matches(&p, "123456789abc"));
	assert_false(gp_place_matches(&p, ID1 "0"));
	assert_true(gp_place_matches(&p, "web"));
	assert_false(gp_place_matches(&p, "we"));
	assert_false(gp_place_matches(&p, ""));
	assert_false(gp_place_matches(&p, NULL));
	assert_false(gp_place_matches(NULL, "web"));
	p.id[0] = '\0';
	assert_false(gp_place_matches(&p, "0123456789ab"));
	assert_true(gp_place_matches(&p, "web"));
	/* a name of hex digits is still a name */
	strcpy(p.name, "0123456789a");
	assert_true(gp_place_matches(&p, "0123456789a"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(podman),
		cmocka_unit_test(docker),
		cmocka_unit_test(containerd_and_crio),
		cmocka_unit_test(conmon_is_no_container),
		cmocka_unit_test(kubepods_systemd),
		cmocka_unit_test(kubepods_cgroupfs),
		cmocka_unit_test(host_process),
		cmocka_unit_test(malformed),
		cmocka_unit_test(wrong_ids),
		cmocka_unit_test(overlong),
		cmocka_unit_test_setup_teardown(names, setup_root, teardown_root),
		cmocka_unit_test_setup_teardown(cache, setup_root, teardown_root),
		cmocka_unit_test_setup_teardown(root_forms, setup_root, teardown_root),
		cmocka_unit_test_setup_teardown(own_pid, setup_root, teardown_root),
		cmocka_unit_test_setup_teardown(gone_pid, setup_root, teardown_root),
		cmocka_unit_test(matches),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
