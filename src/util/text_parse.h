/* text_parse.h: allocation-free parsing of /proc and /sys text in place.
 *
 * All functions take a cursor (*p) and the end of the buffer, never read past
 * end, and advance the cursor only on success. Buffers need no terminator. */
#ifndef TP_UTIL_TEXT_PARSE_H
#define TP_UTIL_TEXT_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Skips spaces and tabs (not newlines). */
const char *tp_skip_blanks(const char *p, const char *end);

/* Returns the start of the next line (after '\n'), or end. */
const char *tp_next_line(const char *p, const char *end);

/* Parses an unsigned decimal after optional blanks. False if no digit is found
 * or the value overflows 64 bits. */
bool tp_parse_u64(const char **p, const char *end, uint64_t *out);

/* Parses a signed decimal (optional '-') after optional blanks. */
bool tp_parse_i64(const char **p, const char *end, int64_t *out);

/* A wall time in ns since the epoch, as a run file's meta holds it: the
 * whole text one decimal within 1970 to 2100. False for anything else (a
 * damaged or forged file's), *out then 0. */
bool tp_parse_epoch_ns(const char *text, int64_t *out);

/* Reads the next whitespace-delimited word on the current line. */
bool tp_parse_word(const char **p, const char *end, const char **word, size_t *len);

/* True when the word [w, w+len) equals the C string s. */
bool tp_word_is(const char *w, size_t len, const char *s);

/* Copies the word into dst (NUL-terminated, truncated to cap-1). */
void tp_word_copy(char *dst, size_t cap, const char *w, size_t len);

#endif
