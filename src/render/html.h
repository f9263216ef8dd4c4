/* html.h: the run as one self-contained HTML page (no script, no external
 * file): header, the answer in short, the verdicts with their evidence as
 * tables, where step time goes per rank, step time over the run with its
 * phases, epoch times, a plot per system metric in a grid (downsampled,
 * extremes kept; those all zero named in a line), and the report's tables.
 * Every text from the run is escaped. */
#ifndef TP_RENDER_HTML_H
#define TP_RENDER_HTML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "analyze/page_facts.h"
#include "analyze/summary.h"
#include "render/svg.h"
#include "analyze/verdicts.h"

/* page: what the charts draw, gathered by tp_page_facts_build with the same
 * all. all: every agent's lines and tables, where a run of many agents
 * shows one chart across agents (report.h). False (reason in err) only when
 * memory ran out. */
bool tp_html_write(FILE *out, const tp_summary *s, const tp_verdicts *v, const tp_page_facts *page,
                   bool all, char *err, size_t cap);

/* Runs of one training at several scales (trainprof html --compare): the
 * compare table and bar charts of samples/s, efficiency, time per epoch and
 * energy per sample by world size. */
struct tp_scale_row;
void tp_html_scaling_write(FILE *out, const struct tp_scale_row *rows, size_t n);
/* Its table and charts, for a page of its caller's. */
void tp_html_scaling_body(FILE *out, const struct tp_scale_row *rows, size_t n);

/* Step time by rank and step, as a heatmap of bounded size (nothing for a
 * run of fewer than two ranks). */
struct tp_rank_heatmap;
void tp_html_rank_heatmap(FILE *out, const struct tp_rank_heatmap *h);

/* The page of two runs compared: A's and B's phases as bars, the
 * comparison's text (render/compare.h), escaped, and where their world
 * sizes differ (nrows > 0) the scaling table and charts. */
struct tp_run_compare;
void tp_html_compare_write(FILE *out, const struct tp_run_compare *c, const char *text,
                           const struct tp_scale_row *rows, size_t nrows);

/* Flame graphs (icicles) of the sampled stacks: one per rank and phase and
 * one for the DataLoader workers, the biggest 8; nothing without stacks. */
void tp_html_stacks(FILE *out, const tp_stack_facts *f);
/* The capture windows' operators, kernels and one step's timeline
 * (html_ops.c); nothing without windows. */
void tp_html_ops(FILE *out, const tp_ops_facts *f);

/* "In short" (html_verdicts.c): the steps, their rate, the split of a step
 * and the verdict that leads (report.h's tp_answer_steps, tp_verdicts_main),
 * at the top of the page; then every verdict with its evidence as a table. */
void tp_html_answer(FILE *out, const tp_summary *s, const tp_verdicts *v);
void tp_html_verdicts(FILE *out, const tp_summary *s, const tp_verdicts *v);

/* The pages' shared style sheet. */
extern const char tp_html_style[];

/* The step chart's changes of pace (html_pace.c), for the rank the regimes
 * are of: a note on the group of steps where each begins (after a pause
 * note already there, notes[g] being marks[g]'s text), and every other
 * regime after the first as a shade over its groups (labels: its steps and
 * typical step); returns how many shades. Where the pace drifted, no note,
 * and the first and last quarters of its steps shaded instead. */
void tp_html_regime_marks(const tp_regimes *rg, const tp_step_phases *ph, char (*notes)[96],
                          const char **marks);
size_t tp_html_regime_shades(const tp_regimes *rg, const tp_step_phases *ph, tp_svg_shade *shades,
                             char (*labels)[96]);

#endif
