/* rank_heatmap.c: see rank_heatmap.h. */
#include "analyze/rank_heatmap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trainprof.h"
#include "util/oom.h"

/* ranks whose step phases are held at once: at least CHUNK_MIN, and an
 * eighth of the ranks, so that a fleet's stored groups are scanned at most
 * eight times (each chunk is one scan of them), memory bound by the eighth */
#define CHUNK_MIN 256

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Puts rank k's step groups (ph) into row's cells. */
static void add_rank(tp_rank_heatmap *h, size_t row, const tp_step_phases *ph)
{
    size_t first = ph->ngroups ? (size_t)ph->first_step[0] : 0;
    double span = (double)ph->nsteps - (double)first;
    if (span <= 0)
        return;
    if ((size_t)span > h->steps)
        h->steps = (size_t)span;
    for (size_t g = 0; g < ph->ngroups; g++) {
        double d = 0; /* own work: every standard phase but communication, and not "other" */
        for (size_t k = 0; k < TP_STEP_PHASES - 1; k++)
            if (strcmp(tp_step_phase_names[k], TP_PHASE_REDUCE_METRICS) != 0)
                d += ph->values[g * TP_STEP_PHASES + k];
        double at = (ph->first_step[g] - (double)first) / span;
        if (!isfinite(d) || !isfinite(at) || at < 0)
            continue;
        size_t col = at >= 1 ? h->cols - 1 : (size_t)(at * (double)h->cols);
        double *cell = &h->step_s[row * h->cols + col];
        if (isnan(*cell) || d > *cell)
            *cell = d;
    }
}

bool tp_rank_heatmap_build(const tp_summary *s, tp_rank_heatmap *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    out->median_s = NAN;
    const tp_timings *t = &s->timings;
    size_t n = 0;
    for (size_t i = 0; i < t->nsteps; i++)
        n += t->steps[i].rank >= 0;
    if (n < 2)
        return true;
    int *ranks = tp_xmalloc(n * sizeof *ranks);
    size_t *skip = tp_xmalloc(n * sizeof *skip);
    n = 0;
    for (size_t i = 0; i < t->nsteps; i++) /* in rank order, as the timings hold them */
        if (t->steps[i].rank >= 0) {
            ranks[n] = t->steps[i].rank;
            skip[n++] = t->steps[i].warmup;
        }
    out->rows = n < TP_HEATMAP_ROWS ? n : TP_HEATMAP_ROWS;
    out->cols = TP_HEATMAP_COLS;
    out->first_rank = tp_xmalloc(out->rows * sizeof *out->first_rank);
    out->last_rank = tp_xmalloc(out->rows * sizeof *out->last_rank);
    out->step_s = tp_xmalloc(out->rows * out->cols * sizeof *out->step_s);
    for (size_t i = 0; i < out->rows * out->cols; i++)
        out->step_s[i] = NAN;
    for (size_t r = 0; r < out->rows; r++)
        out->first_rank[r] = out->last_rank[r] = -1;
    size_t chunk = (n + 7) / 8 > CHUNK_MIN ? (n + 7) / 8 : CHUNK_MIN;
    tp_step_phases *ph = tp_xcalloc(chunk, sizeof *ph);
    bool ok = true;
    for (size_t lo = 0; ok && lo < n; lo += chunk) {
        size_t m = n - lo < chunk ? n - lo : chunk;
        ok = tp_summary_step_phases_of(s, ranks + lo, skip + lo, m, ph, err, cap);
        for (size_t k = 0; k < m; k++) {
            size_t i = lo + k, row = i * out->rows / n;
            if (out->first_rank[row] < 0)
                out->first_rank[row] = ranks[i];
            out->last_rank[row] = ranks[i];
            if (ok)
                add_rank(out, row, &ph[k]);
            tp_step_phases_free(&ph[k]);
        }
    }
    free(ph);
    free(ranks);
    free(skip);
    double *v = tp_xmalloc(out->rows * out->cols * sizeof *v);
    size_t nv = 0;
    for (size_t i = 0; i < out->rows * out->cols; i++)
        if (!isnan(out->step_s[i]))
            v[nv++] = out->step_s[i];
    if (nv) {
        qsort(v, nv, sizeof *v, cmp_double);
        out->median_s = v[nv / 2];
    }
    free(v);
    return ok;
}

void tp_rank_heatmap_free(tp_rank_heatmap *h)
{
    free(h->first_rank);
    free(h->last_rank);
    free(h->step_s);
    memset(h, 0, sizeof *h);
}
