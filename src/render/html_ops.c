/* html_ops.c: the html page's "Inside the steps": the capture windows'
 * operators per phase (the seed's table), the kernels and the operators
 * that launched them, the GPU's idle time, and one captured step as a
 * timeline in SVG (the step thread's regions above the operators above each
 * GPU stream), hover text by <title>. */
#include <stdio.h>
#include <string.h>

#include "analyze/ops.h"
#include "render/html.h"
#include "render/kernel_names.h"
#include "render/svg.h"

#define WIDTH    880.0
#define LABEL_W  230.0
#define LANE_H   20.0
#define OPS_ROWS 8

static void color_of(char *buf, size_t cap, const char *name)
{
    unsigned h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 16777619u;
    snprintf(buf, cap, "hsl(%u,55%%,%u%%)", 180 + h % 120, 55 + (h >> 8) % 20);
}

static void timeline(FILE *out, const tp_ops_facts *f)
{
    if (!f->nboxes || f->step_s <= 0)
        return;
    double height = LANE_H * (double)f->nlanes + 24;
    fprintf(out,
            "<p>One captured step (%.2f ms): the step thread's regions, the outermost operators "
            "of each profiler thread, and each GPU stream's kernels.</p>\n"
            "<svg width=\"%.0f\" height=\"%.0f\" class=\"ops-timeline\" "
            "xmlns=\"http://www.w3.org/2000/svg\" font-size=\"11\">\n",
            f->step_s * 1e3, WIDTH, height);
    for (size_t l = 0; l < f->nlanes; l++) {
        fprintf(out, "<text x=\"2\" y=\"%.1f\">", LANE_H * (double)l + 14);
        tp_html_escape(out, f->lanes[l]);
        fputs("</text>\n", out);
    }
    double scale = (WIDTH - LABEL_W - 4) / f->step_s;
    for (size_t i = 0; i < f->nboxes; i++) {
        const struct tp_ops_box *b = &f->boxes[i];
        double x = LABEL_W + b->t0_s * scale, w = (b->t1_s - b->t0_s) * scale;
        char color[48];
        color_of(color, sizeof color, b->name);
        fprintf(out,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\" fill=\"%s\">"
                "<title>",
                x, LANE_H * (double)b->lane + 2, w < 0.5 ? 0.5 : w, LANE_H - 4, color);
        tp_html_escape(out, b->name);
        fprintf(out, " %.3f ms</title></rect>\n", (b->t1_s - b->t0_s) * 1e3);
    }
    fprintf(out,
            "<text x=\"%.0f\" y=\"%.0f\">0</text><text x=\"%.0f\" y=\"%.0f\" "
            "text-anchor=\"end\">%.2f ms</text>\n</svg>\n",
            LABEL_W, height - 4, WIDTH - 4, height - 4, f->step_s * 1e3);
}

static void phase_table(FILE *out, const tp_ops_facts *f, int rank, const char *phase, int steps)
{
    double phase_s = tp_ops_phase_time_s(f, rank, phase);
    fputs("<h3>", out);
    tp_html_escape(out, *phase ? phase : "(no phase)");
    fprintf(out,
            ": %.2f ms a step</h3>\n<table><tr><th>operator</th><th>calls</th>"
            "<th>CPU total ms</th><th>CPU self ms</th><th>device ms</th></tr>\n",
            steps ? phase_s * 1e3 / steps : 0.0);
    int rows = 0;
    for (size_t i = 0; i < f->nops && rows < OPS_ROWS; i++) {
        const tp_op_fact *o = &f->ops[i];
        if (o->rank != rank || o->phase != phase)
            continue;
        rows++;
        fputs("<tr><td>", out);
        tp_html_escape(out, o->name);
        fprintf(out, "%s</td><td>%llu</td><td>%.2f</td><td>%.2f</td><td>%.2f</td></tr>\n",
                o->range ? " (range)" : "", (unsigned long long)o->calls, o->cpu_total_s * 1e3,
                o->cpu_self_s * 1e3, o->device_total_s * 1e3);
    }
    fputs("</table>\n", out);
}

void tp_html_ops(FILE *out, const tp_ops_facts *f)
{
    if (!f->nops)
        return;
    int rank = f->ops[0].rank, steps = 0;
    for (size_t i = 0; i < f->nwindows; i++)
        if (f->windows[i].rank == rank && !f->windows[i].skipped)
            steps += f->windows[i].steps;
    fprintf(out,
            "<h2>Inside the steps</h2>\n<p>PyTorch's profiler in %zu capture window%s "
            "(%d steps of %s; their steps are left out of the step figures).</p>\n",
            f->nwindows, f->nwindows == 1 ? "" : "s", steps,
            rank >= 0 ? "the first rank" : "the training");
    timeline(out, f);
    const char *shown[16];
    size_t nshown = tp_ops_phases_by_time(f, rank, shown, 16);
    for (size_t p = 0; p < nshown; p++)
        phase_table(out, f, rank, shown[p], steps);
    const tp_kernel_fact *rows[10];
    char column[10][160];
    size_t n = tp_rank_kernels(f, rank, 10, rows, column, 100);
    for (size_t i = 0; i < n; i++) {
        const tp_kernel_fact *k = rows[i];
        if (!i)
            fputs("<h3>Kernels</h3>\n<table><tr><th>kernel</th><th>calls</th><th>device ms</th>"
                  "<th>launched by</th></tr>\n",
                  out);
        char plain[1024];
        tp_kernel_demangled(plain, sizeof plain, k->name);
        fputs("<tr><td title=\"", out); /* the whole name, hovered */
        tp_html_escape(out, plain);
        fputs("\">", out);
        tp_html_escape(out, column[i]);
        fprintf(out, "</td><td>%llu</td><td>%.2f</td><td>", (unsigned long long)k->calls,
                k->device_s * 1e3);
        tp_html_escape(out, *k->op ? k->op : "?");
        fputs("</td></tr>\n", out);
    }
    if (n)
        fputs("</table>\n", out);
}
