/* prom_format.h: how recorded metrics are named and written in the
 * Prometheus text exposition format (version 0.0.4).
 *
 * Names follow Prometheus conventions: a trainprof_ prefix, base units
 * (ratios rather than percent, hertz rather than MHz), and counters ending in
 * _total. Rates that trainprof samples (bytes/s, ops/s) are exposed as the
 * counters they integrate to, so PromQL's rate() gives them back at any
 * resolution; energies since the run started are counters too. A metric
 * recorded both in total and per device (cpu, disk, interface) is exposed per
 * device only, as Prometheus asks: sum() or avg() gives the total back. */
#ifndef TP_SERVE_PROM_FORMAT_H
#define TP_SERVE_PROM_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum tp_prom_kind { TP_PROM_GAUGE, TP_PROM_COUNTER } tp_prom_kind;

typedef struct tp_prom_metric {
    char name[96]; /* e.g. trainprof_disk_read_bytes_total */
    char help[256];
    tp_prom_kind kind;
    double scale;   /* a gauge's value times this is the exposed value */
    bool integrate; /* a rate: exposed as its integral over time (a counter) */
} tp_prom_metric;

/* The Prometheus form of a recorded metric (a name of the metric catalogue).
 * False for names the catalogue does not know. */
bool tp_prom_metric_of(const char *recorded, tp_prom_metric *out);

/* Converts a flat JSON labels object ({"gpu":"0"}) into the inside of a
 * Prometheus label set (gpu="0"), escaping backslash, quote and newline.
 * Returns the length written (0 for "{}"); truncates at cap. */
size_t tp_prom_labels(const char *json, char *out, size_t cap);

/* Writes value text for the exposition: integers without a fraction, NaN and
 * infinities in Prometheus' spelling. */
void tp_prom_value(FILE *out, double v);

/* Writes s as a label value (escaped, no quotes around it). */
void tp_prom_escape(FILE *out, const char *s);

#endif
