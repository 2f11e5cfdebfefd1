/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * python_names.c — naming the Python frames the BPF walk recorded (see
 * python.h): a code object of a probed process read (qualified name, name,
 * file, line table) through the layout python_layout.c verified, cached per
 * process and checked again at each use while the process lives (a freed
 * address reused by other code is read again); the line being executed from
 * the line table (gp_py_addr2line); the frame's label.
 *
 * The process is read with process_vm_readv; strings of any kind (1, 2 or
 * 4 bytes a character) come back as UTF-8.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/param.h>

#include "gpuprobed/events.h"
#include "model/u64map.h"
#include "stacks/python.h"
#include "stacks/python_internal.h"

#define NONE GP_PY_NONE

/* ---- the code cache ------------------------------------------------------------------------ */

struct py_code {
	__u64 type, filename_p, name_p, qualname_p, linetable_p; /* what identifies the object */
	__s32 firstlineno;
	char *file, *name, *qualname;
	__u8 *table;
	size_t table_len;
	struct py_code *retired; /* replaced entries: their strings stay valid until forget */
};

static void code_free(void *p)
{
	struct py_code *c = p;

	free(c->file);
	free(c->name);
	free(c->qualname);
	free(c->table);
	free(c);
}

void py_proc_free(void *p)
{
	struct py_proc *pp = p;

	gp_u64map_clear(&pp->codes, code_free);
	while (pp->retired) {
		struct py_code *c = pp->retired;

		pp->retired = c->retired;
		code_free(c);
	}
	free(pp);
}

/* ---- reading code objects ------------------------------------------------------------------ */

static void put_utf8(char *buf, size_t *o, __u32 c)
{
	if ((c >= 0xd800 && c < 0xe000) || c > 0x10ffff)
		c = 0xfffd; /* a lone surrogate or no code point: U+FFFD */
	if (c < 0x80) {
		buf[(*o)++] = (char)c;
	} else if (c < 0x800) {
		buf[(*o)++] = (char)(0xc0 | c >> 6);
		buf[(*o)++] = (char)(0x80 | (c & 0x3f));
	} else if (c < 0x10000) {
		buf[(*o)++] = (char)(0xe0 | c >> 12);
		buf[(*o)++] = (char)(0x80 | ((c >> 6) & 0x3f));
		buf[(*o)++] = (char)(0x80 | (c & 0x3f));
	} else {
		buf[(*o)++] = (char)(0xf0 | c >> 18);
		buf[(*o)++] = (char)(0x80 | ((c >> 12) & 0x3f));
		buf[(*o)++] = (char)(0x80 | ((c >> 6) & 0x3f));
		buf[(*o)++] = (char)(0x80 | (c & 0x3f));
	}
}

#define STR_MAX 4096 /* code points kept of a name or file */

/* A str object of the process as UTF-8 (malloc'ed). -EINVAL when it is not a compact str. */
static int read_str(pid_t pid, const struct py_proc *pp, __u64 addr, char **out)
{
	__u8 hdr[40], *data;
	__u64 type, len;
	__u32 state, kind;
	size_t o = 0;
	char *s;
	int err;

	err = py_mem_read(pid, addr, hdr, sizeof(hdr));
	if (err)
		return err;
	memcpy(&type, hdr + OB_TYPE, 8);
	memcpy(&len, hdr + STR_LENGTH, 8);
	memcpy(&state, hdr + STR_STATE, 4);
	kind = STR_KIND(state);
	/* names of code objects are always compact (made by the compiler or unmarshal) */
	if (type != pp->unicode_type || !(state & STR_COMPACT) ||
	    (kind != 1 && kind != 2 && kind != 4))
		return -EINVAL;
	if (len > STR_MAX)
		len = STR_MAX;
	data = malloc(len * kind + 1);
	s = malloc(len * 4 + 1);
	if (!data || !s) {
		err = -ENOMEM;
		goto fail;
	}
	err = py_mem_read(
		pid,
		addr + ((state & STR_ASCII) ? pp->lay.str_ascii_data : pp->lay.str_compact_data),
		data, len * kind);
	if (len && err)
		goto fail;
	for (__u64 i = 0; i < len; i++) {
		__u32 c;

		if (kind == 1) {
			c = data[i];
		} else if (kind == 2) {
			__u16 u;

			memcpy(&u, data + 2 * i, 2);
			c = u;
		} else {
			memcpy(&c, data + 4 * i, 4);
		}
		put_utf8(s, &o, c);
	}
	s[o] = '\0';
	free(data);
	*out = s;
	return 0;
fail:
	free(data);
	free(s);
	return err;
}

#define TABLE_MAX (1u << 20)

static int read_bytes(pid_t pid, const struct py_proc *pp, __u64 addr, __u8 **out, size_t *len)
{
	__u64 hdr[4];
	__u8 *b;
	int err = py_mem_read(pid, addr, hdr, sizeof(hdr));

	if (err)
		return err;
	if (hdr[OB_TYPE / 8] != pp->bytes_type || hdr[BYTES_SIZE / 8] > TABLE_MAX)
		return -EINVAL;
	b = malloc(hdr[BYTES_SIZE / 8] + 1);
	if (!b)
		return -ENOMEM;
	err = py_mem_read(pid, addr + BYTES_DATA, b, hdr[BYTES_SIZE / 8]);
	if (err && hdr[BYTES_SIZE / 8]) {
		free(b);
		return err;
	}
	*out = b;
	*len = hdr[BYTES_SIZE / 8];
	return 0;
}

/* The fields of the code object at addr that identify it. */
static int read_code_ids(pid_t pid, const struct py_proc *pp, __u64 addr, struct py_code *c)
{
	const struct py_layout *l = &pp->lay;
	__u8 hdr[256];
	size_t need = (size_t)l->co_linetable + 8;
	int err;

	need = MAX(need, (size_t)l->co_filename + 8);
	need = MAX(need, (size_t)l->co_name + 8);
	if (l->co_qualname != NONE)
		need = MAX(need, (size_t)l->co_qualname + 8);
	need = MAX(need, (size_t)l->co_firstlineno + 4);
	if (need > sizeof(hdr))
		return -EINVAL;
	err = py_mem_read(pid, addr, hdr, need);
	if (err)
		return err;
	memcpy(&c->type, hdr + OB_TYPE, 8);
	memcpy(&c->filename_p, hdr + l->co_filename, 8);
	memcpy(&c->name_p, hdr + l->co_name, 8);
	if (l->co_qualname != NONE)
		memcpy(&c->qualname_p, hdr + l->co_qualname, 8);
	else
		c->qualname_p = c->name_p;
	memcpy(&c->linetable_p, hdr + l->co_linetable, 8);
	memcpy(&c->firstlineno, hdr + l->co_firstlineno, 4);
	return 0;
}

static bool same_code(const struct py_code *a, const struct py_code *b)
{
	return a->type == b->type && a->filename_p == b->filename_p && a->name_p == b->name_p &&
	       a->qualname_p == b->qualname_p && a->linetable_p == b->linetable_p &&
	       a->firstlineno == b->firstlineno;
}

static int read_code(pid_t pid, const struct py_proc *pp, const struct py_code *ids,
		     struct py_code **out)
{
	struct py_code *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return -ENOMEM;
	*c = *ids;
	err = read_str(pid, pp, c->filename_p, &c->file);
	if (!err)
		err = read_str(pid, pp, c->name_p, &c->name);
	if (!err)
		err = read_str(pid, pp, c->qualname_p, &c->qualname);
	if (!err)
		err = read_bytes(pid, pp, c->linetable_p, &c->table, &c->table_len);
	if (err) {
		code_free(c);
		return err;
	}
	*out = c;
	return 0;
}

int gp_python_resolve(struct gp_python *py, pid_t pid, __u64 code, __u64 word,
		      struct gp_py_sym *out)
{
	struct py_proc *pp = gp_u64map_get(&py->procs, (__u64)pid);
	struct py_code *c, ids;
	long off;
	int err, line;

	if (!pp)
		return -ESRCH;
	c = gp_u64map_get(&pp->codes, code);
	err = read_code_ids(pid, pp, code, &ids);
	if (err && !c)
		return err;
	if (!err && ids.type != pp->code_type && !c)
		return -EINVAL;
	/*
	 * What was cached when the memory is unreadable now (the process has
	 * exited) or no longer a code object (freed since): that is what ran there.
	 */
	if (!err && ids.type == pp->code_type && (!c || !same_code(c, &ids))) {
		struct py_code *fresh;

		err = read_code(pid, pp, &ids, &fresh);
		if (err)
			return err;
		err = gp_u64map_put(&pp->codes, code, fresh);
		if (err) {
			code_free(fresh);
			return err;
		}
		if (c) { /* the address reused: names handed out before stay valid */
			c->retired = pp->retired;
			pp->retired = c;
		}
		c = fresh;
	}
	/* 3.10 records f_lasti in code units; 3.11+ a byte offset */
	off = pp->lay.minor == 10 ? 2L * (__s32)GP_PYF_INSTR(word)
				  : (long)(__s32)GP_PYF_INSTR(word);
	if (gp_py_addr2line(c->table, c->table_len, c->firstlineno, off, pp->lay.minor, &line))
		line = 0;
	*out = (struct gp_py_sym){
		.qualname = c->qualname,
		.name = c->name,
		.file = c->file,
		.line = line,
		.firstlineno = c->firstlineno,
	};
	return 0;
}

void gp_python_label(const struct gp_py_sym *s, char *buf, size_t len)
{
	const char *base = strrchr(s->file, '/');

	base = base ? base + 1 : s->file;
	if (s->line > 0)
		snprintf(buf, len, "%s (%s:%d)", s->qualname, base, s->line);
	else
		snprintf(buf, len, "%s (%s)", s->qualname, base);
}

/* ---- line tables (Objects/lnotab_notes.txt of 3.10, Objects/locations.md of 3.11+) ---------- */

static unsigned varint(const __u8 *t, size_t len, size_t *i)
{
	unsigned v = 0, shift = 0;
	__u8 b;

	do {
		if (*i >= len)
			return v;
		b = t[(*i)++];
		if (shift < 32)
			v |= (unsigned)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return v;
}

int gp_py_addr2line(const __u8 *t, size_t len, int firstlineno, long off, unsigned minor, int *line)
{
	long end = 0;
	int cur = firstlineno;
	size_t i = 0;

	if (off < 0) {
		*line = firstlineno;
		return 0;
	}
	if (minor == 10) {
		/* (sdelta u8, ldelta s8) pairs over bytes of bytecode; ldelta -128: no line */
		for (; i + 1 < len; i += 2) {
			long start = end;
			int ld = (__s8)t[i + 1];

			end += t[i];
			if (ld != -128)
				cur += ld;
			if (off >= start && off < end) {
				if (ld == -128)
					return -ENOENT;
				*line = cur;
				return 0;
			}
		}
		return -ENOENT;
	}
	/* entries: first byte 1cccclll (code, length - 1 in code units), then the code's varints */
	while (i < len) {
		__u8 first = t[i];
		unsigned code = (first >> 3) & 15;
		long start = end;
		bool has_line = true;

		end += ((first & 7) + 1) * 2;
		i++;
		if (code == 15) {
			has_line = false;
		} else if (code == 13 || code == 14) {
			unsigned v = varint(t, len, &i);

			cur += (v & 1) ? -(int)(v >> 1) : (int)(v >> 1);
		} else if (code >= 10) {
			cur += (int)code - 10;
		}
		while (i < len && !(t[i] & 128)) /* the rest of the entry: columns */
			i++;
		if (off >= start && off < end) {
			if (!has_line)
				return -ENOENT;
			*line = cur;
			return 0;
		}
	}
	return -ENOENT;
}
