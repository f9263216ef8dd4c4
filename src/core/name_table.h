/* name_table.h: region names and their ids (1, 2, ...), found by hash
 * (lib/name_index.h, shared with libtrainprof). The sink's: not thread-safe,
 * its owner holds the lock. */
#ifndef TP_CORE_NAME_TABLE_H
#define TP_CORE_NAME_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "name_index.h"

typedef struct tp_name_table {
    char **texts; /* texts[id - 1] */
    size_t len, cap;
    tp_name_index index;
} tp_name_table;

/* text's id, 0 when it has none. */
uint32_t tp_name_table_find(const tp_name_table *t, const char *text);

/* Makes room for one more name (the table as it was when memory ran out:
 * false). tp_name_table_add then cannot fail. */
bool tp_name_table_reserve(tp_name_table *t);

/* Adds text (not in the table, room reserved), taking own (a copy of text
 * the table keeps); returns its id. */
uint32_t tp_name_table_add(tp_name_table *t, const char *text, char *own);

void tp_name_table_free(tp_name_table *t);

#endif
