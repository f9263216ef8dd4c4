/* utf8.h: text from a run file, a command line or a training process made
 * safe to write: valid UTF-8 (every invalid byte becomes U+FFFD), cut on a
 * character boundary, and for terminals with control characters shown
 * rather than obeyed. */
#ifndef TP_UTIL_UTF8_H
#define TP_UTIL_UTF8_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Decodes the character at s (NUL-terminated): its code point in *cp and its
 * length in bytes; an invalid or truncated sequence, an overlong form, a
 * surrogate or a code point past U+10FFFF is one byte of U+FFFD. */
size_t tp_utf8_decode(const unsigned char *s, uint32_t *cp);

/* Writes code point cp as UTF-8 into out (4 bytes at most); returns the
 * length. */
size_t tp_utf8_encode(uint32_t cp, char *out);

/* Copies in into out (cap > 0), NUL-terminated: valid UTF-8, invalid bytes
 * replaced with U+FFFD, cut on a character boundary when it doesn't fit. */
void tp_utf8_clean(char *out, size_t cap, const char *in);

/* Cuts s (valid UTF-8, as tp_utf8_clean makes it) after its first chars
 * characters, on a character boundary: a line kept within a terminal's
 * columns (a character a column: wide ones are rare in names and paths). */
void tp_utf8_cut(char *s, size_t chars);

/* Copies in into out (cap > 0) as tp_utf8_clean does, every control
 * character (newline and tab included: C0, DEL, C1) written as a \xNN
 * escape: text from a training process (a region's name, a frame's function
 * or file) made one line of plain text for every output. */
void tp_text_escape(char *out, size_t cap, const char *in);

/* Writes text for a terminal: valid UTF-8 as tp_utf8_clean makes it, and
 * control characters but newline (ESC, CR, BEL, DEL, C1 ...) as \xNN
 * escapes, so that no text from a run can move the cursor, clear a line
 * or hide what follows. */
void tp_text_write_safe(FILE *out, const char *text);

#endif
