/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * capture_resolver.h — the resolver's side of a capture. Live, a recording
 * resolver passes each question to the real one (the symbolizer) and writes
 * the answer into the capture (GP_MOP_KERNEL_NAME, GP_MOP_SYMBOL, GP_MOP_PY_FRAME) before the
 * operation that asked. Loading a capture, an answering resolver gives the
 * model the recorded answers: no /proc, no ELF files, another machine is fine.
 */
#ifndef GP_CAPTURE_RESOLVER_H
#define GP_CAPTURE_RESOLVER_H

#include "model/model.h"

/* ---- live: record the answers ---- */
struct gp_recording_resolver {
	struct gp_resolver inner;
	void (*record)(void *ctx, unsigned op, const void *data, size_t len); /* a tap's record */
	void *record_ctx;
};

/* A resolver for the model that asks rr->inner and records through rr->record (rr must outlive it). */
struct gp_resolver gp_recording_resolver(struct gp_recording_resolver *rr);

/* ---- loading: give the recorded answers ---- */
struct gp_answers;

struct gp_answers *gp_answers_new(void); /* NULL on ENOMEM */
void gp_answers_free(struct gp_answers *a);
/* Keeps a GP_MOP_KERNEL_NAME, GP_MOP_SYMBOL or GP_MOP_PY_FRAME payload. 0, -EINVAL (malformed), -ENOMEM. */
int gp_answers_add(struct gp_answers *a, unsigned op, const void *data, size_t len);
/* A resolver answering from a (demangling is done here: it needs no files). */
struct gp_resolver gp_answers_resolver(struct gp_answers *a);

#endif /* GP_CAPTURE_RESOLVER_H */
