/* series_table.h: the series a recording made, by (metric, labels). The
 * sink's: not thread-safe, its owner holds the lock. Ids are indexes + 1. */
#ifndef TP_CORE_SERIES_TABLE_H
#define TP_CORE_SERIES_TABLE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct tp_series_entry {
    char *metric;
    char *labels;
} tp_series_entry;

typedef struct tp_series_table {
    tp_series_entry *items;
    size_t len, cap;
} tp_series_table;

/* The index of (metric, labels), or -1. */
long tp_series_table_find(const tp_series_table *t, const char *metric, const char *labels);

/* Makes room for one more series; false when memory ran out. */
bool tp_series_table_reserve(tp_series_table *t);

void tp_series_table_free(tp_series_table *t);

#endif
