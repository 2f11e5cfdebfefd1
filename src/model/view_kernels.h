/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * view_kernels.h — a process's kernels and graphs as readers see them (view.h
 * includes it): each kernel's name, launches and configurations, each
 * graph's launches; why a kernel has no name.
 */
#ifndef GP_MODEL_VIEW_KERNELS_H
#define GP_MODEL_VIEW_KERNELS_H

#include "model/model.h"

struct gp_process;

#define GP_KERNEL_CONFIGS_MAX 16 /* distinct (grid, block, smem) kept per kernel */

/* ---- kernels ------------------------------------------------------------ */
struct gp_kconfig {
	__u32 grid[3];
	__u32 block[3];
	__u64 smem;
	__u64 launches;
};

struct gp_kernel {
	char *name;		   /* demangled; NULL when unresolved */
	bool handle_before_attach; /* driver launches of CUfunction/CUkernel handles never seen created */
	char *mangled;		   /* "" when the symbol is not mangled; NULL when unresolved */
	__u64 func;		   /* first argument of the first launch site seen */
	__u64 ret_addr;
	__u32 sites;	/* distinct (func, ret_addr) that resolved to this kernel */
	__u64 calls;	/* launch calls naming this kernel */
	__u64 launches; /* of which succeeded: the kernel was enqueued */
	__u64 errors;	/* of which failed */
	__u64 driver_launches; /* of launches: made through the driver API directly (cuLaunchKernel & co.) */
	__u64 host_ns;
	struct gp_kconfig configs[GP_KERNEL_CONFIGS_MAX];
	unsigned nconfigs;
	__u64 config_other_launches;  /* launches whose config did not fit in configs[] */
	__u64 config_unread_launches; /* launch configuration could not be read (arg_read) */
};

struct gp_graph {
	__u64 exec;
	__u64 calls;	/* cudaGraphLaunch calls */
	__u64 launches; /* of which succeeded */
	__u64 errors;
	__u64 host_ns;
};

/* Why k has no name, in words for reports; NULL when it has one. */
const char *gp_kernel_unresolved_reason(const struct gp_process *p, const struct gp_kernel *k);
const char *gp_driver_function_name(const struct gp_process *p, __u64 handle); /* NULL: unknown */

#endif /* GP_MODEL_VIEW_KERNELS_H */
