/* verdict_facts.h: the facts the verdicts' unit tests make by hand, not
 * recorded: a one-agent run of one rank (0) as the summary holds it, and
 * the helpers that fill it and ask for its verdicts (test_verdicts.c,
 * test_verdicts_gpu.c). */
#ifndef TP_TESTS_VERDICT_FACTS_H
#define TP_TESTS_VERDICT_FACTS_H

#include <stdbool.h>
#include <stddef.h>

#include "analyze/summary.h"
#include "analyze/verdicts.h"

#define MAX_ROWS   16
#define MAX_SERIES 16

/* A one-agent run of one rank (0), as the summary holds it. */
typedef struct facts {
    tp_run run;
    tp_run_agent agent;
    tp_run_meta meta[8];
    tp_run_gpu gpu;
    tp_run_series series[MAX_SERIES];
    tp_series_summary items[MAX_SERIES];
    tp_timing_row rows[MAX_ROWS];
    tp_step_row steps;
    tp_stall stall;
    tp_summary s;
} facts;

/* A run of 100 steps of 10 ms, no series, no phases (free with facts_free). */
facts *facts_new(void);

/* Each of rows[0..n) measured over all of its steps (measured_steps =
 * steps), as a rank with no warm-up, capture window or stall is. */
void measure_all(tp_rank_row *rows, size_t n);
void facts_free(facts *f);

/* The summary's inventory taken again from the run as the test has made it
 * (render/ reads the run through it). */
void take_inventory(facts *f);

/* Rank 0's phase name takes share of its step time (host), device of it on
 * the GPU (0: none timed). */
void phase(facts *f, const char *name, double share, double device);

/* A series of agent 1 whose figures over the steps (and the run) are p50
 * (median), mean and max. */
void series(facts *f, const char *metric, const char *labels, double p50, double mean, double max);

/* A metadata row of the run (key and value are the caller's). */
void meta(facts *f, const char *key, const char *value);

/* The verdicts of kind, counted; *first: the first of them. */
size_t verdicts_of(const facts *f, tp_verdict_kind kind, tp_verdict *first);

/* The run's one GPU (index 0, 80 GiB) on agent 1. */
void one_gpu(facts *f);

/* The verdict of kind with its words; found: whether there was one. */
bool message_of(facts *f, tp_verdict_kind kind, char *words, size_t cap);

#endif
