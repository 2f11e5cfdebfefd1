/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pprof_profile.c — the model's call stacks as a pprof profile (profile.proto,
 * gzip'ed: profile.pb.gz), the format go tool pprof, Parca, Pyroscope and
 * Grafana read. One profile with three sample types (calls, bytes, host time
 * in ns; calls shown first); a sample is one (stack, operation) of a process
 * with its totals, not a timed sample, the rows the folded files add up.
 *
 * Each sample's frames, leaf first, are the folded line's read backwards:
 * the operation ("[kernel] gemm<float>"), the API ("cudaLaunchKernel"), the
 * call stack (Python frames as functions with their file and line; native
 * frames as their return address in a mapping of their file, with its build
 * id, and the function where one was found), "[truncated]" where the stack
 * is, and the process ("train (pid 1234)"). Labels: pid, and the container
 * where there is one.
 *
 * The model keeps no address ranges, so a mapping is one per (process, file,
 * load bias) spanning the frames seen in it: memory_start is its lowest
 * frame and file_offset that frame's offset in the file, so the address ->
 * file offset that pprof computes is the symbolizer's, exactly.
 *
 * protobuf-c packs the messages (compiled from profile.proto) straight into
 * zlib's gzip stream: the packed profile is never held whole.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "array.h"
#include "model/u64map.h"
#include "model/view.h"
#include "profile.pb-c.h"
#include "stack_formats/stack_paths.h"
#include "text/labels.h"

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__ValueType pb_value_type;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Label pb_label;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Function pb_function;

struct location {
	pb_location l;
	pb_line line, *linep; /* at most one line: no inlined frames are known */
	bool has_line;
};

struct mapping {
	pb_mapping m;
	size_t proc;
	__u64 bias; /* address - file offset */
	bool all_named;
};

struct sample {
	size_t loc_at, nloc; /* in loc_ids */
	size_t proc;
	int64_t v[GP_W_MAX];
};

struct proc_labels {
	pb_label l[2];
	pb_label *ptrs[2];
	size_t n;
};

struct builder {
	char **strings;
	size_t nstrings, strings_cap;
	struct gp_u64map string_by_hash; /* -> index + 1 */
	pb_function *functions;
	size_t nfunctions, functions_cap;
	struct gp_u64map function_by_key; /* -> index + 1 */
	struct location *locations;
	size_t nlocations, locations_cap;
	struct gp_u64map location_by_key; /* (proc, frame) or a function's: -> index + 1 */
	struct mapping *mappings;
	size_t nmappings, mappings_cap;
	struct gp_u64map mapping_by_key; /* -> index + 1 */
	struct sample *samples;
	size_t nsamples, samples_cap;
	uint64_t *loc_ids;
	size_t nloc_ids, loc_ids_cap;
	struct proc_labels *labels; /* [m->nprocs] */
};

static __u64 mix(__u64 h, __u64 v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	h *= 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 31);
}

/* The string's index in the table, added on first use; -1 when out of memory. */
static int64_t str_index(struct builder *b, const char *s)
{
	__u64 h = 0xcbf29ce484222325ULL;
	void *hit;
	char *copy;

	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		h = (h ^ *c) * 0x100000001b3ULL;
	hit = gp_u64map_get(&b->string_by_hash, h);
	if (hit && !strcmp(b->strings[(uintptr_t)hit - 1], s))
		return (int64_t)(uintptr_t)hit - 1;
	/* new, or its hash taken by another string: a second entry of that hash, not shared */
	if (GP_ARRAY_GROW(b->strings, b->strings_cap, b->nstrings + 1, 256) || !(copy = strdup(s)))
		return -1;
	b->strings[b->nstrings++] = copy;
	if (!hit)
		gp_u64map_put(&b->string_by_hash, h, (void *)(uintptr_t)b->nstrings);
	return (int64_t)b->nstrings - 1;
}

/* The function (name, system name, file)'s id; 0 when out of memory. */
static uint64_t function_id(struct builder *b, const char *name, const char *system_name,
			    const char *file)
{
	int64_t n = str_index(b, name), s = str_index(b, system_name ? system_name : name),
		f = str_index(b, file ? file : "");
	__u64 key = mix(mix(mix(0, (__u64)n), (__u64)s), (__u64)f);
	void *hit = gp_u64map_get(&b->function_by_key, key);
	pb_function *fn;

	if (n < 0 || s < 0 || f < 0)
		return 0;
	if (hit) {
		fn = &b->functions[(uintptr_t)hit - 1];
		if (fn->name == n && fn->system_name == s && fn->filename == f)
			return fn->id;
	}
	if (GP_ARRAY_GROW(b->functions, b->functions_cap, b->nfunctions + 1, 256))
		return 0;
	fn = &b->functions[b->nfunctions++];
	*fn = (pb_function)PERFTOOLS__PROFILES__FUNCTION__INIT;
	fn->id = b->nfunctions;
	fn->name = n;
	fn->system_name = s;
	fn->filename = f;
	if (!hit)
		gp_u64map_put(&b->function_by_key, key, (void *)(uintptr_t)b->nfunctions);
	return fn->id;
}

/* A new location (its line's function: fid, 0 for none); NULL when out of memory. */
static struct location *new_location(struct builder *b, __u64 key, uint64_t fid, __s64 line)
{
	struct location *loc;

	if (GP_ARRAY_GROW(b->locations, b->locations_cap, b->nlocations + 1, 256))
		return NULL;
	loc = &b->locations[b->nlocations++];
	*loc = (struct location){ .l = PERFTOOLS__PROFILES__LOCATION__INIT,
				  .line = PERFTOOLS__PROFILES__LINE__INIT };
	loc->l.id = b->nlocations;
	loc->has_line = fid != 0;
	loc->line.function_id = fid;
	loc->line.line = line;
	if (gp_u64map_put(&b->location_by_key, key, (void *)(uintptr_t)b->nlocations)) {
		b->nlocations--;
		return NULL;
	}
	return loc;
}

/* The location of a frame only a name stands for (the process, an API, an operation); 0: no memory. */
static uint64_t named_location(struct builder *b, const char *name)
{
	uint64_t fid = function_id(b, name, NULL, NULL);
	__u64 key = (1ULL << 63) | fid; /* frames' keys are below 2^63 */
	void *hit = gp_u64map_get(&b->location_by_key, key);
	struct location *loc;

	if (!fid)
		return 0;
	if (hit)
		return (uintptr_t)hit;
	loc = new_location(b, key, fid, 0);
	return loc ? loc->l.id : 0;
}

/* The mapping of f's file at f's load bias in process proc, grown to hold f; 0: no memory. */
static uint64_t mapping_id(struct builder *b, size_t proc, const struct gp_stack_frame *f)
{
	__u64 bias = f->addr - f->file_offset;
	int64_t file = str_index(b, f->file), bid = str_index(b, f->build_id ? f->build_id : "");
	__u64 key = mix(mix(mix(1, proc), (__u64)file), bias);
	void *hit = gp_u64map_get(&b->mapping_by_key, key);
	struct mapping *mp = hit ? &b->mappings[(uintptr_t)hit - 1] : NULL;

	if (file < 0 || bid < 0)
		return 0;
	if (!mp || mp->proc != proc || mp->m.filename != file || mp->bias != bias) {
		if (GP_ARRAY_GROW(b->mappings, b->mappings_cap, b->nmappings + 1, 64))
			return 0;
		mp = &b->mappings[b->nmappings++];
		*mp = (struct mapping){ .m = PERFTOOLS__PROFILES__MAPPING__INIT,
					.proc = proc,
					.bias = bias,
					.all_named = true };
		mp->m.id = b->nmappings;
		mp->m.memory_start = f->addr;
		mp->m.memory_limit = f->addr + 1;
		mp->m.filename = file;
		mp->m.build_id = bid;
		if (!hit)
			gp_u64map_put(&b->mapping_by_key, key, (void *)(uintptr_t)b->nmappings);
	}
	if (f->addr < mp->m.memory_start)
		mp->m.memory_start = f->addr;
	if (f->addr >= mp->m.memory_limit)
		mp->m.memory_limit = f->addr + 1;
	mp->m.file_offset = mp->m.memory_start - bias;
	if (!f->function)
		mp->all_named = false;
	return mp->m.id;
}

/* The location of frame i of process proc (s: its stacks); 0 when out of memory. */
static uint64_t frame_location(struct builder *b, size_t proc, const struct gp_stacks *s, __u32 i)
{
	const struct gp_stack_frame *f = &s->frames[i];
	__u64 key = (__u64)proc << 32 | i;
	void *hit = gp_u64map_get(&b->location_by_key, key);
	char label[GP_NAME_BUF];
	struct location *loc;
	uint64_t fid = 0, mid = 0;

	if (hit)
		return (uintptr_t)hit;
	if (f->kind == GP_FRAME_PYTHON) {
		if (!f->function)
			gp_stack_frame_label(f, label, sizeof(label)); /* "[python 0x...]" */
		if (!(fid = function_id(b, f->function ? f->function : label, NULL, f->file)))
			return 0;
	} else {
		if (f->file && !(mid = mapping_id(b, proc, f)))
			return 0;
		/* a frame in a file without a symbol stays an address there, for pprof to symbolize */
		if ((f->function || !f->file) &&
		    !(fid = function_id(b, f->function ? f->function : "[unknown]",
					f->function ? f->symbol : NULL, NULL)))
			return 0;
	}
	loc = new_location(b, key, fid, f->kind == GP_FRAME_PYTHON ? f->line : 0);
	if (!loc)
		return 0;
	loc->l.mapping_id = mid;
	loc->l.address = f->kind == GP_FRAME_PYTHON ? 0 : f->addr; /* a code object is no pc */
	return loc->l.id;
}

static int add_location_id(struct builder *b, uint64_t id)
{
	if (!id || GP_ARRAY_GROW(b->loc_ids, b->loc_ids_cap, b->nloc_ids + 1, 1024))
		return -ENOMEM;
	b->loc_ids[b->nloc_ids++] = id;
	return 0;
}

/* One sample per operation of stack k: its frames leaf first, its totals. */
static int stack_samples(struct builder *b, const struct gp_model *m, size_t proc,
			 const struct gp_stack *k, uint64_t root)
{
	const struct gp_process *p = m->procs[proc];
	char label[GP_NAME_BUF + 64];
	int err = 0;

	for (__u32 j = 0; j < k->nops && !err; j++) {
		const struct gp_stack_op *r = &k->ops[j];
		struct sample *smp;

		if (GP_ARRAY_GROW(b->samples, b->samples_cap, b->nsamples + 1, 256))
			return -ENOMEM;
		smp = &b->samples[b->nsamples];
		*smp = (struct sample){ .loc_at = b->nloc_ids, .proc = proc };
		gp_stack_op_label(m, p, r, label, sizeof(label));
		err = add_location_id(b, named_location(b, label));
		err = err ?: add_location_id(b, named_location(b, gp_apis[r->api].symbol));
		for (unsigned f = 0; k->frame_ids && f < k->nsym && !err; f++)
			err = add_location_id(b,
					      frame_location(b, proc, &p->stacks, k->frame_ids[f]));
		if (!err && !k->nframes)
			err = add_location_id(b, named_location(b, "[stack table full]"));
		else if (!err && k->trunc != GP_TRUNC_NONE)
			err = add_location_id(b, named_location(b, "[truncated]"));
		err = err ?: add_location_id(b, root);
		smp->nloc = b->nloc_ids - smp->loc_at;
		smp->v[GP_W_CALLS] = (int64_t)r->calls;
		smp->v[GP_W_BYTES] = (int64_t)r->bytes;
		smp->v[GP_W_HOST_NS] = (int64_t)r->host_ns;
		if (!err)
			b->nsamples++;
	}
	return err;
}

static int process_samples(struct builder *b, const struct gp_model *m, size_t proc)
{
	const struct gp_process *p = m->procs[proc];
	struct proc_labels *pl = &b->labels[proc];
	char buf[GP_NAME_BUF + 64];
	const struct gp_stack **v;
	uint64_t root;
	size_t n;
	int err = 0;

	v = gp_sorted_stacks(p, &n);
	if (!n)
		return 0;
	if (!v)
		return -ENOMEM;
	gp_stack_root_label(p, buf, sizeof(buf));
	root = named_location(b, buf);
	pl->l[0] = (pb_label)PERFTOOLS__PROFILES__LABEL__INIT;
	pl->l[0].key = str_index(b, "pid");
	pl->l[0].num = p->pid;
	pl->n = 1;
	if (gp_in_container(p)) {
		gp_container_label(p, buf, sizeof(buf));
		pl->l[1] = (pb_label)PERFTOOLS__PROFILES__LABEL__INIT;
		pl->l[1].key = str_index(b, "container");
		pl->l[1].str = str_index(b, buf);
		pl->n = 2;
	}
	if (!root || pl->l[0].key < 0 || pl->l[1].key < 0 || pl->l[1].str < 0)
		err = -ENOMEM;
	for (size_t i = 0; i < n && !err; i++)
		err = stack_samples(b, m, proc, v[i], root);
	free(v);
	return err;
}

/* zlib's gzip stream as protobuf-c's output buffer. */
struct gzip_out {
	ProtobufCBuffer base;
	z_stream z;
	FILE *out;
	int err;
	unsigned char chunk[1 << 16];
};

static void gzip_feed(struct gzip_out *g, const uint8_t *data, size_t len, int flush)
{
	int rc;

	g->z.next_in = (Bytef *)data;
	g->z.avail_in = (uInt)len;
	do {
		g->z.next_out = g->chunk;
		g->z.avail_out = sizeof(g->chunk);
		rc = deflate(&g->z, flush);
		if (rc == Z_STREAM_ERROR) {
			g->err = -EIO;
			return;
		}
		if (fwrite(g->chunk, 1, sizeof(g->chunk) - g->z.avail_out, g->out) !=
		    sizeof(g->chunk) - g->z.avail_out)
			g->err = -(errno ? errno : EIO);
	} while (!g->err && (g->z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END)));
}

static void gzip_append(ProtobufCBuffer *buf, size_t len, const uint8_t *data)
{
	struct gzip_out *g = (struct gzip_out *)buf;

	/* protobuf-c hands small pieces and lengths fit uInt: one deflate per piece */
	if (!g->err)
		gzip_feed(g, data, len, Z_NO_FLUSH);
}

/* The builder's tables as the messages protobuf-c packs (pointer arrays into them). */
static int pack(struct builder *b, const struct gp_model *m, FILE *out)
{
	static const char *const types[GP_W_MAX][2] = { [GP_W_CALLS] = { "calls", "count" },
							[GP_W_BYTES] = { "bytes", "bytes" },
							[GP_W_HOST_NS] = { "host_time",
									   "nanoseconds" } };
	pb_profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	pb_value_type vt[GP_W_MAX], *vtp[GP_W_MAX];
	pb_sample *samples = calloc(b->nsamples + 1, sizeof(*samples));
	void **ptrs = calloc(b->nsamples + b->nmappings + b->nlocations + b->nfunctions + 1,
			     sizeof(*ptrs));
	int64_t comment = str_index(b, "gpuprobed: GPU work by call stack; a sample is a call path "
				       "and its totals, not a timed sample");
	struct gzip_out *g = calloc(1, sizeof(*g));
	size_t at = 0;
	int err = -ENOMEM;

	if (!samples || !ptrs || !g || comment < 0)
		goto out;
	for (int w = 0; w < GP_W_MAX; w++) {
		vt[w] = (pb_value_type)PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
		vt[w].type = str_index(b, types[w][0]);
		vt[w].unit = str_index(b, types[w][1]);
		if (vt[w].type < 0 || vt[w].unit < 0)
			goto out;
		vtp[w] = &vt[w];
	}
	prof.n_sample_type = GP_W_MAX;
	prof.sample_type = vtp;
	prof.default_sample_type = vt[GP_W_CALLS].type;
	prof.n_comment = 1;
	prof.comment = &comment;
	prof.time_nanos = (int64_t)m->session.start_realtime_ns;
	if (m->session.end_mono_ns > m->session.start_mono_ns)
		prof.duration_nanos = (int64_t)(m->session.end_mono_ns - m->session.start_mono_ns);

	prof.sample = (pb_sample **)&ptrs[at];
	for (size_t i = 0; i < b->nsamples; i++, at++) {
		struct sample *s = &b->samples[i];
		struct proc_labels *pl = &b->labels[s->proc];

		samples[i] = (pb_sample)PERFTOOLS__PROFILES__SAMPLE__INIT;
		samples[i].n_location_id = s->nloc;
		samples[i].location_id = &b->loc_ids[s->loc_at];
		samples[i].n_value = GP_W_MAX;
		samples[i].value = s->v;
		for (size_t l = 0; l < pl->n; l++)
			pl->ptrs[l] = &pl->l[l];
		samples[i].n_label = pl->n;
		samples[i].label = pl->ptrs;
		ptrs[at] = &samples[i];
	}
	prof.n_sample = b->nsamples;
	prof.mapping = (pb_mapping **)&ptrs[at];
	for (size_t i = 0; i < b->nmappings; i++, at++) {
		b->mappings[i].m.has_functions = b->mappings[i].all_named;
		ptrs[at] = &b->mappings[i].m;
	}
	prof.n_mapping = b->nmappings;
	prof.location = (pb_location **)&ptrs[at];
	for (size_t i = 0; i < b->nlocations; i++, at++) {
		struct location *loc = &b->locations[i];

		loc->linep = &loc->line;
		loc->l.n_line = loc->has_line;
		loc->l.line = loc->has_line ? &loc->linep : NULL;
		ptrs[at] = &loc->l;
	}
	prof.n_location = b->nlocations;
	prof.function = (pb_function **)&ptrs[at];
	for (size_t i = 0; i < b->nfunctions; i++, at++)
		ptrs[at] = &b->functions[i];
	prof.n_function = b->nfunctions;
	prof.n_string_table = b->nstrings;
	prof.string_table = b->strings;

	g->base.append = gzip_append;
	g->out = out;
	/* windowBits 15 + 16: a gzip header and trailer (mtime 0: the same profile, the same bytes) */
	if (deflateInit2(&g->z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		goto out;
	protobuf_c_message_pack_to_buffer(&prof.base, &g->base);
	if (!g->err)
		gzip_feed(g, NULL, 0, Z_FINISH);
	deflateEnd(&g->z);
	err = g->err;
out:
	free(g);
	free(ptrs);
	free(samples);
	return err;
}

static void builder_release(struct builder *b)
{
	for (size_t i = 0; i < b->nstrings; i++)
		free(b->strings[i]);
	free(b->strings);
	free(b->functions);
	free(b->locations);
	free(b->mappings);
	free(b->samples);
	free(b->loc_ids);
	free(b->labels);
	gp_u64map_clear(&b->string_by_hash, NULL);
	gp_u64map_clear(&b->function_by_key, NULL);
	gp_u64map_clear(&b->location_by_key, NULL);
	gp_u64map_clear(&b->mapping_by_key, NULL);
}

int gp_pprof_write(const struct gp_model *m, FILE *out)
{
	struct builder b = { 0 };
	int err = -ENOMEM;

	b.labels = calloc(m->nprocs + 1, sizeof(*b.labels));
	if (b.labels && str_index(&b, "") == 0) { /* the table's entry 0 is "" */
		err = 0;
		for (size_t i = 0; i < m->nprocs && !err; i++)
			err = process_samples(&b, m, i);
	}
	if (!err)
		err = pack(&b, m, out);
	builder_release(&b);
	return err;
}
