/* causes_words.h: what changed with the pace (analyze/regimes.h's causes),
 * in words and as JSON: between two regimes of a run (the report) and
 * between two runs (compare). */
#ifndef TP_RENDER_CAUSES_WORDS_H
#define TP_RENDER_CAUSES_WORDS_H

#include <stddef.h>

#include "analyze/regimes.h"
#include "analyze/verdicts.h"
#include "util/json_writer.h"

/* "train_batch went from 20 ms to 38 ms a step, processes not the
 * training's used 48% of the CPUs instead of 3% and ..." into out (empty
 * for none). */
void tp_causes_text(char *out, size_t cap, const tp_regime_cause *causes, size_t n);

/* "causes": [{"kind": ..., "before": ..., "after": ...}, ...] */
void tp_causes_json(json_writer *w, const tp_regime_cause *causes, size_t n);

/* What a verdict judged on the latest pace was judged over, into buf:
 * "since step 401", or, where that pace drifted (its first step is where
 * change points cut a slope, no event), "over steps 401-550"; capital:
 * "Since", "Over". */
void tp_verdict_since(char *buf, size_t cap, const tp_verdict *v, bool capital);

#endif
