/* labels.h: series labels as small JSON objects, e.g. {"cpu":"3"}.
 *
 * Labels are stored as JSON text in the run file's series table, so SQL users
 * can read them with json_extract(labels, '$.cpu'). */
#ifndef TP_UTIL_LABELS_H
#define TP_UTIL_LABELS_H

#include <stddef.h>

#define TP_LABELS_MAX 256

/* Writes {"key":"value"} into buf (escaped); "{}" when key is NULL. */
void tp_labels1(char *buf, size_t cap, const char *key, const char *value);

/* Writes {"k1":"v1","k2":"v2"} into buf. */
void tp_labels2(char *buf, size_t cap, const char *k1, const char *v1, const char *k2,
                const char *v2);

/* Renders a flat labels object as "k=v,k2=v2" (empty for "{}"). */
void tp_labels_display(const char *json, char *out, size_t cap);

#endif
