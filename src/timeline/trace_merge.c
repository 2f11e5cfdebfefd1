/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * trace_merge.c — several timelines as one (trace_merge.h). Each part is
 * read a line at a time (trace_json.c writes one event per line, opening
 * with "ph", "pid", "tid", "ts" in that order), so memory stays bounded:
 * its times are shifted onto the merged axis exactly (nanoseconds, as
 * text, never through a double), its pids moved into a range of their own
 * (two hosts may run the same pid), its flow ids likewise; its processes
 * are named with their host and sorted by it, so that each host's tracks
 * form one group. Chrome's format has two levels (process, track): a host
 * is the processes next to each other under its name, not a level above.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "timeline/trace_json.h"
#include "timeline/trace_merge.h"

/* Parses an unsigned decimal at *s; false when none. */
static bool read_u64(const char **s, __u64 *v)
{
	const char *p = *s;

	*v = 0;
	if (*p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9')
		*v = *v * 10 + (__u64)(*p++ - '0');
	*s = p;
	return true;
}

static void write_us(FILE *out, __s64 ns)
{
	__u64 a = ns < 0 ? -(__u64)ns : (__u64)ns;

	fprintf(out, "%s%" PRIu64 ".%03u", ns < 0 ? "-" : "", (uint64_t)(a / 1000),
		(unsigned)(a % 1000));
}

/* A process's name event, renamed "HOST: NAME (pid P)", with its sort index and host label beside it. */
static int process_meta(FILE *out, const char *line, __u64 pid, __u64 tpid, size_t part,
			const char *host)
{
	json_t *ev = json_loads(line, 0, NULL), *args = json_object_get(ev, "args");
	const char *name = json_string_value(json_object_get(args, "name"));
	char *label = NULL;
	int err = 0;

	if (!ev)
		return -EINVAL;
	if (asprintf(&label, "%s: %s (pid %" PRIu64 ")", host, name ? name : "process",
		     (uint64_t)pid) < 0 ||
	    json_object_set_new(args, "name", json_string(label))) {
		err = -ENOMEM;
	} else {
		json_object_set_new(ev, "pid", json_integer((json_int_t)tpid));
		char *s = json_dumps(ev, JSON_COMPACT);

		if (!s)
			err = -ENOMEM;
		else
			fprintf(out,
				"%s,\n{\"ph\":\"M\",\"pid\":%" PRIu64 ",\"tid\":0,\"ts\":0.000,"
				"\"name\":\"process_sort_index\",\"args\":{\"sort_index\":%zu}},\n"
				"{\"ph\":\"M\",\"pid\":%" PRIu64
				",\"tid\":0,\"ts\":0.000,\"name\":\"process_labels\","
				"\"args\":{\"labels\":",
				s, (uint64_t)tpid, part, (uint64_t)tpid);
		free(s);
		if (!err) {
			char *h = json_dumps(json_string(host), JSON_ENCODE_ANY);

			fprintf(out, "%s}}", h ? h : "\"\"");
			free(h);
		}
	}
	free(label);
	json_decref(ev);
	return err;
}

/*
 * One event line of part k: {"ph":"X","pid":P,"tid":T,"ts":U.FFF<rest>. Written with P moved, the
 * time shifted and a flow's "id" moved; false when the line is not an event of that shape.
 */
static int event_line(FILE *out, char *line, size_t k, const struct gp_trace_part *part,
		      bool *first)
{
	const char *s = line, *ph;
	__u64 pid, tid, us, frac, tpid;
	size_t len = strlen(line);
	int err = 0;

	while (len && (line[len - 1] == '\n' || line[len - 1] == ','))
		line[--len] = '\0';
	if (strncmp(s, "{\"ph\":\"", 7))
		return 0; /* the file's opening and closing lines */
	ph = s + 7;
	if (!(s = strchr(ph, '"')) || strncmp(s, "\",\"pid\":", 8))
		return -EINVAL;
	s += 8;
	if (!read_u64(&s, &pid) || strncmp(s, ",\"tid\":", 7))
		return -EINVAL;
	s += 7;
	if (!read_u64(&s, &tid) || strncmp(s, ",\"ts\":", 6))
		return -EINVAL;
	s += 6;
	if (!read_u64(&s, &us) || *s++ != '.')
		return -EINVAL;
	{
		const char *f = s;

		if (!read_u64(&s, &frac) || s - f != 3)
			return -EINVAL;
	}
	tpid = pid + (__u64)k * GP_TRACE_MERGE_PID_STRIDE;
	fputs(*first ? "\n" : ",\n", out);
	*first = false;
	if (*ph == 'M' && strstr(s, "\"name\":\"process_name\""))
		return process_meta(out, line, pid, tpid, k, part->host);
	fprintf(out, "{\"ph\":\"%.*s\",\"pid\":%" PRIu64 ",\"tid\":%" PRIu64 ",\"ts\":",
		(int)strcspn(ph, "\""), ph, (uint64_t)tpid, (uint64_t)tid);
	write_us(out, *ph == 'M' ? 0 : (__s64)(us * 1000 + frac) + part->offset_ns);
	/* flows: their ids numbered per file, made distinct per part */
	const char *id = (*ph == 's' || *ph == 'f') ? strstr(s, ",\"id\":") : NULL;
	__u64 v;

	if (id) {
		const char *after = id + 6;

		if (!read_u64(&after, &v))
			return -EINVAL;
		fprintf(out, "%.*s,\"id\":%" PRIu64 "%s", (int)(id - s), s,
			(uint64_t)(v + ((__u64)k << 40)), after);
	} else {
		fputs(s, out);
	}
	return err;
}

static int merge_part(FILE *out, size_t k, const struct gp_trace_part *part, bool *first,
		      json_t *parts)
{
	FILE *in = fopen(part->path, "re");
	char *line = NULL;
	size_t cap = 0;
	int err = 0;
	json_t *other = NULL;

	if (!in)
		return -errno;
	while (getline(&line, &cap, in) > 0) {
		if (!strncmp(line, "],\"otherData\":", 14)) {
			other = json_loads(line + 14, JSON_DISABLE_EOF_CHECK,
					   NULL); /* the closing "}" left */
			continue;
		}
		if ((err = event_line(out, line, k, part, first)))
			break;
	}
	if (!err && ferror(in))
		err = -EIO;
	fclose(in);
	free(line);
	if (!other)
		other = json_object();
	json_object_set_new(other, "host", json_string(part->host));
	json_object_set_new(other, "offset_ns", json_integer(part->offset_ns));
	json_object_set_new(other, "pid_base",
			    json_integer((json_int_t)k * GP_TRACE_MERGE_PID_STRIDE));
	json_array_append_new(parts, other);
	return err;
}

int gp_trace_merge(const char *dir, const struct gp_trace_part *parts, size_t n)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	json_t *arr = json_array();
	bool first = true;
	FILE *out;
	int err = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, GP_TIMELINE_FILE) >=
	    sizeof(path) - 4) {
		json_decref(arr);
		return -ENAMETOOLONG;
	}
	snprintf(tmp, sizeof(tmp), "%.*s.tmp", (int)(sizeof(tmp) - 5), path);
	out = arr ? fopen(tmp, "we") : NULL;
	if (!out) {
		err = arr ? -errno : -ENOMEM;
		json_decref(arr);
		gp_err("write %s: %s", path, strerror(-err));
		return err;
	}
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", out);
	for (size_t k = 0; k < n && !err; k++)
		if ((err = merge_part(out, k, &parts[k], &first, arr)))
			gp_err("merge %s into %s: %s", parts[k].path, path, strerror(-err));
	if (!err) {
		char *o = json_dumps(arr, JSON_COMPACT);

		fprintf(out,
			"\n],\"otherData\":{\"tool\":\"gpuprobed merge\",\"clock\":\"CLOCK_MONOTONIC of the first "
			"capture's host, microseconds (each host's offset: report.json merge.clocks)\","
			"\"gpu_timestamps\":false,\"parts\":%s}}\n",
			o ? o : "[]");
		free(o);
	}
	if (fflush(out) || ferror(out))
		err = err ? err : -(errno ? errno : EIO);
	if (fclose(out) && !err)
		err = -errno;
	json_decref(arr);
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		unlink(tmp);
		gp_err("write %s: %s", path, strerror(-err));
	}
	return err;
}
