/* downsample.c: min/max buckets. */
#include "analyze/downsample.h"

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
