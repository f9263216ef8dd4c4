/* html_scaling.c: the scalability page of `trainprof html --compare`. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/scaling.h"
#include "render/html.h"
#include "render/svg.h"
#include "render/units.h"

typedef struct by_world {
    const tp_scale_row *row;
    char label[48];
} by_world;

static int cmp_world(const void *a, const void *b)
{
    const tp_scale_row *x = ((const by_world *)a)->row, *y = ((const by_world *)b)->row;
    return (x->world > y->world) - (x->world < y->world);
}

/* One bar per run in world-size order; runs without the figure get none. */
static void chart(FILE *out, const by_world *runs, size_t n, const char *title, const char *unit,
                  const char *what, double (*get)(const tp_scale_row *))
{
    const char **labels = calloc(n, sizeof *labels);
    double *values = calloc(n, sizeof *values);
    size_t k = 0;
    for (size_t i = 0; labels && values && i < n; i++) {
        double v = get(runs[i].row);
        if (isnan(v))
            continue;
        labels[k] = runs[i].label;
        values[k++] = v;
    }
    if (k) {
        tp_svg_chart c = {
            .title = title, .x_title = "world size (run)", .y_title = what, .unit = unit};
        const char *const part[] = {what};
        tp_svg_stacked_bars(out, &c, labels, k, part, 1, values, 0);
    }
    free(labels);
    free(values);
}

static double samples_per_s(const tp_scale_row *r) { return r->samples_per_s; }
static double efficiency(const tp_scale_row *r) { return 100 * r->efficiency; }
static double epoch_s(const tp_scale_row *r) { return r->epoch_s; }
static double energy_sample(const tp_scale_row *r) { return r->energy_sample_j; }

static void table(FILE *out, const by_world *runs, size_t n)
{
    fputs("<table><tr><th>run</th><th>world</th><th>epoch time</th><th>samples/s</th>"
          "<th>speed-up</th><th>efficiency</th><th>energy/epoch</th><th>energy/sample</th></tr>\n",
          out);
    for (size_t i = 0; i < n; i++) {
        const tp_scale_row *r = runs[i].row;
        char e[32] = "-", ep[32] = "-", es[32] = "-";
        if (!isnan(r->epoch_s))
            tp_format_duration(e, sizeof e, r->epoch_s);
        if (!isnan(r->energy_epoch_j))
            tp_format_value(ep, sizeof ep, "joules", r->energy_epoch_j);
        if (!isnan(r->energy_sample_j))
            tp_format_value(es, sizeof es, "joules", r->energy_sample_j);
        fputs("<tr><td>", out);
        tp_html_escape(out, r->path);
        fprintf(out,
                "</td><td>%d</td><td>%s</td><td>%.1f</td><td>%.2fx</td><td>%.0f %%</td>"
                "<td>%s</td><td>%s</td></tr>\n",
                r->world, e, r->samples_per_s, r->speedup, 100 * r->efficiency, ep, es);
    }
    fputs("</table>\n", out);
}

void tp_html_scaling_body(FILE *out, const tp_scale_row *rows, size_t n)
{
    by_world *runs = calloc(n ? n : 1, sizeof *runs);
    if (!runs)
        return;
    for (size_t i = 0; i < n; i++) {
        runs[i].row = &rows[i];
        const char *base = strrchr(rows[i].path, '/');
        snprintf(runs[i].label, sizeof runs[i].label, "%d (%.30s)", rows[i].world,
                 base ? base + 1 : rows[i].path);
    }
    qsort(runs, n, sizeof *runs, cmp_world);
    table(out, runs, n);
    chart(out, runs, n, "Samples per second", "", "samples/s", samples_per_s);
    chart(out, runs, n, "Scaling efficiency (100 % = linear)", "percent", "efficiency", efficiency);
    chart(out, runs, n, "Time per epoch", "seconds", "epoch time", epoch_s);
    chart(out, runs, n, "Energy per sample", "joules", "energy per sample", energy_sample);
    free(runs);
}

void tp_html_scaling_write(FILE *out, const tp_scale_row *rows, size_t n)
{
    fprintf(out,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width\"><title>trainprof: scaling "
            "of %zu runs</title><style>%s"
            "table{border-collapse:collapse;font-size:12px}td,th{padding:2px 8px;"
            "border-bottom:1px solid #eee;text-align:right}</style></head><body>\n"
            "<h1>trainprof: scaling of %zu runs</h1>\n<p>Speed-up and efficiency are against "
            "the run with the smallest world size; samples/s are summed over ranks; energy is "
            "the whole job's.</p>\n",
            n, tp_html_style, n);
    tp_html_scaling_body(out, rows, n);
    fputs("</body></html>\n", out);
}
