// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * reload_walk — a library replaced by another at the same address while
 * traced: the stacks of calls made through the new one must never be walked
 * with the old one's unwind rows.
 *
 * Rounds (--rounds N, default 40): dlopen libreloada.so or libreloadb.so in
 * turn (reload_lib.c: the same code, frames of another size), call
 * reload_relay(sync_once) --calls times at once (the first within
 * microseconds of the mapping: before a tracer can have looked at it), with
 * --settle-ms N the same calls again N ms later, then dlclose it: the next library is mapped where this one was (the kernel
 * reuses the hole; the reference says when it did not). sync_once makes one
 * cudaStreamSynchronize on the default stream, a call that carries a stack.
 *
 * Reference (--ref FILE, wl.h's, plus "reload"): per round the library, its
 * load address and the functions glibc's backtrace() saw above
 * sync_once (reload_relay, reload_round, main), and every call's count.
 *
 * usage: reload_walk --dir DIR [--rounds N] [--calls N] [wl options]
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <time.h>

#include "wl.h"

#define MAX_ROUNDS 200
#define DEPTH	   16

static struct {
	const char *lib;
	unsigned long base;
	char frames[4][64]; /* the functions above sync_once, innermost first */
	int nframes;
} rounds[MAX_ROUNDS];
static int cur;

static __attribute__((noinline)) void sync_once(void)
{
	void *bt[DEPTH];
	int n;

	wl_count("cudaStreamSynchronize", cudaStreamSynchronize(0));
	wl_stream_work(0, false, WL_SYNC, 0);
	if (rounds[cur].nframes)
		return;
	n = backtrace(bt, DEPTH);
	for (int i = 1; i < n && rounds[cur].nframes < 4; i++) {
		Dl_info di;

		if (!dladdr(bt[i], &di) || !di.dli_sname)
			break;
		snprintf(rounds[cur].frames[rounds[cur].nframes++], 64, "%s", di.dli_sname);
		if (!strcmp(di.dli_sname, "main"))
			break;
	}
}

void reload_round(const char *dir, const char *lib, int calls, int settle_ms);

/* Exported (-rdynamic) so that dladdr names it in the reference. */
__attribute__((noinline)) void reload_round(const char *dir, const char *lib, int calls,
					    int settle_ms)
{
	char path[4096];
	void (*relay)(void (*)(void));
	Dl_info di;
	void *h;

	snprintf(path, sizeof(path), "%s/%s", dir, lib);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		wl_die("dlopen %s: %s", path, dlerror());
	relay = (void (*)(void (*)(void)))dlsym(h, "reload_relay");
	if (!relay || !dladdr((void *)relay, &di))
		wl_die("%s: no reload_relay", path);
	rounds[cur].lib = lib;
	rounds[cur].base = (unsigned long)di.dli_fbase;
	for (int i = 0; i < calls; i++)
		relay(sync_once);
	if (settle_ms) { /* time for a tracer to publish the new mapping: the same calls again */
		struct timespec ts = { settle_ms / 1000, (settle_ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
		for (int i = 0; i < calls; i++)
			relay(sync_once);
	}
	dlclose(h);
	__asm__ volatile("" ::: "memory"); /* not a tail call: this frame is in the stacks */
}

static void write_reload(FILE *f)
{
	fputs(",\n  \"reload\": [", f);
	for (int r = 0; r < cur; r++) {
		fprintf(f, "%s\n    {\"lib\": \"%s\", \"base\": %lu, \"frames\": [", r ? "," : "",
			rounds[r].lib, rounds[r].base);
		for (int i = 0; i < rounds[r].nframes; i++)
			fprintf(f, "%s\"%s\"", i ? ", " : "", rounds[r].frames[i]);
		fputs("]}", f);
	}
	fputs("\n  ]", f);
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	int nrounds = 40, calls = 5, settle_ms = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			dir = argv[++i];
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			nrounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--calls") && i + 1 < argc)
			calls = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--settle-ms") && i + 1 < argc)
			settle_ms = atoi(argv[++i]);
	}
	if (!dir || nrounds < 2 || nrounds > MAX_ROUNDS || calls < 1 || settle_ms < 0)
		wl_die("usage: reload_walk --dir DIR [--rounds 2..%d] [--calls N>0] [--settle-ms N]",
		       MAX_ROUNDS);
	wl_init(argc, argv);
	wl.ref_extra = write_reload;
	wl_begin();
	for (cur = 0; cur < nrounds; cur++)
		reload_round(dir, cur % 2 ? "libreloadb.so" : "libreloada.so", calls, settle_ms);
	wl_end();
	return 0;
}
