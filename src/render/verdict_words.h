/* verdict_words.h: the verdicts and stragglers' causes in words, and each
 * verdict's evidence as a JSON object: every phrase the rules of thumb say,
 * from the facts analyze/verdicts.h and analyze/ranks.h establish. */
#ifndef TP_RENDER_VERDICT_WORDS_H
#define TP_RENDER_VERDICT_WORDS_H

#include <stddef.h>

#include <stdbool.h>

#include "analyze/model_case.h"
#include "analyze/verdicts.h"

/* Room the words of one verdict take at most (longer is cut). */
#define TP_VERDICT_MESSAGE_MAX 1536

/* "input_bound", "memory_pressure" ...: the kind as report and html name it. */
const char *tp_verdict_kind_name(tp_verdict_kind kind);

/* The verdict in words: what fired, the figures, the one thing to try. */
void tp_verdict_message(char *out, size_t cap, const tp_summary *s, const tp_verdict *v);

/* Shared by verdict_words.c and verdict_evidence.c: "steps" or "run", the
 * span a series' figures are of (the evidence's "over"); and " of node-3"
 * (with the agent's name as JSON in json) when the run has several agents,
 * else "" (and "null"): which machine a system verdict is about. */
const char *tp_verdict_over_key(const tp_series_summary *x);
void tp_verdict_agent_of(const tp_run_inventory *inv, int64_t agent_id, char *of, size_t cap,
                         char *json, size_t jcap);

#endif
