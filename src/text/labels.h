/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* labels.h — names for reports, never containing ';' or a newline (folded stacks split on them). */
#ifndef GP_TEXT_LABELS_H
#define GP_TEXT_LABELS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "model/view.h"

void gp_size_label(__u64 bytes, char *buf, size_t len); /* "4 MiB", "1.5 KiB" */
void gp_stack_op_label(const struct gp_model *m, const struct gp_process *p,
		       const struct gp_stack_op *r, char *buf,
		       size_t len); /* "[kernel] gemm<float>" */
void gp_stack_frame_label(const struct gp_stack_frame *f, char *buf,
			  size_t len); /* "main", "lib.so+0x12", "Model.forward (train.py:13)" */
/* A kernel's name without parameters ("ml::scale<float>"), or "(why it has none)". */
void gp_kernel_short_name(const struct gp_model *m, const struct gp_process *p,
			  const struct gp_kernel *k, char *buf, size_t len);
/* In a container or a Kubernetes pod (its place names a container id or a pod uid). */
bool gp_in_container(const struct gp_process *p);
/* Its container's name, else the first 12 hex digits of its id (as `podman ps`); "" when none. */
void gp_container_label(const struct gp_process *p, char *buf, size_t len);

#endif
