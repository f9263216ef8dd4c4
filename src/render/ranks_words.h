/* ranks_words.h: the verdicts across ranks in words: a straggler and its
 * cause, and ranks that mostly wait in communication; each said of the
 * latest pace where it was judged there (analyze/verdicts.h: pace). */
#ifndef TP_RENDER_RANKS_WORDS_H
#define TP_RENDER_RANKS_WORDS_H

#include <stddef.h>

#include "analyze/summary.h"
#include "analyze/verdicts.h"
#include "analyze/run_inventory.h"
#include "core/rank_facts.h"

#define TP_CAUSE_MAX 240 /* room for a straggler's cause in words */

/* Why a straggler is slow: "its input (dataloader_next, to_device): 12.0 ms
 * per step vs 4.0 ms on the median rank; its GPU 3 runs at ..." */
void tp_straggler_cause_text(char *out, size_t cap, const tp_run_inventory *inv,
                             const tp_rank_row *r);

/* straggler: "Rank 2 is a straggler: its own work ... Cause: ..."; judged
 * on the latest pace, "Since step 201, rank 2 is ..." and what the whole
 * run's figures said of it. */
void tp_straggler_words(char *out, size_t cap, const tp_summary *s, const tp_verdict *v);

/* communication_bound: the share of the ranks' time in communication not
 * hidden by compute, and what helps. */
void tp_communication_words(char *out, size_t cap, const tp_verdict *v);

#endif
