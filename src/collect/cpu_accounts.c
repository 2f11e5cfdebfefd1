/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* cpu_accounts.c — kernel thread accounts -> gp_thread_cpu records (see cpu_accounts.h). */
#include <bpf/bpf.h>
#include <dirent.h>
#include <errno.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "collect/cpu_accounts.h"
#include "log.h"

struct baseline {
	__u32 pid, tid;
	__u64 minflt, majflt;
	__u64 start_ns;
	bool faults_known;
	bool reported; /* a record was made for this thread */
};

struct gp_cpu_accounts {
	struct gp_model *model;
	void *by_tid; /* tsearch tree of struct baseline *, by tid */
	struct baseline **all;
	size_t n, cap;
};

static int cmp_tid(const void *a, const void *b)
{
	const struct baseline *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

struct gp_cpu_accounts *gp_cpu_accounts_new(struct gp_model *model)
{
	struct gp_cpu_accounts *a = calloc(1, sizeof(*a));

	if (a)
		a->model = model;
	return a;
}

static void no_free(void *p)
{
	(void)p;
}

void gp_cpu_accounts_free(struct gp_cpu_accounts *a)
{
	if (!a)
		return;
	tdestroy(a->by_tid, no_free);
	for (size_t i = 0; i < a->n; i++)
		free(a->all[i]);
	free(a->all);
	free(a);
}

int gp_read_thread_faults(pid_t pid, pid_t tid, __u64 *minflt, __u64 *majflt)
{
	char path[64], buf[1024], *p;
	unsigned long long minf, majf;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: the fields start after the last ')' */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %llu %*u %llu", &minf, &majf) != 2)
		return -EINVAL;
	*minflt = minf;
	*majflt = majf;
	return 0;
}

int gp_read_thread_cputime(pid_t pid, pid_t tid, __u64 *sum_exec_runtime)
{
	char path[64];
	unsigned long long v;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fscanf(f, "%llu", &v);
	fclose(f);
	if (n != 1)
		return -EINVAL;
	*sum_exec_runtime = v;
	return 0;
}

static struct baseline *find(struct gp_cpu_accounts *a, __u32 tid)
{
	struct baseline key = { .tid = tid };
	struct baseline **b = tfind(&key, &a->by_tid, cmp_tid);

	return b ? *b : NULL;
}

static struct baseline *add(struct gp_cpu_accounts *a, __u32 pid, __u32 tid)
{
	struct baseline *b = find(a, tid);

	if (b) {
		tdelete(b, &a->by_tid, cmp_tid); /* a reused tid: the new thread replaces it */
	} else {
		if (GP_ARRAY_GROW(a->all, a->cap, a->n + 1, 64))
			return NULL;
		b = calloc(1, sizeof(*b));
		if (!b)
			return NULL;
		a->all[a->n++] = b;
	}
	memset(b, 0, sizeof(*b));
	b->pid = pid;
	b->tid = tid;
	if (!tsearch(b, &a->by_tid, cmp_tid))
		return NULL;
	return b;
}

int gp_cpu_accounts_open(struct gp_cpu_accounts *a, pid_t pid, __u64 start_ns)
{
	char path[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);
		struct baseline *b;

		if (*end || tid <= 0)
			continue;
		b = add(a, (__u32)pid, (__u32)tid);
		if (!b) {
			closedir(d);
			return -ENOMEM;
		}
		b->start_ns = start_ns;
		b->faults_known =
			gp_read_thread_faults(pid, (pid_t)tid, &b->minflt, &b->majflt) == 0;
	}
	closedir(d);
	return 0;
}

/* One gp_thread_cpu into the model. final_min/maj: the task's counters at the end of its window. */
static void report(struct gp_cpu_accounts *a, const struct gp_thread_acct *acct, __u32 tid,
		   __u64 end_ns, __u64 oncpu, __u64 offcpu, __u64 runnable, bool faults_read,
		   __u64 final_min, __u64 final_maj, __u32 extra_flags)
{
	struct gp_thread_cpu rec = { 0 };
	struct baseline *b = find(a, tid);
	bool started = acct->flags & GP_TAF_STARTED;

	rec.hdr.type = GP_EV_THREAD_CPU;
	rec.hdr.size = sizeof(rec);
	rec.hdr.tgid = acct->tgid;
	rec.hdr.tid = tid;
	rec.hdr.ts_ns = acct->start_ns;
	rec.end_ns = end_ns;
	rec.oncpu_ns = oncpu;
	rec.offcpu_ns = offcpu;
	rec.runnable_ns = runnable;
	rec.vol_switches = acct->vol_switches;
	rec.invol_switches = acct->invol_switches;
	rec.flags = extra_flags | (started ? GP_TCF_STARTED : 0) |
		    ((acct->flags & GP_TAF_EXITED) ? GP_TCF_EXITED : 0);
	if (faults_read && (acct->flags & GP_TAF_FAULT_BASE)) {
		/* the kernel read its counters when the account opened (a process admitted at exec) */
		rec.minor_faults = final_min - acct->min_flt_base;
		rec.major_faults = final_maj - acct->maj_flt_base;
	} else if (faults_read && (started || (b && b->faults_known))) {
		/* a thread created in the window starts at 0 */
		rec.minor_faults = final_min - (started ? 0 : b->minflt);
		rec.major_faults = final_maj - (started ? 0 : b->majflt);
	} else {
		rec.flags |= GP_TCF_FAULTS_UNKNOWN;
	}
	memcpy(rec.comm, acct->comm, sizeof(rec.comm));
	if (b && !started)
		b->reported = true;
	gp_model_ingest(a->model, &rec, sizeof(rec));
}

void gp_cpu_accounts_exit(struct gp_cpu_accounts *a, const struct gp_thread_exit *rec)
{
	const struct gp_thread_acct *acct = &rec->acct;

	report(a, acct, rec->hdr.tid, acct->end_ns, acct->oncpu_ns, acct->offcpu_ns,
	       acct->runnable_ns, true, acct->min_flt_exit, acct->maj_flt_exit, 0);
}

int gp_cpu_accounts_close(struct gp_cpu_accounts *a, int map_fd, __u64 end_ns)
{
	struct gp_thread_key key, next;
	int err = bpf_map_get_next_key(map_fd, NULL, &next);

	while (!err) {
		struct gp_thread_acct acct;
		__u64 oncpu, offcpu, runnable, minf = 0, majf = 0;
		bool faults;

		key = next;
		err = bpf_map_get_next_key(map_fd, &key, &next);
		if (bpf_map_lookup_elem(map_fd, &key, &acct))
			continue;
		/* close the interval that is still open: CPU time since its last switch-out */
		oncpu = acct.oncpu_ns;
		if (acct.flags & GP_TAF_SUM_OUT) {
			__u64 sum;

			if (gp_read_thread_cputime((pid_t)acct.tgid, (pid_t)key.tid, &sum) == 0 &&
			    sum >= acct.sum_out)
				oncpu += sum - acct.sum_out;
		} else if (acct.flags & GP_TAF_ON_CPU) {
			oncpu += end_ns - acct.in_ns; /* on the CPU since the window opened */
		}
		offcpu = acct.offcpu_ns + ((acct.flags & GP_TAF_ON_CPU) ? 0 : end_ns - acct.out_ns);
		runnable = acct.runnable_ns;
		if (!(acct.flags & GP_TAF_ON_CPU) && (acct.flags & GP_TAF_PREEMPTED))
			runnable += end_ns - acct.out_ns;
		faults = gp_read_thread_faults((pid_t)acct.tgid, (pid_t)key.tid, &minf, &majf) == 0;
		report(a, &acct, key.tid, end_ns, oncpu, offcpu, runnable, faults, minf, majf, 0);
	}
	if (err != -ENOENT && errno != ENOENT)
		gp_warn("reading the thread accounts: %s", strerror(errno));

	/* threads that never ran while traced: off-CPU throughout */
	for (size_t i = 0; i < a->n; i++) {
		struct baseline *b = a->all[i];
		struct gp_thread_acct acct = { .tgid = b->pid, .start_ns = b->start_ns };
		__u64 minf = 0, majf = 0;
		bool faults;
		char path[64];
		FILE *f;

		if (b->reported || find(a, b->tid) != b)
			continue;
		faults = gp_read_thread_faults((pid_t)b->pid, (pid_t)b->tid, &minf, &majf) == 0;
		if (!faults)
			continue; /* gone without being seen leaving: nothing we can say */
		snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", b->pid, b->tid);
		f = fopen(path, "re");
		if (f) {
			if (fgets(acct.comm, sizeof(acct.comm), f))
				acct.comm[strcspn(acct.comm, "\n")] = '\0';
			fclose(f);
		}
		report(a, &acct, b->tid, end_ns, 0, end_ns - b->start_ns, 0, true, minf, majf,
		       GP_TCF_NEVER_RAN);
	}
	return 0;
}
