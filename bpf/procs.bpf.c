// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * procs.bpf.c — which processes are traced, decided in the kernel at the
 * moment it matters, so that no process can make a CUDA call before its
 * probes are in place:
 *
 *  - exec (sched_process_exec): a process that execs one of the session's
 *    names is admitted (tgid_bits); an admitted process that execs, or with
 *    --all any process, whose executable userspace has not looked at yet
 *    (it may carry the CUDA runtime linked statically) is held;
 *  - mmap (syscalls/sys_enter_mmap): an admitted process (with --all: any)
 *    that maps, executable, a file named like a CUDA library (libcudart.so*, libcuda.so*,
 *    libnccl.so*) not looked at yet is held; with --all, mapping an armed
 *    file admits the process. With GP_SCOPE_CODE_MAPS an admitted process
 *    mapping any file's code is reported (never held for it): its unwind
 *    tables are published again (a dlopen'ed library), and until they are
 *    its stacks are not walked by the old ones (uw_procs' gen zeroed). Its
 *    return (syscalls/sys_exit_mmap) zeroes gen again and is reported too:
 *    only then is the mapping in /proc/PID/maps for certain, so a publish
 *    made in between (on a busy machine the mmap may take long) is undone.
 *
 * Holding is SIGSTOP sent to the current process (it stops when it returns
 * to user mode, after the syscall, before running another instruction) and
 * a record that wakes userspace at once; userspace places the probes on the
 * file, marks it in lib_files, and sends SIGCONT. Files already in
 * lib_files never hold anyone: probes are per file, shared by every process.
 * Forks are admitted in sched.bpf.c (they share the parent's libraries).
 *
 * Only tracepoints: this kernel family may refuse fentry/LSM programs.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define NAME_BUF     64
#define GP_PROT_EXEC 0x4 /* uapi mman-common.h (a macro: not in BTF) */

/* Per-CPU scratch: file names do not fit the 512-byte BPF stack comfortably. */
struct name_buf {
	char base[NAME_BUF];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct name_buf);
} scratch SEC(".maps");

static __always_inline struct gp_file_key file_key(struct file *f)
{
	struct gp_file_key k = {};
	struct inode *inode = BPF_CORE_READ(f, f_inode);

	k.dev = BPF_CORE_READ(inode, i_sb, s_dev);
	k.ino = BPF_CORE_READ(inode, i_ino);
	return k;
}

/* The file's own name (last path component), into buf; false if unreadable. */
static __always_inline bool file_name(struct file *f, char *buf)
{
	const unsigned char *name = BPF_CORE_READ(f, f_path.dentry, d_name.name);

	return bpf_probe_read_kernel_str(buf, NAME_BUF, name) > 0;
}

/* a == b for NUL-ended strings within n bytes */
static __always_inline bool str_eq(const char *a, const char *b, int n)
{
	for (int i = 0; i < n; i++) {
		if (a[i] != b[i])
			return false;
		if (!a[i])
			return true;
	}
	return true;
}

/* name is "comm" as the kernel truncates it: the first 15 characters match */
static __always_inline bool comm_eq(const char *comm, const char *name)
{
	for (int i = 0; i < 15; i++) {
		if (comm[i] != name[i])
			return false;
		if (!comm[i])
			return true;
	}
	return true;
}

static __always_inline bool name_wanted(const struct gp_scope *sc, const char *comm,
					const char *exe_name)
{
	for (int i = 0; i < GP_MAX_NAMES; i++) {
		if (i >= sc->nnames)
			break;
		if (comm_eq(comm, sc->names[i]) || str_eq(exe_name, sc->names[i], NAME_BUF))
			return true;
	}
	return false;
}

/* starts with prefix and then ends or goes on with '.' ("libcuda.so", "libcuda.so.1") */
static __always_inline bool has_lib_prefix(const char *s, const char *prefix, int len)
{
	for (int i = 0; i < len; i++)
		if (s[i] != prefix[i])
			return false;
	return s[len] == '\0' || s[len] == '.';
}

static __always_inline bool cuda_lib_name(const char *s)
{
	return has_lib_prefix(s, "libcudart.so", 12) || has_lib_prefix(s, "libcuda.so", 10) ||
	       has_lib_prefix(s, "libnccl.so", 10);
}

static __always_inline __u32 file_state(const struct gp_file_key *k)
{
	__u32 *st = bpf_map_lookup_elem(&lib_files, k);

	return st ? *st : 0;
}

/*
 * The account of a process admitted at exec: one thread (exec killed the
 * others), on the CPU now, its counters from now on.
 */
static __always_inline void open_exec_account(struct task_struct *p, __u64 now)
{
	struct gp_thread_key key = key_of(p);
	struct gp_thread_acct init = {};

	init.tgid = p->tgid;
	init.flags = GP_TAF_STARTED | GP_TAF_COUNTERS_SEEN | GP_TAF_ON_CPU | GP_TAF_FAULT_BASE |
		     GP_TAF_FLT_IN;
	init.start_ns = now;
	init.in_ns = now;
	init.nvcsw = p->nvcsw;
	init.nivcsw = p->nivcsw;
	init.min_flt_base = p->min_flt;
	init.maj_flt_base = p->maj_flt;
	init.min_flt_in = p->min_flt; /* its first on-CPU slice (--timeline-sched) starts here */
	init.maj_flt_in = p->maj_flt;
	bpf_probe_read_kernel_str(init.comm, sizeof(init.comm), p->comm);
	if (bpf_map_update_elem(&thread_acct, &key, &init, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&thread_acct, &key))
		count(&drops, GP_DROP_THREAD_TABLE_FULL);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(gp_proc_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct gp_scope *sc = session_scope();
	__u32 tgid = p->tgid, zero = 0, state, flags = 0;
	struct gp_file_key key;
	struct name_buf *nb;
	bool was, now_in = false;
	__u64 now;

	if (!sc || tgid == sc->self_tgid)
		return 0;
	was = traced(tgid);
	if (!was && !(sc->flags & (GP_SCOPE_NAMES | GP_SCOPE_ALL)))
		return 0;
	now = bpf_ktime_get_ns();
	key = file_key(bprm->file);
	state = file_state(&key);
	if (!was && (sc->flags & GP_SCOPE_NAMES)) {
		nb = bpf_map_lookup_elem(&scratch, &zero);
		if (nb && file_name(bprm->file, nb->base) && name_wanted(sc, p->comm, nb->base))
			now_in = admit(tgid, now);
	}
	if (!was && !now_in) {
		if (!(sc->flags & GP_SCOPE_ALL) || state == GP_FILE_PLAIN)
			return 0;
		if (state == GP_FILE_ARMED && (sc->flags & GP_SCOPE_ASK))
			flags |= GP_PF_HELD;	 /* the CUDA runtime is in it: userspace decides */
		else if (state == GP_FILE_ARMED) /* the CUDA runtime is in this executable */
			now_in = admit(tgid, now);
	}
	if (now_in) {
		open_exec_account(p, now);
		flags |= GP_PF_ADMITTED;
	}
	if (!state)
		flags |= GP_PF_HELD; /* userspace looks at the executable first */
	proc_event(p, GP_PROC_EXEC, flags, 0, key.dev, key.ino, -1, now);
	return 0;
}

/* The file behind descriptor fd of the current task, or NULL. */
static __always_inline struct file *fd_file(int fd)
{
	struct task_struct *t = current_task();
	struct files_struct *files = BPF_CORE_READ(t, files);
	struct fdtable *fdt = BPF_CORE_READ(files, fdt);
	struct file **fds = BPF_CORE_READ(fdt, fd);
	struct file *f = NULL;

	if (!fds || (unsigned int)fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	return f;
}

/* Threads of traced processes inside an mmap of code: the mmap's return is reported (by tid). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024); /* LRU: a thread killed inside its mmap never returns from it */
	__type(key, __u32);
	__type(value, __u32);
} code_mmaps SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_mmap")
int gp_proc_mmap(struct trace_event_raw_sys_enter *ctx)
{
	int fd = (int)ctx->args[4];
	__u32 tgid, zero = 0, state, flags = 0;
	struct gp_file_key key;
	struct gp_scope *sc;
	struct name_buf *nb;
	struct file *f;
	bool was;
	__u64 now;

	/*
	 * Anonymous memory is the common case: out first. Only code mappings
	 * count: a library's code cannot run before one exists, and a tool that
	 * maps the file to read it (a symbolizer, another gpuprobed) uses CUDA no more.
	 */
	if (fd < 0 || !(ctx->args[2] & GP_PROT_EXEC))
		return 0;
	tgid = bpf_get_current_pid_tgid() >> 32;
	was = traced(tgid);
	sc = session_scope();
	if (!sc || (!was && !(sc->flags & GP_SCOPE_ALL)) || tgid == sc->self_tgid)
		return 0;
	f = fd_file(fd);
	if (was && (sc->flags & GP_SCOPE_CODE_MAPS)) {
		struct gp_uw_proc *up = bpf_map_lookup_elem(&uw_procs, &tgid);

		__u32 tid = (__u32)bpf_get_current_pid_tgid();

		/* its published mappings may be wrong from now until they are published again */
		if (up)
			up->gen = 0;
		bpf_map_update_elem(&code_mmaps, &tid, &tgid, BPF_ANY);
		key = f ? file_key(f) : (struct gp_file_key){ 0 };
		proc_event(current_task(), GP_PROC_MAP, GP_PF_CODE, 0, key.dev, key.ino, fd,
			   bpf_ktime_get_ns());
	}
	nb = bpf_map_lookup_elem(&scratch, &zero);
	if (!f || !nb || !file_name(f, nb->base) || !cuda_lib_name(nb->base))
		return 0;
	key = file_key(f);
	state = file_state(&key);
	if (state == GP_FILE_PLAIN)
		return 0;
	now = bpf_ktime_get_ns();
	if (!was && state == GP_FILE_ARMED && (sc->flags & GP_SCOPE_ASK)) {
		flags |= GP_PF_HELD; /* userspace decides whether it is wanted */
	} else if (!was && state == GP_FILE_ARMED) {
		if (!admit(tgid, now))
			return 0;
		flags |= GP_PF_ADMITTED;
	}
	if (!state)
		flags |= GP_PF_HELD;
	proc_event(current_task(), GP_PROC_MAP, flags, 0, key.dev, key.ino, fd, now);
	return 0;
}

/*
 * A traced thread's mmap of code returned: the mappings published since its
 * entry may have been read before it was made; none is walked by until
 * they are published anew.
 */
SEC("tracepoint/syscalls/sys_exit_mmap")
int gp_proc_mmap_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, tgid = id >> 32;
	struct gp_uw_proc *up;

	if (!bpf_map_lookup_elem(&code_mmaps, &tid))
		return 0;
	bpf_map_delete_elem(&code_mmaps, &tid);
	up = bpf_map_lookup_elem(&uw_procs, &tgid);
	if (up)
		up->gen = 0;
	proc_event(current_task(), GP_PROC_MAP, GP_PF_CODE | GP_PF_MAPPED, 0, 0, 0, -1,
		   bpf_ktime_get_ns());
	return 0;
}
