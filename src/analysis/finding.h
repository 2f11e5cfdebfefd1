/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * finding.h — a recommendation as plain C data: which rule, which process,
 * the host time a fix would save and how it was estimated, its title and
 * formula in words, its evidence as named values, the call paths behind
 * it, what host time it is about, and where it ranks beside the others.
 * report.json renders it (report/report_doc_advice.c); anything else that
 * reads the model (metrics, SQL) can read it too. docs/recommendations.md
 * defines every rule and its evidence; docs/report-format.md the fields.
 */
#ifndef GP_FINDING_H
#define GP_FINDING_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/*
 * What host time a finding is about (report.json "about"): two findings of one process about the
 * same kind of time claim some of the same nanoseconds, so their savings do not add up.
 */
enum gp_about {
	GP_ABOUT_COPIES = 1u << 0,	/* copy and memset calls */
	GP_ABOUT_SYNCS = 1u << 1,	/* synchronisation calls */
	GP_ABOUT_LAUNCHES = 1u << 2,	/* launch calls */
	GP_ABOUT_ALLOCS = 1u << 3,	/* allocation, free and registration calls */
	GP_ABOUT_NCCL = 1u << 4,	/* NCCL calls */
	GP_ABOUT_OTHER_CALLS = 1u << 5, /* any other traced call */
	GP_ABOUT_OUTSIDE = 1u << 6,	/* the calling threads' time outside traced calls */
	GP_ABOUT_MAX = 7
};

/* The name of each bit of enum gp_about ("copies", "synchronisations", ...). */
extern const char *const gp_about_names[GP_ABOUT_MAX];

/* ---- evidence: named values, in the order the rule gives them ------------------------ */

#define GP_EVIDENCE_MAX 16 /* values of a finding's evidence, or of one of its rows */

enum gp_ev_kind {
	GP_EV_U64,
	GP_EV_S64,
	GP_EV_REAL2, /* shown rounded to 2 decimals */
	GP_EV_STR,   /* a name from the tables (static) */
	GP_EV_BOOL,
	GP_EV_NULL, /* not known */
	GP_EV_ROWS, /* a list of rows, each named values of its own */
};

struct gp_ev_rows;

struct gp_ev_field {
	const char *key; /* static */
	enum gp_ev_kind kind;
	union {
		__u64 u;
		__s64 s;
		double r;
		const char *str; /* NULL: "" */
		bool b;
		struct gp_ev_rows *rows; /* owned */
	};
};

/* Named values (report.json: an object). */
struct gp_fields {
	struct gp_ev_field v[GP_EVIDENCE_MAX];
	unsigned n;
	bool failed; /* a value did not fit, or its rows could not be allocated */
};

/* Rows of named values (report.json: an array of objects). */
struct gp_ev_rows {
	struct gp_fields *v;
	size_t n, cap;
	bool failed;
};

/* ---- a finding ------------------------------------------------------------------------ */

#define GP_SITES_MAX 3 /* call paths kept per finding, the costliest first */

struct gp_call_site {
	char *path; /* "main → step → cudaMemcpy": outermost first, the traced API last (owned) */
	__u64 calls, host_ns;
};

struct gp_stack_op;
/* Which calls of a stack a finding is about (its call sites). */
typedef bool (*gp_advice_site_fn)(const struct gp_stack_op *r);

struct gp_finding {
	const char *id;	      /* the rule: "pageable-copies", "sync-wait", ... */
	__u32 pid;	      /* the process */
	const char *comm;     /* its name (the model's: valid as long as the model) */
	__u64 impact_ns;      /* the host time a fix saves (a leak: 0, memory not time) */
	__u64 wall_ns;	      /* the process's traced wall time (impact_share); 0: unknown */
	const char *estimate; /* "exact", "model", "upper_bound" */
	char title[256];
	char method[768];   /* the formula, with this session's numbers */
	const char *action; /* what to do */
	struct gp_fields evidence;
	struct gp_call_site sites[GP_SITES_MAX];
	unsigned nsites;
	unsigned about; /* enum gp_about: the host time its saving comes from */
	/*
	 * A state that other findings explain (gpu-idle-host-busy: the GPU waits while the host works):
	 * reported as a verdict beside the findings that name its causes, never ranked among them.
	 */
	bool verdict;
	/*
	 * A ranked finding: the ranks (1-based) of the others of its process that claim some of the same
	 * host time (report.json "overlaps"); a verdict: the ranks of those that name its causes
	 * ("explained_by"). Owned.
	 */
	size_t *ranks;
	size_t nranks;
	/* the rule's, read before the finding is kept */
	gp_advice_site_fn site; /* NULL: no call sites */
	bool unconditional;	/* reported whatever its impact (leak, failing-calls) */
};

/* Every finding of a model (gp_advise(), advice.h). */
struct gp_findings {
	struct gp_finding **v; /* ranked: impact_ns descending, then id, then pid */
	size_t n, cap;
	struct gp_finding **verdicts; /* in the order found: processes, then rules */
	size_t nverdicts, vcap;
	bool failed; /* out of memory: the list is incomplete */
};

#endif /* GP_FINDING_H */
