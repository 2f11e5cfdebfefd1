/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * text_clean.h — frame names made safe for XML and JSON text. Names come
 * from symbol tables and process memory, so they may hold any byte; an
 * invalid UTF-8 sequence makes an SVG ill-formed and makes jansson refuse
 * the string, so both writers pass names through here.
 */
#ifndef GP_TEXT_CLEAN_H
#define GP_TEXT_CLEAN_H

#include <stddef.h>

/* U+FFFD, what every rejected byte becomes. */
#define GP_TEXT_REPLACEMENT "\xef\xbf\xbd"

/*
 * Length (1-4) of the character that starts at s when it is well-formed
 * UTF-8 and fit for XML 1.0 and JSON as it is; 0 for a byte to replace
 * (a stray or overlong sequence, a surrogate, U+FFFE/U+FFFF, a control
 * character or DEL). s must not point at the terminating NUL.
 */
size_t gp_text_char_len(const char *s);

/* A malloc'd copy of s with every rejected byte replaced by U+FFFD. NULL + errno. */
char *gp_text_clean(const char *s);

#endif /* GP_TEXT_CLEAN_H */
