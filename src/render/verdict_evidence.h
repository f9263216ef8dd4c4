/* verdict_evidence.h: the figures behind a verdict, each named once and
 * given its unit, written by the JSON writer in JSON (report --json) and as
 * words in the text report and the html page's table. */
#ifndef TP_RENDER_VERDICT_EVIDENCE_H
#define TP_RENDER_VERDICT_EVIDENCE_H

#include <stddef.h>
#include <stdio.h>

#include "analyze/verdicts.h"
#include "util/json_writer.h"

#define TP_EVIDENCE_FIGURES 16

typedef enum tp_figure_unit {
    TP_FIGURE_PLAIN,   /* a count or an index */
    TP_FIGURE_SHARE,   /* of 1 (of step time, of samples) */
    TP_FIGURE_PERCENT, /* 0..100 */
    TP_FIGURE_SECONDS,
    TP_FIGURE_BYTES,
    TP_FIGURE_BYTES_PER_S,
    TP_FIGURE_TEXT,  /* text: a name or a word */
    TP_FIGURE_BOOL,  /* value 0 or 1 */
    TP_FIGURE_AGENT, /* text: the agent's name, "" for none (JSON null) */
} tp_figure_unit;

typedef struct tp_evidence_figure {
    const char *key;   /* its JSON key: "dataloader_next_share" */
    const char *label; /* its words: "dataloader_next, of step time" */
    tp_figure_unit unit;
    int digits;   /* decimals in JSON (numbers) */
    double value; /* NaN or negative where the run did not have it: JSON null, text "-" */
    char text[96];
} tp_evidence_figure;

typedef struct tp_evidence {
    tp_evidence_figure v[TP_EVIDENCE_FIGURES];
    size_t n;
} tp_evidence;

/* The figures behind verdict v of summary s, in the order JSON writes them. */
void tp_verdict_evidence_of(const tp_summary *s, const tp_verdict *v, tp_evidence *out);

/* As one JSON object: {"rank":0,"dataloader_next_share":0.5000,...}. */
void tp_evidence_json(json_writer *w, const tp_evidence *e);

/* As words, "label value" pairs joined by ", " (a figure the run did not
 * have is left out): "rank 0, dataloader_next 50% of step time, ...". */
void tp_evidence_text(FILE *out, const tp_evidence *e);

/* One figure's value in words ("50%", "1.20 ms", "2.00 GiB", "-"). */
void tp_evidence_value_text(char *buf, size_t cap, const tp_evidence_figure *f);

#endif
