/* rank_spread.h: the ranks of a run of many, as distributions: for each
 * rank figure per step (step, own work, input, compute, communication,
 * other), its median, p5, p95 and the spread between them, over the ranks;
 * the ranks that stand out, by how far their own work is above the median
 * rank's (stragglers, ranks.h), with those of a node whose every rank is a
 * straggler named as the node instead. A view that grows with the nodes
 * only in what stands out, for the report of thousands of ranks. No words. */
#ifndef TP_ANALYZE_RANK_SPREAD_H
#define TP_ANALYZE_RANK_SPREAD_H

#include <stddef.h>
#include <stdint.h>

#include "core/rank_facts.h"

#define TP_RANKS_LISTED    16 /* more ranks: their distribution, not a line each */
#define TP_RANK_FIGURES    6  /* step, own work, input, compute, comm, other */
#define TP_RANKS_STANDOUTS 5  /* ranks and nodes named */

typedef struct tp_slow_node {
    int64_t agent_id;
    size_t ranks; /* its ranks, all stragglers */
    int first_rank, last_rank;
    double least_excess; /* the least of its ranks' excess (fraction) */
} tp_slow_node;

typedef struct tp_rank_spread {
    size_t ranks, agents;
    /* per figure (tp_rank_figure order): seconds per step over the ranks */
    double p5[TP_RANK_FIGURES], p50[TP_RANK_FIGURES], p95[TP_RANK_FIGURES];
    double min[TP_RANK_FIGURES], max[TP_RANK_FIGURES];
    /* stragglers not on a slow node, the farthest first (indices in rows) */
    size_t standouts[TP_RANKS_STANDOUTS];
    size_t nstandouts, more_standouts; /* and how many more there are */
    tp_slow_node slow_nodes[TP_RANKS_STANDOUTS];
    size_t nslow_nodes, more_slow_nodes;
} tp_rank_spread;

/* The figures' names, in order: "step", "own work", "input", "compute",
 * "comm", "other". */
extern const char *const tp_rank_figure_names[TP_RANK_FIGURES];

/* A row's figures per step, in tp_rank_figure_names' order. */
void tp_rank_figures(const tp_rank_row *row, double out[TP_RANK_FIGURES]);

void tp_rank_spread_build(const tp_ranks *r, tp_rank_spread *out);

#endif
