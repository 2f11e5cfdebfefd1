/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * flamegraph_svg_script.h — the style sheet and the script that
 * flamegraph_svg.c writes inline into every flame graph (a file that has to
 * open anywhere can load nothing from elsewhere).
 */
#ifndef GP_FLAMEGRAPH_SVG_SCRIPT_H
#define GP_FLAMEGRAPH_SVG_SCRIPT_H

/* Each goes inside a CDATA section: neither contains "]]>". */
extern const char gp_flamegraph_css[];
extern const char gp_flamegraph_js[];

#endif /* GP_FLAMEGRAPH_SVG_SCRIPT_H */
