/* json_read.h: reading back the small JSON shapes trainprof stores as text
 * in a run file, a flat object of strings (series labels) and an array of
 * strings (meta argv), strictly: anything else, as a crafted or damaged
 * file may hold, is refused rather than passed on. */
#ifndef TP_UTIL_JSON_READ_H
#define TP_UTIL_JSON_READ_H

#include <stdbool.h>

/* Calls fn for each "key": "value" of a flat JSON object of strings, the
 * escapes decoded; false (after the calls for the pairs before) when json
 * is anything else. */
typedef void (*tp_json_pair_fn)(void *ctx, const char *key, const char *value);
bool tp_json_flat_object(const char *json, tp_json_pair_fn fn, void *ctx);

/* The same for each string of a JSON array of strings. */
typedef void (*tp_json_item_fn)(void *ctx, const char *value);
bool tp_json_string_array(const char *json, tp_json_item_fn fn, void *ctx);

#endif
