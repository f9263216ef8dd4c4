/* downsample.c: min/max buckets. */
#include "analyze/downsample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool tp_downsample_init(tp_downsampler *d, size_t buckets, double span)
{
    memset(d, 0, sizeof *d);
    d->buckets = buckets ? buckets : 1;
    d->span = span > 0 ? span : 1;
    d->min_t = calloc(d->buckets, sizeof(double));
    d->min_v = calloc(d->buckets, sizeof(double));
    d->max_t = calloc(d->buckets, sizeof(double));
    d->max_v = calloc(d->buckets, sizeof(double));
    d->used = calloc(d->buckets, sizeof(bool));
    return d->min_t && d->min_v && d->max_t && d->max_v && d->used;
}

void tp_downsample_add(tp_downsampler *d, double t, double v)
{
    double f = t / d->span * (double)d->buckets;
    size_t b = f < 0 ? 0 : f >= (double)d->buckets ? d->buckets - 1 : (size_t)f;
    if (!d->used[b]) {
        d->used[b] = true;
        d->min_t[b] = d->max_t[b] = t;
        d->min_v[b] = d->max_v[b] = v;
        return;
    }
    if (v < d->min_v[b]) {
        d->min_v[b] = v;
        d->min_t[b] = t;
    }
    if (v > d->max_v[b]) {
        d->max_v[b] = v;
        d->max_t[b] = t;
    }
}

size_t tp_downsample_take(tp_downsampler *d, double *x, double *y)
{
    size_t n = 0;
    for (size_t b = 0; b < d->buckets; b++) {
        if (!d->used[b])
            continue;
        bool min_first = d->min_t[b] <= d->max_t[b];
        x[n] = min_first ? d->min_t[b] : d->max_t[b];
        y[n++] = min_first ? d->min_v[b] : d->max_v[b];
        if (d->min_t[b] != d->max_t[b]) {
            x[n] = min_first ? d->max_t[b] : d->min_t[b];
            y[n++] = min_first ? d->max_v[b] : d->min_v[b];
        }
        d->used[b] = false;
    }
    return n;
}

void tp_downsample_free(tp_downsampler *d)
{
    free(d->min_t);
    free(d->min_v);
    free(d->max_t);
    free(d->max_v);
    free(d->used);
    memset(d, 0, sizeof *d);
}

/* The k-th smallest of v[0..n) (k < n), v reordered so that those before
 * it are no larger and those after no smaller (Wirth's selection): a
 * bucket's median across a fleet's series in linear time, not by a sort.
 * No NaN in v. */
static double select_kth(double *v, size_t n, size_t k)
{
    long l = 0, r = (long)n - 1, kk = (long)k;
    while (l < r) {
        double x = v[kk];
        long i = l, j = r;
        do {
            while (v[i] < x)
                i++;
            while (x < v[j])
                j--;
            if (i <= j) {
                double t = v[i];
                v[i] = v[j], v[j] = t;
                i++, j--;
            }
        } while (i <= j);
        if (j < kk)
            l = i;
        if (kk < i)
            r = j;
    }
    return v[kk];
}

void tp_envelope_row(const double *x, const double *y, size_t n, size_t buckets, double span,
                     double *means)
{
    if (span <= 0)
        span = 1;
    for (size_t b = 0; b < buckets; b++)
        means[b] = 0;
    size_t *count = calloc(buckets ? buckets : 1, sizeof *count);
    for (size_t k = 0; count && k < n; k++) {
        double f = x[k] / span * (double)buckets;
        size_t b = f < 0 ? 0 : f >= (double)buckets ? buckets - 1 : (size_t)f;
        means[b] += y[k];
        count[b]++;
    }
    for (size_t b = 0; b < buckets; b++)
        means[b] = count && count[b] ? means[b] / (double)count[b] : NAN;
    free(count);
}

bool tp_envelope_from_rows(const double *means, size_t nrows, size_t buckets, double span,
                           tp_envelope *out)
{
    memset(out, 0, sizeof *out);
    if (buckets == 0 || nrows == 0)
        return true;
    if (span <= 0)
        span = 1;
    double *values = malloc(nrows * sizeof *values);
    out->x = malloc(buckets * sizeof *out->x);
    out->low = malloc(buckets * sizeof *out->low);
    out->median = malloc(buckets * sizeof *out->median);
    out->high = malloc(buckets * sizeof *out->high);
    bool ok = values && out->x && out->low && out->median && out->high;
    for (size_t b = 0; ok && b < buckets; b++) {
        size_t m = 0;
        for (size_t i = 0; i < nrows; i++)
            if (!isnan(means[i * buckets + b]))
                values[m++] = means[i * buckets + b];
        if (!m)
            continue;
        double low = values[0], high = values[0];
        for (size_t i = 1; i < m; i++) {
            low = values[i] < low ? values[i] : low;
            high = values[i] > high ? values[i] : high;
        }
        double upper = select_kth(values, m, m / 2), median = upper;
        if (m % 2 == 0) { /* the lower middle: the highest of those before it */
            double lower = values[0];
            for (size_t i = 1; i < m / 2; i++)
                lower = values[i] > lower ? values[i] : lower;
            median = (lower + upper) / 2;
        }
        out->x[out->n] = ((double)b + 0.5) * span / (double)buckets;
        out->low[out->n] = low;
        out->median[out->n] = median;
        out->high[out->n++] = high;
    }
    free(values);
    if (!ok)
        tp_envelope_free(out);
    return ok;
}

bool tp_envelope_build(const double *const *x, const double *const *y, const size_t *n,
                       size_t nseries, size_t buckets, double span, tp_envelope *out)
{
    memset(out, 0, sizeof *out);
    if (buckets == 0 || nseries == 0)
        return true;
    double *means = malloc(nseries * buckets * sizeof *means); /* [series][bucket] */
    if (!means)
        return false;
    for (size_t i = 0; i < nseries; i++)
        tp_envelope_row(x[i], y[i], n[i], buckets, span, means + i * buckets);
    bool ok = tp_envelope_from_rows(means, nseries, buckets, span, out);
    free(means);
    return ok;
}

void tp_envelope_free(tp_envelope *e)
{
    free(e->x);
    free(e->low);
    free(e->median);
    free(e->high);
    memset(e, 0, sizeof *e);
}
