/* metric_catalog.h: every metric trainprof records, with its unit and meaning.
 *
 * The single source of truth for metric names: collectors, the run file's
 * metric table, report formatting and docs/metrics.md all follow it. */
#ifndef TP_CORE_METRIC_CATALOG_H
#define TP_CORE_METRIC_CATALOG_H

#include <stddef.h>

typedef enum tp_unit {
    TP_UNIT_PERCENT,
    TP_UNIT_BYTES,
    TP_UNIT_BYTES_PER_S,
    TP_UNIT_OPS_PER_S,
    TP_UNIT_COUNT,
    TP_UNIT_WATTS,
    TP_UNIT_JOULES,
    TP_UNIT_CELSIUS,
    TP_UNIT_MHZ,
} tp_unit;

typedef struct tp_metric_def {
    const char *name;
    tp_unit unit;
    const char *source; /* collector that produces it */
    const char *help;
} tp_metric_def;

/* The catalogue, in report order. */
const tp_metric_def *tp_metric_catalog(size_t *count);

/* Looks a metric up by name; NULL when unknown. */
const tp_metric_def *tp_metric_find(const char *name);

/* The unit's name as stored in the run file ("percent", "bytes_per_s", ...). */
const char *tp_unit_name(tp_unit unit);

#endif
