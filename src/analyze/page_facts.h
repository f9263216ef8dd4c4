/* page_facts.h: what the html page draws beyond the summary's figures,
 * gathered from the run before a word is written:
 *   - a line per plotted series (every series but per-core CPU on machines
 *     with many cores), downsampled to TP_PLOT_BUCKETS buckets over the run
 *     (each bucket's lowest and highest sample); for many agents, their
 *     envelopes instead (analyze/fleet_envelopes.h);
 *   - the span of the agents' training steps, and the training's pauses
 *     (analyze/pauses.h), those of one name closer than a bucket to each
 *     other taken as one shade, with how many they were and their time;
 *   - the ranks whose step time is plotted (every rank with steps when there
 *     are few or `all`, else the notable ones) and their step time by phase;
 *   - every rank's step time by step, as a heatmap (analyze/rank_heatmap.h).
 * From the plots the recorder stored where the summary found them
 * (tp_summary.plots_stored), else from the rows. No words: the renderer
 * names everything. */
#ifndef TP_ANALYZE_PAGE_FACTS_H
#define TP_ANALYZE_PAGE_FACTS_H

#include <stdbool.h>
#include <stddef.h>

#include "analyze/fleet_envelopes.h"
#include "analyze/rank_heatmap.h"
#include "analyze/step_phases.h"
#include "analyze/summary.h"

typedef struct tp_page_line {
    const tp_run_series *series;
    double *x, *y; /* seconds since the start; values */
    size_t n;
} tp_page_line;

typedef struct tp_page_pause {
    const char *name; /* one of tp_pause_names */
    double from, to;  /* seconds since the start */
    size_t count;     /* pauses merged into this shade */
    double busy_s;    /* their time */
} tp_page_pause;

typedef struct tp_page_facts {
    double span; /* the run's time line, seconds */
    /* many agents (TP_ENVELOPE_AGENTS_MIN or more) and not all: the metrics
     * as envelopes (stored by a fleet's merge, else made from the lines),
     * and no lines */
    bool across;
    tp_envelopes envelopes;
    /* all asked of a fleet's merged summary, which keeps the envelopes but
     * not each agent's points: the envelopes drawn, across set */
    bool points_elsewhere;
    tp_page_line *lines; /* in the run's series order */
    size_t nlines;
    bool has_steps; /* steps_from..steps_to: the agents' training steps */
    double steps_from, steps_to;
    tp_page_pause *pauses;
    size_t npauses;
    int *ranks; /* nranks plotted ranks, with their step phases */
    tp_step_phases *phases;
    size_t nranks;
    bool notable_ranks;      /* the ranks are tp_ranks_notable's, not all */
    tp_rank_heatmap heatmap; /* step time by rank and step (every rank) */
} tp_page_facts;

/* False (one-line reason in err) when the run can't be read or memory ran
 * out; tp_page_facts_free in every case. */
bool tp_page_facts_build(const tp_summary *s, bool all, tp_page_facts *out, char *err, size_t cap);
void tp_page_facts_free(tp_page_facts *p);

#endif
