/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* report_cmd.h — `gpuprobed report CAPTURE [-o DIR]`: every output of a session rebuilt from its capture. */
#ifndef GP_REPORT_CMD_H
#define GP_REPORT_CMD_H

/* argv[0] is "report". Returns the exit status. */
int gp_report_main(int argc, char **argv);

#endif
