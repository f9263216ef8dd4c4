/* series_table.c: the series of a recording, by (metric, labels). */
#include "core/series_table.h"

#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

long tp_series_table_find(const tp_series_table *t, const char *metric, const char *labels)
{
    for (size_t i = 0; i < t->len; i++)
        if (strcmp(t->items[i].metric, metric) == 0 && strcmp(t->items[i].labels, labels) == 0)
            return (long)i;
    return -1;
}

bool tp_series_table_reserve(tp_series_table *t)
{
    tp_series_entry *p = tp_grow_try(t->items, t->len, &t->cap, sizeof *t->items);
    if (p)
        t->items = p;
    return p != NULL;
}

void tp_series_table_free(tp_series_table *t)
{
    for (size_t i = 0; i < t->len; i++) {
        free(t->items[i].metric);
        free(t->items[i].labels);
    }
    free(t->items);
    *t = (tp_series_table){0};
}
