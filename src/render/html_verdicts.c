/* html_verdicts.c: the html page's answer and verdicts: "In short" at the
 * top (what the run was, the verdict that leads, with its advice), then
 * every verdict, each with its evidence as a small table of named figures. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/html.h"
#include "render/report.h"
#include "render/svg.h"
#include "render/verdict_words.h"
#include "util/json_read.h"

static void evidence_row(void *ctx, const char *key, const char *value)
{
    FILE *out = ctx;
    fputs("<tr><th>", out);
    tp_html_escape(out, key);
    fputs("</th><td>", out);
    tp_html_escape(out, strcmp(value, "null") == 0 ? "-" : value);
    fputs("</td></tr>", out);
}

/* One verdict: its kind, its words, and its evidence as rows of figure and
 * value (the JSON object, verbatim, where it isn't a flat one). */
static void verdict(FILE *out, const tp_summary *s, const tp_verdict *v, bool lead)
{
    char message[TP_VERDICT_MESSAGE_MAX], evidence[TP_VERDICT_EVIDENCE_MAX];
    tp_verdict_message(message, sizeof message, s, v);
    tp_verdict_evidence(evidence, sizeof evidence, s, v);
    fprintf(out, "<div class=\"verdict%s\" data-kind=\"%s\"><p><b>%s</b> ", lead ? " lead" : "",
            tp_verdict_kind_name(v->kind), tp_verdict_kind_name(v->kind));
    tp_html_escape(out, message);
    fputs("</p>", out);
    if (lead)
        fputs("<p class=\"see\">The evidence: under Verdicts.</p>", out);
    else {
        /* the rows go to a buffer first: a malformed object shows verbatim */
        char *rows = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&rows, &len);
        bool flat = mem && tp_json_flat_scalars(evidence, evidence_row, mem);
        if (mem)
            fclose(mem);
        if (flat) {
            fprintf(out, "<table class=\"evidence\">%s</table>", rows);
        } else {
            fputs("<code>", out);
            tp_html_escape(out, evidence);
            fputs("</code>", out);
        }
        free(rows);
    }
    fputs("</div>\n", out);
}

void tp_html_answer(FILE *out, const tp_summary *s, const tp_verdicts *v)
{
    char line[512];
    fputs("<section id=\"answer\"><h2>In short</h2>\n<p>", out);
    if (tp_answer_steps(line, sizeof line, s))
        tp_html_escape(out, line);
    else
        fputs("No training steps found (Timings below show what was timed).", out);
    fputs("</p>\n", out);
    if (v->n == 0)
        fputs("<p>No rule of thumb fired: nothing stands out as the bottleneck.</p>\n", out);
    else
        verdict(out, s, &v->items[tp_verdicts_main(v)], true);
    fputs("</section>\n", out);
}

void tp_html_verdicts(FILE *out, const tp_summary *s, const tp_verdicts *v)
{
    fputs("<h2>Verdicts</h2>\n", out);
    if (!v->n)
        fputs("<p>No rule of thumb fired.</p>\n", out);
    for (size_t i = 0; i < v->n; i++)
        verdict(out, s, &v->items[i], false);
}
