/* pauses.h: when the training paused, for the html charts.
 *
 * The pause regions (tp_pause_names: evaluate, sanity_check, checkpoint,
 * compile) of every thread, in run time, merged by name where they overlap
 * or touch across threads and ranks (every rank evaluates at once), so a
 * chart can shade each span once. */
#ifndef TP_ANALYZE_PAUSES_H
#define TP_ANALYZE_PAUSES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/reader.h"

typedef struct tp_pause_span {
    const char *name; /* one of tp_pause_names */
    int64_t t0_ns, t1_ns;
} tp_pause_span;

typedef struct tp_pauses {
    tp_pause_span *spans; /* by start */
    size_t n;
} tp_pauses;

bool tp_pauses_build(tp_run *run, tp_pauses *out, char *err, size_t cap);
void tp_pauses_free(tp_pauses *p);

#endif
