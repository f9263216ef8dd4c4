/* json_writer.h: streaming JSON output to a FILE.
 *
 * The writer tracks nesting so callers never place commas by hand:
 *   json_object_begin(w); json_key(w, "a"); json_int(w, 1); json_object_end(w);
 * Non-finite numbers are written as null (JSON has no NaN). */
#ifndef TP_UTIL_JSON_WRITER_H
#define TP_UTIL_JSON_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

typedef struct json_writer {
    FILE *out;
    int depth;
    bool after_key;
    bool has_items[JSON_MAX_DEPTH];
} json_writer;

void json_init(json_writer *w, FILE *out);
void json_object_begin(json_writer *w);
void json_object_end(json_writer *w);
void json_array_begin(json_writer *w);
void json_array_end(json_writer *w);
void json_key(json_writer *w, const char *key);
void json_string(json_writer *w, const char *s);
/* v as a number (%.15g), null where it is not finite. */
void json_double(json_writer *w, double v);
/* v with digits decimals (%.*f): a figure written as precisely as it was
 * measured; null when not finite. */
void json_double_fixed(json_writer *w, double v, int digits);
void json_int(json_writer *w, int64_t v);
/* key and its number as one field (null where the number is not finite). */
void json_field_double(json_writer *w, const char *key, double v);
void json_bool(json_writer *w, bool v);
void json_null(json_writer *w);
/* Writes an already-serialized JSON value (e.g. a labels object) verbatim. */
void json_raw(json_writer *w, const char *json);

/* Writes s as a JSON string literal (quotes included) into out: valid
 * UTF-8 whatever s holds (invalid bytes as U+FFFD). */
void json_write_escaped(FILE *out, const char *s);

/* The same without the quotes: a part of a literal the caller opens and
 * closes. */
void json_write_escaped_part(FILE *out, const char *s);

/* The same literal into buf, of at most max bytes of s (cut on a character
 * boundary): for JSON built in a buffer. "null" when it doesn't fit cap. */
void tp_json_quote(char *buf, size_t cap, const char *s, size_t max);

#endif
