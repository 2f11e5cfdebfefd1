/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * text_clean.c — UTF-8 checking of frame names for the SVG and speedscope
 * writers (text_clean.h): one character at a time, so a bad byte costs one
 * replacement character and the rest of the name survives.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "text/text_clean.h"

size_t gp_text_char_len(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned int cp, min;
	size_t len, i;

	if (s[0] < 0x80)
		return s[0] >= 0x20 && s[0] != 0x7f;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
		min = 0x80;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		cp = s[0] & 0x0f;
		min = 0x800;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07;
		min = 0x10000;
	} else {
		return 0; /* a continuation byte, or a lead byte no valid sequence uses */
	}
	for (i = 1; i < len; i++) {
		/* the NUL terminator is no continuation byte, so this never reads past it */
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe ||
	    cp == 0xffff)
		return 0;
	return len;
}

char *gp_text_clean(const char *s)
{
	size_t n = strlen(s), o = 0;
	/* each rejected byte grows to 3 */
	char *out = malloc(n * 3 + 1);

	if (!out) {
		errno = ENOMEM;
		return NULL;
	}
	while (*s) {
		size_t len = gp_text_char_len(s);

		if (len) {
			memcpy(out + o, s, len);
			o += len;
			s += len;
		} else {
			memcpy(out + o, GP_TEXT_REPLACEMENT, 3);
			o += 3;
			s++;
		}
	}
	out[o] = '\0';
	return out;
}
