/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * uprobe_multi.c — see uprobe_multi.h. The attribute layout below is the
 * kernel's union bpf_attr link_create member for BPF_TRACE_UPROBE_MULTI
 * (include/uapi/linux/bpf.h, Linux 6.6+), declared here because the build
 * machine's uapi headers are older than the running kernel.
 */
#include <errno.h>
#include <linux/bpf.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probes/uprobe_multi.h"

#define GP_BPF_F_UPROBE_MULTI_RETURN 1u

struct gp_link_create_uprobe_multi {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 um_flags;
	__u32 pid;
	__u32 pad;
};

_Static_assert(offsetof(struct gp_link_create_uprobe_multi, path) == 16, "link_create layout");
_Static_assert(offsetof(struct gp_link_create_uprobe_multi, pid) == 56, "link_create layout");

int gp_uprobe_multi_attach(int prog_fd, const char *path, const __u64 *offsets,
			   const __u64 *cookies, __u32 cnt, pid_t pid, bool retprobe)
{
	union {
		struct gp_link_create_uprobe_multi lc;
		char whole[sizeof(union bpf_attr) > 64 ? sizeof(union bpf_attr) : 64];
	} attr;
	long fd;

	memset(&attr, 0, sizeof(attr));
	attr.lc.prog_fd = (__u32)prog_fd;
	attr.lc.attach_type = GP_BPF_TRACE_UPROBE_MULTI;
	attr.lc.path = (__u64)(uintptr_t)path;
	attr.lc.offsets = (__u64)(uintptr_t)offsets;
	attr.lc.cookies = (__u64)(uintptr_t)cookies;
	attr.lc.cnt = cnt;
	attr.lc.um_flags = retprobe ? GP_BPF_F_UPROBE_MULTI_RETURN : 0;
	attr.lc.pid = pid > 0 ? (__u32)pid : 0;
	fd = syscall(SYS_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : (int)fd;
}

/* A program that returns 0, loaded with the uprobe_multi attach type. */
static int load_probe_prog(void)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_KPROBE;
	attr.expected_attach_type = GP_BPF_TRACE_UPROBE_MULTI;
	attr.insns = (__u64)(uintptr_t)insns;
	attr.insn_cnt = 2;
	attr.license = (__u64)(uintptr_t) "GPL";
	return (int)syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
}

bool gp_uprobe_multi_supported(void)
{
	static int cached = -1;
	__u64 offset = 0, cookie = 0;
	int prog, link;

	if (cached >= 0)
		return cached;
	prog = load_probe_prog();
	if (prog < 0) {
		cached = 0;
		return false;
	}
	/*
	 * A kernel that knows uprobe_multi looks the path up and says ENOENT;
	 * one that does not rejects the attach type with EINVAL before that.
	 */
	link = gp_uprobe_multi_attach(prog, "/nonexistent/gpuprobed-feature-probe", &offset,
				      &cookie, 1, 0, false);
	cached = link == -ENOENT;
	if (link >= 0)
		close(link);
	close(prog);
	return cached;
}
