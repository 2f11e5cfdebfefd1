/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * test_python.c — src/stacks/python_*.c against live interpreters: Debian's
 * /usr/bin/python3.11 (the interpreter in the executable), the same copied
 * into a virtualenv, and pyenv's 3.10.13, 3.11.7, 3.12.1 and 3.13.0
 * (libpython3.X.so); a version whose interpreter is absent is skipped.
 * Each runs tests/unit/py_frames.py, whose threads block in read after
 * printing their frames as Python sees them (code object address,
 * f_lasti, traceback.extract_stack()'s file/name/line). Then, from here:
 * the probe must accept the process; the walk the BPF program does, from
 * each thread's fsbase (read by ptrace while the thread is stopped in that
 * read), must find exactly those frames and instructions, and the resolver
 * must name them exactly; every code unit of 160 code objects' line tables
 * must decode to the line co_lines() gives; a freed code object's address
 * reused by another must resolve to the new one. Also: refusals (3.9, not
 * initialized, not Python), and that each thread's outermost frame carries
 * the entry flag (the model's merge relies on the flags).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "stacks/python.h"
#include "gpuprobed/events.h"

#define PYENV "/root/.pyenv/versions/"

/* ---- a child interpreter ------------------------------------------------------------------- */

struct child {
	pid_t pid;
	int to, from; /* its stdin, its stdout */
	char *buf;
	size_t len, cap;
};

static const char *script_path(void)
{
	static char path[PATH_MAX + 64];
	char exe[PATH_MAX];
	ssize_t n;

	/* make unit runs from the repository root; else from build/unit/: ../../tests/unit */
	if (!access("tests/unit/py_frames.py", R_OK))
		return "tests/unit/py_frames.py";
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	*strrchr(exe, '/') = '\0';
	snprintf(path, sizeof(path), "%s/../../tests/unit/py_frames.py", exe);
	return path;
}

static void child_start(struct child *c, char *const argv[], const char *preload)
{
	int in[2], out[2];

	memset(c, 0, sizeof(*c));
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (!c->pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		if (preload)
			setenv("LD_PRELOAD", preload, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->to = in[1];
	c->from = out[0];
}

static void child_send(struct child *c, const char *line)
{
	assert_int_equal(write(c->to, line, strlen(line)), (ssize_t)strlen(line));
}

/* The next JSON line of the child. The timeout only guards against a hang: output comes at once. */
static json_t *child_json(struct child *c)
{
	for (;;) {
		char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;
		struct pollfd pfd = { .fd = c->from, .events = POLLIN };
		ssize_t n;

		if (nl) {
			json_error_t jerr;
			json_t *j;

			*nl = '\0';
			j = json_loads(c->buf, 0, &jerr);
			if (!j)
				fail_msg("child %d printed no JSON: %.200s (%s)", (int)c->pid,
					 c->buf, jerr.text);
			c->len -= (size_t)(nl + 1 - c->buf);
			memmove(c->buf, nl + 1, c->len);
			return j;
		}
		if (c->cap - c->len < 65536) {
			c->cap = c->cap ? 2 * c->cap : 1 << 20;
			c->buf = realloc(c->buf, c->cap);
			assert_non_null(c->buf);
		}
		if (poll(&pfd, 1, 120000) != 1)
			fail_msg("child %d printed nothing for 120 s", (int)c->pid);
		n = read(c->from, c->buf + c->len, c->cap - c->len);
		if (n <= 0)
			fail_msg("child %d ended its output (it exited?)", (int)c->pid);
		c->len += (size_t)n;
	}
}

static void child_end(struct child *c)
{
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
	}
	close(c->to);
	close(c->from);
	free(c->buf);
	c->pid = 0;
}

static const char *jstr(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	if (!json_is_string(v))
		fail_msg("no string %s", k);
	return json_string_value(v);
}

static long long jint(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	if (!json_is_integer(v))
		fail_msg("no integer %s", k);
	return json_integer_value(v);
}

/* ---- a thread stopped where it waits ------------------------------------------------------ */

/* The syscall tid is blocked in, from /proc: its number and first argument; -1 when running. */
static long task_syscall(pid_t pid, pid_t tid, unsigned long long *arg0)
{
	char path[64], line[256];
	long nr = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f) || sscanf(line, "%ld %llx", &nr, arg0) != 2)
		nr = -1;
	fclose(f);
	return nr;
}

/*
 * Waits for thread tid to block in read(fd), stops it there (ptrace) and
 * returns its fsbase, which is what the BPF program reads from the task.
 * The thread stays stopped (its frames cannot move) until thread_resume.
 */
static __u64 thread_stop_in_read(pid_t pid, pid_t tid, int fd)
{
	for (int i = 0; i < 12000; i++) { /* a hang guard: the thread is about to block */
		struct user_regs_struct regs;
		unsigned long long arg0 = 0;
		int st;

		if (task_syscall(pid, tid, &arg0) != SYS_read || arg0 != (unsigned long long)fd) {
			usleep(10000);
			continue;
		}
		assert_int_equal(ptrace(PTRACE_SEIZE, tid, 0, 0), 0);
		assert_int_equal(ptrace(PTRACE_INTERRUPT, tid, 0, 0), 0);
		assert_int_equal(waitpid(tid, &st, __WALL), tid);
		assert_int_equal(ptrace(PTRACE_GETREGS, tid, 0, &regs), 0);
		if (regs.orig_rax == SYS_read && regs.rdi == (unsigned long long)fd)
			return regs.fs_base;
		ptrace(PTRACE_DETACH, tid, 0, 0);
	}
	fail_msg("thread %d never blocked in read(%d)", (int)tid, fd);
	return 0;
}

static void thread_resume(pid_t tid)
{
	assert_int_equal(ptrace(PTRACE_DETACH, tid, 0, 0), 0);
}

/* ---- checks on one interpreter ------------------------------------------------------------- */

static void check_thread(struct gp_python *py, pid_t pid, unsigned minor,
			 const struct gp_py_proc *proc, json_t *rec)
{
	json_t *frames = json_object_get(rec, "frames");
	pid_t tid = (pid_t)jint(rec, "tid");
	int fd = (int)jint(rec, "fd"), n, status, err;
	__u64 fs, words[2 * GP_PY_MAX_FRAMES];
	size_t i;

	fs = thread_stop_in_read(pid, tid, fd);
	/* threading.get_ident() is pthread_self(): glibc's thread pointer, the fsbase */
	assert_int_equal(fs, (__u64)jint(rec, "ident"));
	n = gp_python_walk(pid, proc, fs, words, GP_PY_MAX_FRAMES, &status, &err);
	thread_resume(tid);
	if (status != GP_PY_OK)
		fail_msg("thread %s: walk status %d err %d after %d frames", jstr(rec, "tag"),
			 status, err, n);
	assert_int_equal(n, json_array_size(frames));
	for (i = 0; i < (size_t)n; i++) {
		json_t *f = json_array_get(frames, i), *entry = json_object_get(f, "entry");
		long long lasti = jint(f, "lasti");
		struct gp_py_sym sym;
		char label[512], want[512];
		const char *base;
		__u32 flags = GP_PYF_FLAGS(words[2 * i + 1]);

		assert_int_equal(words[2 * i], (__u64)jint(f, "code"));
		/* 3.10 records the C field f_lasti (code units); Python shows bytes */
		assert_int_equal(GP_PYF_INSTR(words[2 * i + 1]),
				 (__u32)(minor == 10 ? lasti / 2 : lasti));
		if (json_is_boolean(entry) && json_is_true(entry) != !!(flags & GP_PYF_ENTRY))
			fail_msg("thread %s frame %zu (%s): entry flag %u, expected %d",
				 jstr(rec, "tag"), i, jstr(f, "qualname"), flags,
				 json_is_true(entry));
		assert_int_equal(gp_python_resolve(py, pid, words[2 * i], words[2 * i + 1], &sym),
				 0);
		assert_string_equal(sym.file, jstr(f, "tb_file"));
		assert_string_equal(sym.name, jstr(f, "tb_name"));
		assert_int_equal(sym.line, jint(f, "tb_line"));
		assert_string_equal(sym.qualname, jstr(f, "qualname"));
		assert_int_equal(sym.firstlineno, jint(f, "firstlineno"));
		base = strrchr(sym.file, '/');
		snprintf(want, sizeof(want), "%s (%s:%d)", sym.qualname, base ? base + 1 : sym.file,
			 sym.line);
		gp_python_label(&sym, label, sizeof(label));
		assert_string_equal(label, want);
	}
	/* the thread's first frame was entered from C (3.12+: the bottom shim precedes it) */
	assert_true(GP_PYF_FLAGS(words[2 * n - 1]) & GP_PYF_ENTRY);
}

static int hexval(char ch)
{
	return ch <= '9' ? ch - '0' : ch - 'a' + 10;
}

/* Every code unit of every table: the decoder's line is co_lines()'s. */
static void check_tables(json_t *rec, unsigned minor)
{
	json_t *codes = json_object_get(rec, "codes"), *co;
	size_t i, units = 0, bad = 0;

	assert_int_equal(jint(rec, "minor"), minor);
	assert_true(json_array_size(codes) > 100);
	json_array_foreach(codes, i, co) {
		const char *hex = jstr(co, "table");
		json_t *lines = json_object_get(co, "lines");
		size_t len = strlen(hex) / 2, u;
		int first = (int)jint(co, "first"), line;
		__u8 *t = malloc(len + 1);

		assert_non_null(t);
		for (size_t k = 0; k < len; k++)
			t[k] = (__u8)(hexval(hex[2 * k]) << 4 | hexval(hex[2 * k + 1]));
		for (u = 0; u < json_array_size(lines); u++) {
			long long want = json_integer_value(json_array_get(lines, u));
			int r = gp_py_addr2line(t, len, first, 2 * (long)u, minor, &line);

			units++;
			if ((r ? -1 : line) != want && bad++ < 5)
				print_message("3.%u: code unit %zu of code at line %d: %d, "
					      "co_lines %lld\n",
					      minor, u, first, r ? -1 : line, want);
		}
		/* a frame not started yet: its first line */
		assert_int_equal(gp_py_addr2line(t, len, first, -2, minor, &line), 0);
		assert_int_equal(line, first);
		free(t);
	}
	assert_int_equal(bad, 0);
	assert_true(units > 5000);
}

struct pycase {
	const char *python; /* the interpreter; NULL: a virtualenv copy of venv_of */
	const char *venv_of;
	unsigned minor;
	bool keys; /* with py_keys_preload.so: the thread-state key >= 32 */
};

/* build/unit/py_keys_preload.so, beside this test's executable */
static const char *preload_path(void)
{
	static char path[PATH_MAX + 64];
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	assert_true(n > 0);
	exe[n] = '\0';
	*strrchr(exe, '/') = '\0';
	snprintf(path, sizeof(path), "%s/py_keys_preload.so", exe);
	assert_int_equal(access(path, R_OK), 0);
	return path;
}

static int remove_tree(const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static void run_case(const struct pycase *k)
{
	char venv[] = "/tmp/gp_test_venv.XXXXXX", python[PATH_MAX];
	char *argv[] = { python, "-I", (char *)script_path(), NULL };
	struct gp_python *py;
	struct gp_py_probe pr;
	struct gp_py_sym sym, first_sym;
	struct child c;
	json_t *rec, *threads[3];
	__u64 first_code, reuse_code, not_code = 0;
	int err, nthreads = 0;
	bool ready = false;
	pid_t pid;

	if (k->python) {
		snprintf(python, sizeof(python), "%s", k->python);
	} else {
		/* a virtualenv with copies: the interpreter, an executable named "python" */
		char cmd[PATH_MAX + 128];

		if (access(k->venv_of, X_OK)) {
			print_message("skipped: %s is not installed (no virtualenv made of it)\n",
				      k->venv_of);
			skip();
		}
		assert_non_null(mkdtemp(venv));
		snprintf(cmd, sizeof(cmd), "%s -m venv --copies --without-pip '%s/v'", k->venv_of,
			 venv);
		if (system(cmd)) {
			remove_tree(venv);
			fail_msg("%s failed", cmd);
		}
		snprintf(python, sizeof(python), "%s/v/bin/python", venv);
	}
	if (access(python, X_OK)) {
		print_message("skipped: %s is not installed\n", python);
		skip();
	}
	py = gp_python_new();
	assert_non_null(py);
	child_start(&c, argv, k->keys ? preload_path() : NULL);
	/* the workers print when they get there: before or after the main thread's "ready" */
	while (nthreads < 3 || !ready) {
		rec = child_json(&c);
		if (!strcmp(jstr(rec, "kind"), "thread")) {
			assert_true(nthreads < 3);
			threads[nthreads++] = rec;
			continue;
		}
		if (!strcmp(jstr(rec, "kind"), "tables")) {
			check_tables(rec, k->minor);
		} else if (!strcmp(jstr(rec, "kind"), "ready")) {
			not_code = (__u64)jint(rec, "not_code");
			ready = true;
		}
		json_decref(rec);
	}
	assert_int_equal(nthreads, 3);

	err = gp_python_probe(py, c.pid, &pr);
	print_message("%s: %s\n", python, pr.line);
	assert_int_equal(err, 0);
	assert_int_equal(pr.proc.version, 0x0300 | k->minor);
	assert_int_equal(pr.hexversion >> 16, 0x0300 | k->minor);
	if (k->keys)
		assert_true(pr.tss_key >= 32);
	else
		assert_true(pr.tss_key < 32);
	for (int i = 0; i < nthreads; i++) {
		check_thread(py, c.pid, k->minor, &pr.proc, threads[i]);
		json_decref(threads[i]);
	}
	assert_int_equal(gp_python_resolve(py, c.pid, not_code, 0, &sym), -EINVAL);
	assert_int_equal(gp_python_resolve(py, c.pid, 16, 0, &sym), -EFAULT);

	/* a freed code object's address, reused by another: read again, not the cached names */
	child_send(&c, "reuse1\n");
	rec = child_json(&c);
	assert_string_equal(jstr(rec, "kind"), "reuse1");
	first_code = (__u64)jint(rec, "code");
	assert_int_equal(gp_python_resolve(py, c.pid, first_code, 0, &first_sym), 0);
	assert_string_equal(first_sym.qualname, jstr(rec, "qualname"));
	assert_string_equal(first_sym.name, "reuse_first");
	assert_int_equal(first_sym.line, jint(rec, "line"));
	json_decref(rec);
	child_send(&c, "reuse2\n");
	rec = child_json(&c);
	assert_string_equal(jstr(rec, "kind"), "reuse2");
	reuse_code = (__u64)jint(rec, "code");
	assert_int_equal(reuse_code, first_code);
	assert_int_equal(gp_python_resolve(py, c.pid, reuse_code, 0, &sym), 0);
	assert_string_equal(sym.qualname, jstr(rec, "qualname"));
	assert_string_equal(sym.name, "reuse_second");
	assert_string_equal(sym.file, jstr(rec, "file"));
	assert_int_equal(sym.line, jint(rec, "line"));
	assert_string_equal(first_sym.name,
			    "reuse_first"); /* what was handed out before stays valid */
	json_decref(rec);

	/* gone: what was cached still resolves; forgotten: nothing */
	pid = c.pid;
	child_end(&c);
	assert_int_equal(gp_python_resolve(py, pid, reuse_code, 0, &sym), 0);
	assert_string_equal(sym.name, "reuse_second");
	gp_python_forget(py, pid);
	assert_int_equal(gp_python_resolve(py, pid, reuse_code, 0, &sym), -ESRCH);
	gp_python_free(py);
	if (!k->python)
		remove_tree(venv);
}

/* ---- refusals ------------------------------------------------------------------------------ */

static void not_python(void **state)
{
	struct gp_python *py = gp_python_new();
	struct gp_py_probe pr;

	assert_int_equal(gp_python_probe(py, getpid(), &pr), -ENOENT);
	assert_non_null(strstr(pr.line, "no CPython"));
	gp_python_free(py);
}

static void python39_refused(void **state)
{
	char *argv[] = { PYENV "3.9.18/bin/python3.9", "-c",
			 "import sys; print('{}', flush=True); sys.stdin.read()", NULL };
	struct gp_python *py;
	struct gp_py_probe pr;
	struct child c;

	if (access(argv[0], X_OK)) {
		print_message("skipped: %s is not installed\n", argv[0]);
		skip();
	}
	py = gp_python_new();
	child_start(&c, argv, NULL);
	json_decref(child_json(&c));
	assert_int_equal(gp_python_probe(py, c.pid, &pr), -ENOTSUP);
	print_message("%s\n", pr.line);
	assert_non_null(strstr(pr.line, "CPython 3.9"));
	assert_non_null(strstr(pr.line, "not supported"));
	child_end(&c);
	gp_python_free(py);
}

/* libpython mapped, Py_Initialize not called yet: come back later. */
static void not_initialized(void **state)
{
	const char *lib = PYENV "3.12.1/lib/libpython3.12.so.1.0";
	struct gp_python *py;
	struct gp_py_probe pr;
	int ready[2];
	char ch;
	pid_t pid;

	if (access(lib, R_OK)) {
		print_message("skipped: %s is not installed\n", lib);
		skip();
	}
	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(ready[0]);
		if (!dlopen(lib, RTLD_NOW | RTLD_LOCAL))
			_exit(1);
		ch = 1;
		if (write(ready[1], &ch, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &ch, 1), 1);
	close(ready[0]);
	py = gp_python_new();
	assert_int_equal(gp_python_probe(py, pid, &pr), -EAGAIN);
	print_message("%s\n", pr.line);
	assert_non_null(strstr(pr.line, "not initialized"));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	gp_python_free(py);
}

/* ---- pure functions ----------------------------------------------------------------------- */

static void linetable_edges(void **state)
{
	/* 3.10: 4 bytes at +1, 254 bytes with no line, 2 bytes at +200 (split as +127, +73) */
	const __u8 t310[] = { 4, 1, 254, 0x80, 0, 127, 2, 73 };
	/* 3.11: 2 units one-line form +1 (code 11), 1 unit no location (15), 1 unit long form -3 */
	const __u8 t311[] = {
		0x80 | 11 << 3 | 1, 0, 0, 0x80 | 15 << 3, 0x80 | 14 << 3, 7, 0, 1, 1
	};
	int line;

	assert_int_equal(gp_py_addr2line(t310, sizeof(t310), 10, 0, 10, &line), 0);
	assert_int_equal(line, 11);
	assert_int_equal(gp_py_addr2line(t310, sizeof(t310), 10, 100, 10, &line), -ENOENT);
	assert_int_equal(gp_py_addr2line(t310, sizeof(t310), 10, 258, 10, &line), 0);
	assert_int_equal(line, 211);
	assert_int_equal(gp_py_addr2line(t310, sizeof(t310), 10, 260, 10, &line), -ENOENT);
	assert_int_equal(gp_py_addr2line(t310, sizeof(t310), 10, -2, 10, &line), 0);
	assert_int_equal(line, 10);

	assert_int_equal(gp_py_addr2line(t311, sizeof(t311), 10, 2, 11, &line), 0);
	assert_int_equal(line, 11);
	assert_int_equal(gp_py_addr2line(t311, sizeof(t311), 10, 4, 11, &line), -ENOENT);
	assert_int_equal(gp_py_addr2line(t311, sizeof(t311), 10, 6, 11, &line), 0);
	assert_int_equal(line, 8);
	assert_int_equal(gp_py_addr2line(t311, sizeof(t311), 10, 8, 11, &line), -ENOENT);
	/* a table cut short inside an entry does not read past its end */
	assert_int_equal(gp_py_addr2line(t311, 5, 10, 6, 11, &line), 0);
}

static void labels(void **state)
{
	struct gp_py_sym s = {
		.qualname = "Model.forward", .name = "forward", .file = "/src/train.py", .line = 13
	};
	char buf[64];

	gp_python_label(&s, buf, sizeof(buf));
	assert_string_equal(buf, "Model.forward (train.py:13)");
	s.line = 0;
	s.file = "<string>";
	gp_python_label(&s, buf, sizeof(buf));
	assert_string_equal(buf, "Model.forward (<string>)");
}

static void py311_debian(void **state)
{
	run_case(&(struct pycase){ "/usr/bin/python3.11", NULL, 11 });
}

static void py311_debian_venv_copy(void **state)
{
	run_case(&(struct pycase){ NULL, "/usr/bin/python3.11", 11 });
}

static void py310_pyenv(void **state)
{
	run_case(&(struct pycase){ PYENV "3.10.13/bin/python3.10", NULL, 10 });
}

static void py311_pyenv(void **state)
{
	run_case(&(struct pycase){ PYENV "3.11.7/bin/python3.11", NULL, 11 });
}

static void py312_pyenv(void **state)
{
	run_case(&(struct pycase){ PYENV "3.12.1/bin/python3.12", NULL, 12 });
}

static void py313_pyenv(void **state)
{
	run_case(&(struct pycase){ PYENV "3.13.0/bin/python3.13", NULL, 13 });
}

static void py310_keys_past_32(void **state)
{
	run_case(&(struct pycase){ PYENV "3.10.13/bin/python3.10", NULL, 10, true });
}

static void py311_debian_keys_past_32(void **state)
{
	run_case(&(struct pycase){ "/usr/bin/python3.11", NULL, 11, true });
}

static void py312_keys_past_32(void **state)
{
	run_case(&(struct pycase){ PYENV "3.12.1/bin/python3.12", NULL, 12, true });
}

static void py313_keys_past_32(void **state)
{
	run_case(&(struct pycase){ PYENV "3.13.0/bin/python3.13", NULL, 13, true });
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(linetable_edges),
		cmocka_unit_test(labels),
		cmocka_unit_test(not_python),
		cmocka_unit_test(python39_refused),
		cmocka_unit_test(not_initialized),
		cmocka_unit_test(py311_debian),
		cmocka_unit_test(py311_debian_venv_copy),
		cmocka_unit_test(py310_pyenv),
		cmocka_unit_test(py311_pyenv),
		cmocka_unit_test(py312_pyenv),
		cmocka_unit_test(py313_pyenv),
		cmocka_unit_test(py310_keys_past_32),
		cmocka_unit_test(py311_debian_keys_past_32),
		cmocka_unit_test(py312_keys_past_32),
		cmocka_unit_test(py313_keys_past_32),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
