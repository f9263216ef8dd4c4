/* rank_compare.h: ranks against each other, from their parts (ranks.h):
 * the median rank's parts, each rank's excess of own work (input + compute
 * per step) over it, the stragglers and what makes each slow (as facts:
 * core/rank_facts.h; render/verdict_words.h says them), and which ranks a
 * run of many shows in detail. */
#ifndef TP_ANALYZE_RANK_COMPARE_H
#define TP_ANALYZE_RANK_COMPARE_H

#include <stddef.h>

#include "core/rank_facts.h"

#define TP_STRAGGLER_EXCESS     0.10
#define TP_STRAGGLER_STEP_SHARE 0.02

/* The ranks shown in detail (html's step-time plots, report's per-rank
 * tables) when a run has more than this many. */
#define TP_NOTABLE_RANKS 8

/* The medians of ranks' parts, each rank's excess over them, and the
 * stragglers with their causes. */
void tp_ranks_compare(tp_ranks *out);

/* Per-step seconds of a row's own work (input + compute). */
double tp_rank_own_per_step(const tp_rank_row *r);

/* When r has more than TP_NOTABLE_RANKS ranks, writes the ranks worth a
 * closer look into out (room for TP_NOTABLE_RANKS), in rank order: the
 * TP_NOTABLE_RANKS - 2 with the most own work per step (stragglers first),
 * the median rank and the rank with the least; returns how many. Returns 0
 * (show them all) when there are no more. */
size_t tp_ranks_notable(const tp_ranks *r, int *out);

#endif
