/* rank_heatmap.h: each rank's own work per step (input and compute: its
 * step phases but reduce_metrics and "other"; in synchronous training every
 * rank's step lasts as long as the slowest's, so its own work is what tells
 * a straggler) by rank and by step, the straggler picture of a run of many
 * ranks, in bounded size whatever the ranks: at most
 * TP_HEATMAP_ROWS rows (groups of consecutive ranks) by TP_HEATMAP_COLS
 * columns (stretches of each rank's steps after its warm-up, as fractions
 * of them: ranks of a synchronous job run the same steps). A cell holds
 * the slowest mean step of its ranks' step groups in its stretch (a
 * straggler among many ranks stays visible), from the step phases
 * (analyze/step_phases.h: stored, or from the rows). No words. */
#ifndef TP_ANALYZE_RANK_HEATMAP_H
#define TP_ANALYZE_RANK_HEATMAP_H

#include <stdbool.h>
#include <stddef.h>

#include "analyze/summary.h"

#define TP_HEATMAP_ROWS 128
#define TP_HEATMAP_COLS 120

typedef struct tp_rank_heatmap {
    size_t rows, cols;           /* 0 rows: no heatmap (fewer than 2 ranks with steps) */
    int *first_rank, *last_rank; /* per row */
    double *step_s;              /* rows * cols: own work a step, seconds; NaN where no step fell */
    double median_s;             /* the median of the cells that hold one */
    size_t steps;                /* the most steps a rank had after its warm-up */
} tp_rank_heatmap;

/* False (reason in err) when the step phases can't be read;
 * tp_rank_heatmap_free in every case. */
bool tp_rank_heatmap_build(const tp_summary *s, tp_rank_heatmap *out, char *err, size_t cap);
void tp_rank_heatmap_free(tp_rank_heatmap *h);

#endif
