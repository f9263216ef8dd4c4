/* html_compare.c: the page of `trainprof html --compare A.db B.db`: two runs
 * compared (analyze/run_compare.h), the scaling table beside where their
 * world sizes differ. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/scaling.h"
#include "render/compare.h"
#include "render/html.h"
#include "render/svg.h"

/* A side's bar's label: its letter, and the steps of its latest pace where
 * it is compared on them (as the text below says). */
static void bar_label(char *out, size_t cap, const char *letter, const tp_compare_side *side)
{
    if (tp_compare_side_on_latest_pace(side))
        snprintf(out, cap, "%s, steps %zu to %zu", letter, side->first_step, side->last_step);
    else
        snprintf(out, cap, "%s", letter);
}

/* Seconds per step of each phase, A's bar and B's. */
static void phases_chart(FILE *out, const tp_run_compare *c)
{
    char a[64], b[64];
    bar_label(a, sizeof a, "A", &c->a);
    bar_label(b, sizeof b, "B", &c->b);
    const char *const bars[] = {a, b};
    double values[2 * TP_STEP_PHASES];
    for (size_t k = 0; k < TP_STEP_PHASES; k++) {
        values[k] = isfinite(c->a.phase_s[k]) ? c->a.phase_s[k] : 0;
        values[TP_STEP_PHASES + k] = isfinite(c->b.phase_s[k]) ? c->b.phase_s[k] : 0;
    }
    tp_svg_chart chart = {.title = "A step, by phase",
                          .x_title = "run",
                          .y_title = "seconds per step",
                          .unit = "seconds"};
    tp_svg_stacked_bars(out, &chart, bars, 2, tp_step_phase_names, TP_STEP_PHASES, values, 0);
}

void tp_html_compare_write(FILE *out, const tp_run_compare *c, const char *text,
                           const tp_scale_row *rows, size_t nrows)
{
    fprintf(out,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width\"><title>trainprof: two runs "
            "compared</title><style>%s"
            "pre{font-size:12px;white-space:pre-wrap}</style></head><body>\n"
            "<h1>trainprof: two runs compared</h1>\n<p>A: ",
            tp_html_style);
    tp_html_escape(out, c->a.path);
    fputs("<br>B: ", out);
    tp_html_escape(out, c->b.path);
    fputs("</p>\n", out);
    if (c->comparable)
        phases_chart(out, c);
    fputs("<pre id=\"comparison\">", out);
    tp_html_escape(out, text);
    fputs("</pre>\n", out);
    if (nrows) {
        fputs("<h2>At their scales</h2>\n", out);
        tp_html_scaling_body(out, rows, nrows);
    }
    fputs("</body></html>\n", out);
}
