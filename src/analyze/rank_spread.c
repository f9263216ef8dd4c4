/* rank_spread.c: see rank_spread.h. */
#include "analyze/rank_spread.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/oom.h"

const char *const tp_rank_figure_names[TP_RANK_FIGURES] = {"step",    "own work", "input",
                                                           "compute", "comm",     "other"};

void tp_rank_figures(const tp_rank_row *row, double out[TP_RANK_FIGURES])
{
    double n = row->measured_steps ? (double)row->measured_steps : NAN;
    out[0] = row->window_s / n;
    out[1] = (row->input_s + row->compute_s) / n;
    out[2] = row->input_s / n;
    out[3] = row->compute_s / n;
    out[4] = row->comm_s / n;
    out[5] = row->other_s / n;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The q-quantile of sorted v[0..n) (nearest rank). */
static double quantile(const double *v, size_t n, double q)
{
    size_t k = (size_t)ceil(q * (double)n);
    return v[k ? k - 1 : 0];
}

/* A rank's row index with the key it is sorted by. */
typedef struct keyed {
    double key;
    size_t row;
} keyed;

static int cmp_key(const void *x, const void *y)
{
    const keyed *a = x, *b = y;
    if (a->key != b->key)
        return (a->key > b->key) - (a->key < b->key);
    return (a->row > b->row) - (a->row < b->row);
}

/* The nodes (agents of more than one rank) whose every rank is a straggler,
 * into out, the ranks on them marked in on_slow. */
static void slow_nodes(const tp_ranks *r, keyed *k, bool *on_slow, tp_rank_spread *out)
{
    size_t *order = tp_xmalloc(r->n * sizeof *order);
    for (size_t i = 0; i < r->n; i++)
        k[i] = (keyed){(double)r->rows[i].agent_id, i};
    qsort(k, r->n, sizeof *k, cmp_key);
    for (size_t i = 0; i < r->n; i++)
        order[i] = k[i].row;
    size_t agents = 0;
    for (size_t i = 0; i < r->n;) {
        size_t j = i;
        bool all_slow = true;
        double least = INFINITY;
        int first = r->rows[order[i]].rank, last = first;
        while (j < r->n && r->rows[order[j]].agent_id == r->rows[order[i]].agent_id) {
            const tp_rank_row *row = &r->rows[order[j]];
            all_slow = all_slow && row->straggler;
            least = fmin(least, row->excess);
            first = row->rank < first ? row->rank : first;
            last = row->rank > last ? row->rank : last;
            j++;
        }
        agents++;
        if (all_slow && j - i > 1 && j - i < r->n) { /* a node, and others elsewhere */
            for (size_t m = i; m < j; m++)
                on_slow[order[m]] = true;
            if (out->nslow_nodes < TP_RANKS_STANDOUTS)
                out->slow_nodes[out->nslow_nodes++] =
                    (tp_slow_node){r->rows[order[i]].agent_id, j - i, first, last, least};
            else
                out->more_slow_nodes++;
        }
        i = j;
    }
    out->agents = agents;
    free(order);
}

void tp_rank_spread_build(const tp_ranks *r, tp_rank_spread *out)
{
    memset(out, 0, sizeof *out);
    out->ranks = r->n;
    if (!r->n)
        return;
    double *v = tp_xmalloc(r->n * sizeof *v);
    for (size_t f = 0; f < TP_RANK_FIGURES; f++) {
        size_t n = 0;
        for (size_t i = 0; i < r->n; i++) {
            double fig[TP_RANK_FIGURES];
            tp_rank_figures(&r->rows[i], fig);
            if (isfinite(fig[f]))
                v[n++] = fig[f];
        }
        out->p5[f] = out->p50[f] = out->p95[f] = out->min[f] = out->max[f] = NAN;
        if (!n)
            continue;
        qsort(v, n, sizeof *v, cmp_double);
        out->p5[f] = quantile(v, n, 0.05);
        out->p50[f] = quantile(v, n, 0.50);
        out->p95[f] = quantile(v, n, 0.95);
        out->min[f] = v[0];
        out->max[f] = v[n - 1];
    }
    free(v);
    keyed *k = tp_xmalloc(r->n * sizeof *k);
    bool *on_slow = tp_xcalloc(r->n, sizeof *on_slow);
    slow_nodes(r, k, on_slow, out);
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++) /* the farthest first */
        if (r->rows[i].straggler && !on_slow[i])
            k[n++] = (keyed){-r->rows[i].excess, i};
    qsort(k, n, sizeof *k, cmp_key);
    out->nstandouts = n < TP_RANKS_STANDOUTS ? n : TP_RANKS_STANDOUTS;
    for (size_t i = 0; i < out->nstandouts; i++)
        out->standouts[i] = k[i].row;
    out->more_standouts = n - out->nstandouts;
    free(k);
    free(on_slow);
}
