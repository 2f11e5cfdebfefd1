/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* collector.c — ring buffer -> model (see collector.h). */
#include <bpf/libbpf.h>
#include <errno.h>
#include <search.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/collector.h"
#include "collect/cpu_accounts.h"
#include "log.h"

static int cmp_tid(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

	return x < y ? -1 : x > y;
}

static void name_thread(struct gp_collector *c, __u32 tgid, __u32 tid)
{
	char path[64], name[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", tgid, tid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(name, sizeof(name), f))
			name[strcspn(name, "\n")] = '\0';
		fclose(f);
	}
	if (name[0])
		gp_model_thread_name(c->model, tgid, tid, name);
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct gp_collector *c = ctx;
	const struct gp_event_hdr *h = data;

	c->records++;
	c->bytes += size;
	if (size == sizeof(struct gp_thread_exit) && h->type == GP_EV_THREAD_EXIT) {
		if (c->cpu)
			gp_cpu_accounts_exit(c->cpu, data); /* becomes a gp_thread_cpu record */
		return 0;
	}
	if (size == sizeof(struct gp_proc_event) && h->type == GP_EV_PROC) {
		if (c->on_proc)
			c->on_proc(c->proc_ctx,
				   data); /* admissions and holds: the session's business */
		return 0;
	}
	gp_model_ingest(c->model, data, size); /* malformed records are counted there */
	/* its Python frames are named now (the model did so): the process may go on */
	if (size >= sizeof(*h) && h->type == GP_EV_API_CALL_USTACK && (h->flags & GP_EVF_PY_HELD)) {
		c->py_holds++;
		if (c->continue_held)
			c->continue_held(c->proc_ctx,
					 (pid_t)h->tgid); /* the registry's record goes too */
		else if (kill((pid_t)h->tgid, SIGCONT) && errno != ESRCH)
			gp_warn("pid %u: cannot continue it: %s", h->tgid, strerror(errno));
	}
	if (size >= sizeof(*h) && gp_event_is_call(h->type)) {
		if (GP_EVF_PARENT(h->flags))
			c->nested_calls++;
		else
			c->calls++;
	}
	if (size >= sizeof(*h) && h->tid != c->last_tid) {
		void *key = (void *)(uintptr_t)h->tid;

		c->last_tid = h->tid;
		if (!tfind(key, &c->known_tids, cmp_tid)) {
			if (tsearch(key, &c->known_tids, cmp_tid))
				name_thread(c, h->tgid, h->tid);
		}
	}
	return 0;
}

int gp_collector_init(struct gp_collector *c, int ringbuf_fd, struct gp_model *model,
		      struct gp_cpu_accounts *cpu)
{
	memset(c, 0, sizeof(*c));
	c->model = model;
	c->cpu = cpu;
	c->rb = ring_buffer__new(ringbuf_fd, on_record, c, NULL);
	if (!c->rb)
		return -errno;
	return 0;
}

int gp_collector_drain(struct gp_collector *c)
{
	return ring_buffer__consume(c->rb);
}

static void no_free(void *p)
{
	(void)p;
}

void gp_collector_release(struct gp_collector *c)
{
	ring_buffer__free(c->rb);
	c->rb = NULL;
	tdestroy(c->known_tids, no_free);
	c->known_tids = NULL;
}
