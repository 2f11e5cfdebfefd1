/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cpu_mix — threads with known scheduling and fault behaviour, each
 * measuring itself, for checking gpuprobed's CPU accounts:
 *   sleepers  nanosleep in a loop: voluntary context switches;
 *   spinners  more busy threads than CPUs: involuntary switches;
 *   toucher   writes one byte in each page of fresh anonymous memory: minor faults;
 *   idle      created before the handshake, blocked until the end (a thread
 *             that lives across the whole traced window).
 * Each worker takes getrusage(RUSAGE_THREAD) and its CPU clock at its start
 * and end, its counters as of a known CLOCK_MONOTONIC instant (the tracer's
 * clock: begin_mono_ns, end_mono_ns), so that what a tracer saw can be cut to
 * the same window (the thread's start-up and exit lie outside it). The main
 * thread takes getrusage(RUSAGE_SELF) and the process CPU clock right after
 * the handshake and after joining the workers (as of known instants too), and its own thread CPU clock
 * just inside those reads (main_window_cpu_ns): what the process's CPU clock counted in the window less
 * that is the workers' whole lives (the idle thread sleeps throughout), start-up and exit included.
 * They are printed as one JSON line before DONE: the reference.
 * It maps the CUDA runtime (one cudaGetDeviceCount) so that gpuprobed attaches.
 *
 * usage: cpu_mix [--sleepers N] [--spinners N] [--spin-ms N] [--pages N] [wl options]
 */
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "wl.h"

enum role { SLEEPER, SPINNER, TOUCHER };

struct worker {
	pthread_t th;
	enum role role;
	long tid;
	struct rusage begin, end;
	long long cpu_begin, cpu_end;
	long long mono_begin, mono_end;
};

static int spin_ms = 300, pages = 4096, sleeps = 40;
static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cv = PTHREAD_COND_INITIALIZER;
static bool idle_stop;
static long idle_tid;

static long long clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * The thread's (who: RUSAGE_THREAD) or the process's (RUSAGE_SELF) counters as of one
 * CLOCK_MONOTONIC instant: read on both sides of the clock, again until no context switch came
 * between the two reads. A switch-out the kernel timestamps before *mono is then counted in *ru,
 * one after it is not: the window is exact in the tracer's clock.
 */
static void usage_at(int who, struct rusage *ru, long long *mono)
{
	struct rusage again;

	for (;;) {
		getrusage(who, ru);
		*mono = clock_ns(CLOCK_MONOTONIC);
		getrusage(who, &again);
		if (again.ru_nvcsw == ru->ru_nvcsw && again.ru_nivcsw == ru->ru_nivcsw)
			return;
	}
}

static void *work(void *arg)
{
	struct worker *w = arg;

	w->tid = syscall(SYS_gettid);
	usage_at(RUSAGE_THREAD, &w->begin, &w->mono_begin);
	w->cpu_begin = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	switch (w->role) {
	case SLEEPER:
		for (int i = 0; i < sleeps; i++) {
			struct timespec ts = { 0, 2 * 1000 * 1000 };

			nanosleep(&ts, NULL);
		}
		break;
	case SPINNER: {
		long long until = clock_ns(CLOCK_MONOTONIC) + (long long)spin_ms * 1000000LL;
		volatile unsigned long x = 0;

		while (clock_ns(CLOCK_MONOTONIC) < until)
			x++;
		break;
	}
	case TOUCHER: {
		long psz = sysconf(_SC_PAGESIZE);
		char *mem = mmap(NULL, (size_t)pages * (size_t)psz, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (mem == MAP_FAILED)
			wl_die("mmap failed");
		madvise(mem, (size_t)pages * (size_t)psz, MADV_NOHUGEPAGE); /* one fault per page */
		for (int i = 0; i < pages; i++)
			mem[(size_t)i * (size_t)psz] = 1;
		munmap(mem, (size_t)pages * (size_t)psz);
		break;
	}
	}
	w->cpu_end = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	usage_at(RUSAGE_THREAD, &w->end, &w->mono_end);
	return NULL;
}

static void *idle(void *arg)
{
	(void)arg;
	idle_tid = syscall(SYS_gettid);
	pthread_mutex_lock(&idle_lock);
	while (!idle_stop)
		pthread_cond_wait(&idle_cv, &idle_lock);
	pthread_mutex_unlock(&idle_lock);
	return NULL;
}

/* One usage object; a thread's also says when its window began and ended (mono_b < 0: none). */
static void print_usage(const char *name, const struct rusage *b, const struct rusage *e,
			long long cpu_b, long long cpu_e, long long mono_b, long long mono_e)
{
	printf("\"%s\": {\"voluntary_switches\": %ld, \"involuntary_switches\": %ld, \"minor_faults\": %ld, "
	       "\"major_faults\": %ld, \"cpu_ns\": %lld",
	       name, e->ru_nvcsw - b->ru_nvcsw, e->ru_nivcsw - b->ru_nivcsw,
	       e->ru_minflt - b->ru_minflt, e->ru_majflt - b->ru_majflt, cpu_e - cpu_b);
	if (mono_b >= 0)
		printf(", \"begin_mono_ns\": %lld, \"end_mono_ns\": %lld", mono_b, mono_e);
	printf("}");
}

int main(int argc, char **argv)
{
	static const char *const roles[] = { "sleeper", "spinner", "toucher" };
	int nsleep = 2, nspin = 5, ndev = 0, n = 0;
	struct worker w[64];
	struct rusage begin, end;
	long long cpu_begin, cpu_end, mono_begin, mono_end, main_begin, main_end;
	pthread_t idle_th;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--sleepers") && i + 1 < argc)
			nsleep = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--spinners") && i + 1 < argc)
			nspin = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--spin-ms") && i + 1 < argc)
			spin_ms = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--pages") && i + 1 < argc)
			pages = atoi(argv[++i]);
	}
	if (nsleep < 0 || nspin < 0 || nsleep + nspin + 1 > 64)
		wl_die("at most 63 workers");
	wl_init(argc, argv);
	cudaGetDeviceCount(&ndev);
	if (pthread_create(&idle_th, NULL, idle, NULL))
		wl_die("pthread_create failed");
	wl_begin();
	usage_at(RUSAGE_SELF, &begin, &mono_begin);
	cpu_begin = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	main_begin = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	for (int i = 0; i < nsleep; i++)
		w[n++].role = SLEEPER;
	for (int i = 0; i < nspin; i++)
		w[n++].role = SPINNER;
	if (pages > 0)
		w[n++].role = TOUCHER;
	for (int i = 0; i < n; i++)
		if (pthread_create(&w[i].th, NULL, work, &w[i]))
			wl_die("pthread_create failed");
	for (int i = 0; i < n; i++)
		pthread_join(w[i].th, NULL);
	main_end = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	cpu_end = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	usage_at(RUSAGE_SELF, &end, &mono_end);

	printf("{\"pid\": %d, \"main_tid\": %d, \"idle_tid\": %ld, \"main_window_cpu_ns\": %lld, ",
	       (int)getpid(), (int)getpid(), idle_tid, main_end - main_begin);
	print_usage("process", &begin, &end, cpu_begin, cpu_end, mono_begin, mono_end);
	printf(", \"workers\": [");
	for (int i = 0; i < n; i++) {
		char name[32];

		snprintf(name, sizeof(name), "%ld", w[i].tid);
		printf("%s{\"role\": \"%s\", ", i ? ", " : "", roles[w[i].role]);
		print_usage(name, &w[i].begin, &w[i].end, w[i].cpu_begin, w[i].cpu_end,
			    w[i].mono_begin, w[i].mono_end);
		printf("}");
	}
	printf("]}\n");
	fflush(stdout);
	wl_end();
	pthread_mutex_lock(&idle_lock);
	idle_stop = true;
	pthread_cond_signal(&idle_cv);
	pthread_mutex_unlock(&idle_lock);
	pthread_join(idle_th, NULL);
	return 0;
}
