/* downsample.h: a long series reduced for plotting, extremes kept.
 *
 * The time span is cut into buckets; each keeps its minimum and its maximum
 * (with their times), so a spike or a dip survives however long the run.
 * Points come out in time order: at most two per bucket. */
#ifndef TP_ANALYZE_DOWNSAMPLE_H
#define TP_ANALYZE_DOWNSAMPLE_H

#include <stdbool.h>
#include <stddef.h>

/* The buckets of a plotted series (html, and the points stored for it). */
#define TP_PLOT_BUCKETS 500

typedef struct tp_downsampler {
    size_t buckets;
    double span;
    double *min_t, *min_v, *max_t, *max_v;
    bool *used;
} tp_downsampler;

bool tp_downsample_init(tp_downsampler *d, size_t buckets, double span);
void tp_downsample_add(tp_downsampler *d, double t, double v);
/* Writes the points (x, y: room for 2 * buckets) and empties the buckets. */
size_t tp_downsample_take(tp_downsampler *d, double *x, double *y);
void tp_downsample_free(tp_downsampler *d);

#endif
