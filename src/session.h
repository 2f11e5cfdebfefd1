/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* session.h — run one tracing session described by the options; returns the exit status. */
#ifndef GP_SESSION_H
#define GP_SESSION_H

#include "cli.h"

int gp_session_run(const struct gp_options *o);

#endif
