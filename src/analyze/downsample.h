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

/* Many series of one metric as three lines: in each of `buckets` buckets over
 * span seconds, each series' value is the mean of its points there, and the
 * lines are the lowest, the median and the highest of those values, at the
 * bucket's middle. Series i has points (x[i][k], y[i][k]), k < n[i]. */
typedef struct tp_envelope {
    double *x, *low, *median, *high; /* n points each */
    size_t n;
} tp_envelope;

bool tp_envelope_build(const double *const *x, const double *const *y, const size_t *n,
                       size_t nseries, size_t buckets, double span, tp_envelope *out);
/* The two halves of it, for series that come one at a time: one series'
 * means in the buckets (NaN where it has no point), and the lines of nrows
 * such rows (means[row * buckets + bucket]). */
void tp_envelope_row(const double *x, const double *y, size_t n, size_t buckets, double span,
                     double *means);
bool tp_envelope_from_rows(const double *means, size_t nrows, size_t buckets, double span,
                           tp_envelope *out);
void tp_envelope_free(tp_envelope *e);

#endif
