/* mark_kind.h: a mark's kind as the run file holds it. Schema 7 stores the
 * number (core/batch.h's TP_MARK_*, the ring's event kinds); schema 2 to 6
 * stored a word ('step', 'epoch', 'samples', 'step_end'), and a file that
 * `summarize` brought to 7 keeps its words. Readers take either, by the
 * value's own type; a kind neither knows is read as a step, as before. */
#ifndef TP_STORE_MARK_KIND_H
#define TP_STORE_MARK_KIND_H

#include <sqlite3.h>
#include <string.h>

#include "core/batch.h"

static inline int tp_mark_kind_column(sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_INTEGER) {
        int k = sqlite3_column_int(st, col);
        return k == TP_MARK_EPOCH || k == TP_MARK_SAMPLES || k == TP_MARK_STEP_END ? k
                                                                                   : TP_MARK_STEP;
    }
    const char *word = (const char *)sqlite3_column_text(st, col);
    return !word                           ? TP_MARK_STEP
           : strcmp(word, "epoch") == 0    ? TP_MARK_EPOCH
           : strcmp(word, "samples") == 0  ? TP_MARK_SAMPLES
           : strcmp(word, "step_end") == 0 ? TP_MARK_STEP_END
                                           : TP_MARK_STEP;
}

/* SQL in merge.c, reader_marks.c and schema.c (the marks view) spells
 * the numbers out. */
_Static_assert(TP_MARK_STEP == 3 && TP_MARK_EPOCH == 4 && TP_MARK_SAMPLES == 6 &&
                   TP_MARK_STEP_END == 9,
               "TP_MARK_KIND_AS_NUMBER_SQL spells the numbers out");

#endif
