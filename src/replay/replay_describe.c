/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * replay_describe.c — names for a plan's operations and objects (the lines
 * replay.json lists per stream, which tests compare between a capture and
 * the capture of its replay), and the kernel duration table's parser.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/view.h"
#include "replay/replay_plan.h"

const char *gp_rop_kind_name(enum gp_rop_kind k)
{
	static const char *const names[GP_ROP_KIND_MAX] = {
		[GP_ROP_ALLOC] = "alloc",
		[GP_ROP_FREE] = "free",
		[GP_ROP_COPY] = "copy",
		[GP_ROP_MEMSET] = "memset",
		[GP_ROP_KERNEL] = "kernel",
		[GP_ROP_EVENT_RECORD] = "event_record",
		[GP_ROP_STREAM_WAIT] = "stream_wait_event",
		[GP_ROP_STREAM_SYNC] = "stream_sync",
		[GP_ROP_EVENT_SYNC] = "event_sync",
		[GP_ROP_DEVICE_SYNC] = "device_sync",
		[GP_ROP_SET_DEVICE] = "set_device",
	};
	return (unsigned)k < GP_ROP_KIND_MAX ? names[k] : "?";
}

void gp_robj_label(const struct gp_robj *o, char *buf, size_t len)
{
	switch (o->kind) {
	case GP_ROBJ_STREAM:
		if (o->skind == GP_RSTREAM_LEGACY)
			snprintf(buf, len, "legacy");
		else
			snprintf(buf, len, "%s%d", o->skind == GP_RSTREAM_PER_THREAD ? "ptds" : "s",
				 o->ordinal);
		return;
	case GP_ROBJ_EVENT:
		snprintf(buf, len, "e%d", o->ordinal);
		return;
	case GP_ROBJ_MEM:
		snprintf(buf, len, "m%d", o->ordinal);
		return;
	}
}

void gp_rop_describe(const struct gp_rprocess *p, const struct gp_rop *op, char *buf, size_t len)
{
	static const char *const mem_kinds[] = { "device", "managed", "pinned", "registered" };
	char ev[24] = "";
	const struct gp_rkernel *k;

	if (op->event >= 0)
		gp_robj_label(&p->objs[op->event], ev, sizeof(ev));
	switch (op->kind) {
	case GP_ROP_COPY:
		snprintf(buf, len, "copy %s %s %s %llu", gp_dir_name(op->dir),
			 gp_hostmem_name(op->hostmem), op->async ? "async" : "sync",
			 (unsigned long long)op->bytes);
		return;
	case GP_ROP_MEMSET:
		snprintf(buf, len, "memset %s %llu", op->async ? "async" : "sync",
			 (unsigned long long)op->bytes);
		return;
	case GP_ROP_KERNEL:
		k = op->kernel >= 0 && (size_t)op->kernel < p->nkernels ? &p->kernels[op->kernel]
									: NULL;
		snprintf(buf, len, "kernel %s", k && k->name ? k->name : "(unnamed)");
		return;
	case GP_ROP_ALLOC:
		snprintf(buf, len, "alloc %s %llu", mem_kinds[p->objs[op->mem[0]].mem],
			 (unsigned long long)op->bytes);
		return;
	case GP_ROP_FREE:
		snprintf(buf, len, "free %s", mem_kinds[p->objs[op->mem[0]].mem]);
		return;
	case GP_ROP_EVENT_RECORD:
	case GP_ROP_STREAM_WAIT:
	case GP_ROP_EVENT_SYNC:
		snprintf(buf, len, "%s %s", gp_rop_kind_name(op->kind), ev);
		return;
	case GP_ROP_SET_DEVICE:
		snprintf(buf, len, "set_device %d", op->device);
		return;
	default:
		snprintf(buf, len, "%s", gp_rop_kind_name(op->kind));
		return;
	}
}

static int kt_add(struct gp_kernel_times *kt, const char *entry, size_t n, char *errmsg,
		  size_t errlen)
{
	const char *eq = memchr(entry, '=', n);
	char num[32], *end;
	double us;

	while (n && (entry[n - 1] == ' ' || entry[n - 1] == '\t' || entry[n - 1] == '\r'))
		n--;
	while (n && (*entry == ' ' || *entry == '\t')) {
		entry++;
		n--;
	}
	if (!n || *entry == '#')
		return 0;
	eq = memchr(entry, '=', n);
	if (!eq || eq == entry || (size_t)(entry + n - eq - 1) >= sizeof(num))
		goto bad;
	memcpy(num, eq + 1, (size_t)(entry + n - eq - 1));
	num[entry + n - eq - 1] = '\0';
	us = strtod(num, &end);
	if (end == num || *end || !(us >= 0) || us > 1e12)
		goto bad;

	void *rows = realloc(kt->rows, (kt->n + 1) * sizeof(*kt->rows));

	if (!rows)
		return -ENOMEM;
	kt->rows = rows;
	kt->rows[kt->n].name = strndup(entry, (size_t)(eq - entry));
	if (!kt->rows[kt->n].name)
		return -ENOMEM;
	kt->rows[kt->n++].ns = (__u64)(us * 1000.0 + 0.5);
	return 0;
bad:
	snprintf(errmsg, errlen, "'%.*s' is not name=microseconds", (int)(n > 200 ? 200 : n),
		 entry);
	return -EINVAL;
}

int gp_kernel_times_parse(const char *text, struct gp_kernel_times *kt, char *errmsg, size_t errlen)
{
	memset(kt, 0, sizeof(*kt));
	for (const char *s = text; *s;) {
		size_t n = strcspn(s, ",\n");
		int rc = kt_add(kt, s, n, errmsg, errlen);

		if (rc) {
			gp_kernel_times_release(kt);
			return rc;
		}
		s += n;
		if (*s)
			s++;
	}
	return 0;
}

void gp_kernel_times_release(struct gp_kernel_times *kt)
{
	for (size_t i = 0; i < kt->n; i++)
		free(kt->rows[i].name);
	free(kt->rows);
	memset(kt, 0, sizeof(*kt));
}
