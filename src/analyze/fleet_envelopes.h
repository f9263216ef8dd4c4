/* fleet_envelopes.h: the metrics of many agents as envelopes, the picture
 * html draws of a fleet: per metric compared across agents (an agent's
 * total, or each device of a per-device metric), in each of TP_PLOT_BUCKETS
 * buckets over the run, the lowest, the median and the highest of its
 * series' means there (a series being its plotted line: downsample.h).
 *
 * Made from lines already drawn (a run that holds every series' points), or
 * straight from the node files of a merge, series by series, so that a fleet
 * of a thousand nodes never holds every series' line at once nor copies its
 * points into the merged file: a merged fleet stores the envelopes
 * (store/envelopes.h) and html reads them back. No words. */
#ifndef TP_ANALYZE_FLEET_ENVELOPES_H
#define TP_ANALYZE_FLEET_ENVELOPES_H

#include <stdbool.h>
#include <stddef.h>

#include "analyze/downsample.h"
#include "store/reader.h"

/* More agents than this and html draws envelopes, not each agent's lines
 * (unless asked for all). */
#define TP_ENVELOPE_AGENTS_MIN 5

typedef struct tp_metric_envelope {
    const char *metric; /* the catalogue's name */
    size_t lines;       /* series it covers */
    tp_envelope e;
} tp_metric_envelope;

typedef struct tp_envelopes {
    tp_metric_envelope *v; /* in the metric catalogue's order */
    size_t n;
} tp_envelopes;

/* The devices of a per-device metric that has no agent total, each of
 * which is compared across agents (render names them). */
typedef enum tp_device_class {
    TP_DEVICE_NONE, /* not per-device, or with an agent total */
    TP_DEVICE_GPU,
    TP_DEVICE_DISK, /* disks' busy share */
    TP_DEVICE_LINK, /* links' speed */
} tp_device_class;
tp_device_class tp_device_class_of(const char *metric);

/* Whether a series takes part in comparisons across agents (report's table,
 * html's charts of many agents): an agent's total ({} labels), or one device
 * of a per-device metric. */
bool tp_series_across_agents(const tp_run_series *series);

/* Whether series gets a plotted line: all but per-core CPU on agents with
 * more than 16 cores. cores_of_agent: that agent's per-core CPU series. */
bool tp_series_plotted(const tp_run_series *series, size_t cores_of_agent);

/* From the stored plots (else the samples) of each node file merged into
 * the run at merged_path, each shifted onto the merged run's clock, over its
 * time line (span seconds). False (reason in err) when a file can't be read
 * or memory runs out. */
bool tp_envelopes_from_files(const char *const *paths, size_t n, const char *merged_path,
                             double span, tp_envelopes *out, char *err, size_t cap);

/* From lines already drawn: line i of series[i] has n[i] points (x, y). */
bool tp_envelopes_from_lines(const tp_run_series *const *series, const double *const *x,
                             const double *const *y, const size_t *n, size_t nlines, double span,
                             tp_envelopes *out);

/* The envelopes a merged fleet stored (store/envelopes.h); none when it
 * stored none. */
bool tp_envelopes_load(tp_run *run, tp_envelopes *out, char *err, size_t cap);

void tp_envelopes_free(tp_envelopes *e);

#endif
