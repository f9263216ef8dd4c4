/* html_stacks.c: the html page's flame graphs of the sampled stacks: an
 * icicle (the outermost frame on top) per rank and phase, and one for the
 * DataLoader workers, in SVG, hover text by <title>. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "render/html.h"
#include "render/report.h"
#include "render/svg.h"

#define WIDTH      880.0
#define ROW        17.0
#define GROUPS_MAX 8    /* icicles drawn, biggest first */
#define CHAR_WIDTH 6.4  /* of the 11px labels: a label fits in width / CHAR_WIDTH chars */
#define LABEL_MIN  30.0 /* narrower boxes go unlabelled (their title still tells) */

/* A warm colour per function, the same for the same name on every graph. */
static void color_of(char *buf, size_t cap, const char *function)
{
    unsigned h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)function; *p; p++)
        h = (h ^ *p) * 16777619u;
    snprintf(buf, cap, "hsl(%u,%u%%,%u%%)", 10 + h % 45, 65 + (h >> 8) % 25, 55 + (h >> 16) % 15);
}

/* The box's label: as much of the function's name as fits. */
static void label(FILE *out, const char *function, double width)
{
    size_t room = (size_t)(width / CHAR_WIDTH), len = strlen(function);
    if (room < 3)
        return;
    char text[256];
    if (len <= room) {
        snprintf(text, sizeof text, "%s", function);
    } else {
        size_t keep = room - 2 < sizeof text - 4 ? room - 2 : sizeof text - 4;
        while (keep > 0 && ((unsigned char)function[keep] & 0xC0) == 0x80)
            keep--; /* not inside a character */
        snprintf(text, sizeof text, "%.*s..", (int)keep, function);
    }
    tp_html_escape(out, text);
}

static void icicle(FILE *out, const tp_stack_facts *f, const tp_stack_group *g)
{
    double height = ROW * g->flame_depth + 4;
    fprintf(out, "<svg viewBox=\"0 0 %.0f %.0f\" width=\"100%%\" role=\"img\" class=\"flame\">\n",
            WIDTH, height);
    for (size_t i = 0; i < g->nflame; i++) {
        const tp_flame_rect *r = &g->flame[i];
        const char *function = tp_stack_facts_function(f, r->frame);
        char fill[40];
        color_of(fill, sizeof fill, function);
        double x = r->x * WIDTH, w = r->width * WIDTH, y = r->depth * ROW;
        fprintf(out,
                "<g><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
                "stroke=\"#fff\" stroke-width=\"0.5\"/><title>",
                x, y, w, ROW - 1, fill);
        tp_html_escape(out, function);
        fputs(" (", out);
        tp_html_escape(out, tp_stack_facts_file(f, r->frame));
        fprintf(out, ":%d): %llu samples, %.1f%%</title>", r->line, (unsigned long long)r->samples,
                100.0 * r->width);
        if (w >= LABEL_MIN) {
            fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"flame-label\">", x + 3, y + ROW - 5);
            label(out, function, w - 6);
            fputs("</text>", out);
        }
        fputs("</g>\n", out);
    }
    fputs("</svg>\n", out);
}

void tp_html_stacks(FILE *out, const tp_stack_facts *f)
{
    if (!f->n)
        return;
    fputs("<h2>Inside the phases</h2>\n<p>Flame graphs of the sampled Python stacks "
          "(outermost frame on top, width: share of the samples; hover for the function, "
          "its file and line): what the code was doing while each thread was in a phase.</p>\n",
          out);
    /* the biggest groups with an icicle, phases and workers (not the idle) */
    const tp_stack_group *shown[GROUPS_MAX];
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++) {
        const tp_stack_group *g = &f->groups[i];
        if (!g->nflame || (!g->phase && !g->workers))
            continue;
        size_t at = n < GROUPS_MAX ? n++ : GROUPS_MAX;
        while (at > 0 && shown[at - 1]->samples < g->samples) {
            if (at < GROUPS_MAX)
                shown[at] = shown[at - 1];
            at--;
        }
        if (at < GROUPS_MAX)
            shown[at] = g;
    }
    for (size_t k = 0; k < n; k++) {
        const tp_stack_group *best = shown[k];
        fputs("<figure><div class=\"chart-title\">", out);
        if (best->rank >= 0)
            fprintf(out, "rank %d, ", best->rank);
        if (best->workers)
            fputs("DataLoader workers", out);
        else
            tp_html_escape(out, best->phase);
        if (best->within) {
            fputs(", inside ", out);
            tp_html_escape(out, best->within);
        } else if (!best->borrowed && tp_region_within_find(&f->withins, best->phase))
            fputs(", outside the phases", out);
        fprintf(out, " (%llu samples", (unsigned long long)best->samples);
        if (best->borrowed)
            fprintf(out, ", %.0f%% in regions of yours inside it",
                    100.0 * (double)best->borrowed / (double)best->samples);
        if (best->known)
            fprintf(out, ", %.0f%% on a CPU", 100.0 * (double)best->on_cpu / (double)best->known);
        if (tp_stack_group_blocked_said(best))
            fprintf(out, ", %.0f%% waiting on storage",
                    100.0 * (double)best->blocked / (double)best->known);
        fputs(")</div>\n", out);
        icicle(out, f, best);
        fputs("</figure>\n", out);
    }
}
