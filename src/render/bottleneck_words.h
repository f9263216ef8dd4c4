/* bottleneck_words.h: `trainprof bottleneck`'s answer (analyze/
 * bottleneck_facts.h) in words and as JSON. */
#ifndef TP_RENDER_BOTTLENECK_WORDS_H
#define TP_RENDER_BOTTLENECK_WORDS_H

#include <stdbool.h>
#include <stdio.h>

#include "analyze/bottleneck_facts.h"
#include "util/json_writer.h"

/* "input_bound", "compute_bound", "balanced": the limit as --json names it. */
const char *tp_limit_name(tp_limit limit);

/* The limit that binds and the one thing to try, one paragraph ending in a
 * newline: the rates, the loader's machine (workers, CPUs, disks) for an
 * input limit, the GPU and the model's precision for a compute limit. r:
 * the three runs (TP_BOTTLENECK_MODES); samples: rates are samples/s. */
void tp_bottleneck_verdict_text(FILE *out, const tp_bottleneck_run *r, bool samples,
                                tp_limit limit);

/* The --json document's "loader" member (judged: the three runs ran) and
 * "model" (where the replay run reported its model). */
void tp_bottleneck_json_details(json_writer *w, const tp_bottleneck_run *r, bool judged);

#endif
