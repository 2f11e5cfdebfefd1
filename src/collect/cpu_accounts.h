/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cpu_accounts.h — turns the kernel's per-thread CPU accounts into
 * gp_thread_cpu records for the model: threads that exit arrive through
 * the ring buffer at their last switch; threads alive at the end are read
 * from the map then. Faults in the window are the task's own counters
 * (min_flt, maj_flt) minus their value when the window opened, read from
 * /proc/PID/task/TID/stat for the threads that existed then (threads
 * created later start at 0).
 */
#ifndef GP_CPU_ACCOUNTS_H
#define GP_CPU_ACCOUNTS_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

#include "gpuprobed/events.h"
#include "model/model.h"

struct gp_cpu_accounts;

struct gp_cpu_accounts *gp_cpu_accounts_new(struct gp_model *model);
void gp_cpu_accounts_free(struct gp_cpu_accounts *a);

/*
 * The window opens for pid at start_ns: remember every thread's fault
 * counters now (read from /proc). 0 or -errno.
 */
int gp_cpu_accounts_open(struct gp_cpu_accounts *a, pid_t pid, __u64 start_ns);

/* A thread's final account, from the ring buffer: one record into the model. */
void gp_cpu_accounts_exit(struct gp_cpu_accounts *a, const struct gp_thread_exit *rec);

/*
 * The window closes at end_ns: every thread still in the kernel's map
 * (thread_acct, fd map_fd), and every thread of a traced process that was
 * never seen switching, becomes a record. Call once, after the scheduler
 * probes are detached and the ring buffer drained.
 */
int gp_cpu_accounts_close(struct gp_cpu_accounts *a, int map_fd, __u64 end_ns);

/* Reads minflt/majflt of tid from /proc/PID/task/TID/stat. 0 or -errno. */
int gp_read_thread_faults(pid_t pid, pid_t tid, __u64 *minflt, __u64 *majflt);
/* Reads tid's sum_exec_runtime (ns on the CPU) from /proc/PID/task/TID/schedstat. 0 or -errno. */
int gp_read_thread_cputime(pid_t pid, pid_t tid, __u64 *sum_exec_runtime);

#endif
