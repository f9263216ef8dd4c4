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
#include "render/verdict_evidence.h"
#include "render/verdict_words.h"

/* One verdict: its kind, its words, and its evidence as rows of figure and
 * value (those the run had). */
static void verdict(FILE *out, const tp_summary *s, const tp_verdict *v, bool lead)
{
    char message[TP_VERDICT_MESSAGE_MAX];
    tp_verdict_message(message, sizeof message, s, v);
    fprintf(out, "<div class=\"verdict%s\" data-kind=\"%s\"><p><b>%s</b> ", lead ? " lead" : "",
            tp_verdict_kind_name(v->kind), tp_verdict_kind_name(v->kind));
    tp_html_escape(out, message);
    fputs("</p>", out);
    if (lead)
        fputs("<p class=\"see\">The evidence: under Verdicts.</p>", out);
    else {
        tp_evidence evidence;
        tp_verdict_evidence_of(s, v, &evidence);
        fputs("<table class=\"evidence\">", out);
        for (size_t i = 0; i < evidence.n; i++) {
            const tp_evidence_figure *f = &evidence.v[i];
            char value[96];
            tp_evidence_value_text(value, sizeof value, f);
            if (strcmp(value, "-") == 0)
                continue; /* the run did not have it */
            fputs("<tr><th>", out);
            tp_html_escape(out, f->label);
            fputs("</th><td>", out);
            tp_html_escape(out, value);
            fputs("</td></tr>", out);
        }
        fputs("</table>", out);
    }
    fputs("</div>\n", out);
}

/* The text report's "In short" lines in text (each "  [tag] words",
 * wrapped with "\n    "), a paragraph of class cls each; frees text. */
static void answer_paragraphs(FILE *out, char *text, const char *cls)
{
    for (char *line = text; line && *line;) {
        char *end = strstr(line, "\n  [");
        if (end)
            *end = '\0';
        for (char *p = line; (p = strstr(p, "\n    "));)
            memmove(p, p + 4, strlen(p + 4) + 1), *p = ' ';
        line[strcspn(line, "\n")] = '\0';
        fprintf(out, "<p class=\"%s\">", cls);
        tp_html_escape(out, line + 2);
        fputs("</p>\n", out);
        line = end ? end + 1 : NULL;
    }
    free(text);
}

/* What trainprof's own work cost, as the text report's "In short" says it
 * (report_own.c): every page carries it, an overrun with its [cost] tag. */
static void own_cost_line(FILE *out, const tp_summary *s)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem)
        return;
    tp_report_own_answer(mem, s);
    fclose(mem);
    answer_paragraphs(out, text, "cost");
}

/* What went wrong with the run (deaths, stalls, the stop, changes of
 * pace), as "In short" of the text report says it: a paragraph each. */
static void trouble_lines(FILE *out, const tp_summary *s, const tp_verdicts *v)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem)
        return;
    tp_report_ends_answer(mem, s, v);
    tp_report_course_answer(mem, s);
    tp_report_stop_answer(mem, s);
    tp_report_regimes_answer(mem, s);
    fclose(mem);
    answer_paragraphs(out, text, "trouble");
}

void tp_html_answer(FILE *out, const tp_summary *s, const tp_verdicts *v)
{
    char line[512];
    fputs("<section id=\"answer\"><h2>In short</h2>\n", out);
    trouble_lines(out, s, v);
    fputs("<p>", out);
    if (tp_answer_steps(line, sizeof line, s))
        tp_html_escape(out, line);
    else if (s->inv.facts.package_unloaded)
        tp_html_escape(out, "No training steps found: " TP_PACKAGE_UNLOADED_WORDS);
    else
        fputs("No training steps found (Timings below show what was timed).", out);
    fputs("</p>\n", out);
    bool stalled = false;
    for (size_t i = 0; i < s->stalls.n; i++)
        stalled = stalled || !s->stalls.v[i].ended;
    if (v->n == 0 && stalled)
        fputs("<p>Verdicts on step time are left out: the training stalled (where each rank "
              "waited: the report's Stalled section, under Tables).</p>\n",
              out);
    else if (v->n == 0)
        fputs("<p>No rule of thumb fired: nothing stands out as the bottleneck.</p>\n", out);
    else
        verdict(out, s, &v->items[tp_verdicts_main(v)], true);
    own_cost_line(out, s);
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
