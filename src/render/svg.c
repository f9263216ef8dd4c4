/* svg.c: line charts and stacked bars as inline SVG. */
#include "render/svg.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "trainprof.h"

#include "render/units.h"
#include "util/utf8.h"

#define W      860.0
#define H      260.0
#define LEFT   80.0
#define RIGHT  20.0
#define TOP    36.0
#define BOTTOM 70.0

static const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

const char *tp_svg_color(size_t n) { return palette[n % (sizeof palette / sizeof palette[0])]; }

/* Every chart's colour of a step phase, and of the ranks' parts that hold
 * them: loading in blues, computing in green and its neighbours, the
 * collectives in red, the rest in grey. */
static const struct {
    const char *name, *color;
} phase_colors[] = {
    {TP_PHASE_DATALOADER_NEXT, "#1f77b4"},
    {"input", "#1f77b4"},
    {TP_PHASE_TO_DEVICE, "#17becf"},
    {TP_PHASE_TRAIN_BATCH, "#2ca02c"},
    {"compute", "#2ca02c"},
    {TP_PHASE_STEP_LR_SCHEDULERS, "#bcbd22"},
    {TP_PHASE_FROM_DEVICE, "#9467bd"},
    {TP_PHASE_REDUCE_METRICS, "#d62728"},
    {"communication", "#d62728"},
    {"other", "#7f7f7f"},
};

const char *tp_svg_part_color(const char *label, size_t n)
{
    for (size_t i = 0; label && i < sizeof phase_colors / sizeof phase_colors[0]; i++)
        if (strcmp(label, phase_colors[i].name) == 0)
            return phase_colors[i].color;
    return tp_svg_color(n);
}

void tp_html_escape(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        uint32_t cp;
        p += tp_utf8_decode(p, &cp);
        switch (cp) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default:
            if ((cp < 0x20 && cp != '\n' && cp != '\t') || (cp >= 0x7f && cp < 0xa0)) {
                fprintf(out, "\\x%02x", (unsigned)cp); /* not allowed in HTML text */
            } else {
                char buf[4];
                fwrite(buf, 1, tp_utf8_encode(cp, buf), out);
            }
        }
    }
}

/* A round step for about 5 ticks up to max. */
static double nice_step(double max)
{
    if (max <= 0)
        return 1;
    double raw = max / 5, mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

static void text(FILE *out, double x, double y, const char *anchor, const char *extra,
                 const char *s)
{
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s>", x, y, anchor, extra);
    tp_html_escape(out, s);
    fputs("</text>", out);
}

static void open_chart(FILE *out, const tp_svg_chart *c, double height)
{
    fprintf(out,
            "<figure class=\"chart\"><svg xmlns=\"http://www.w3.org/2000/svg\" "
            "viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\">",
            W, height, W, height);
    fputs("<title>", out);
    tp_html_escape(out, c->title);
    fputs("</title>", out);
    text(out, W / 2, 20, "middle", " class=\"chart-title\"", c->title);
}

static void legend(FILE *out, const char *const *labels, size_t n, double y)
{
    double x = LEFT;
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"%s\"/>", x,
                y - 9, tp_svg_part_color(labels[i], i));
        text(out, x + 14, y, "start", " class=\"legend\"", labels[i]);
        x += 24 + 7.0 * (double)strlen(labels[i]);
        if (x > W - 120 && i + 1 < n) {
            x = LEFT;
            y += 14;
        }
    }
}

static void y_axis(FILE *out, const tp_svg_chart *c, double ymax, double plot_h)
{
    double step = nice_step(ymax);
    char prev[32] = "";
    for (double v = 0; v <= ymax * 1.0001; v += step) {
        double y = TOP + plot_h - v / ymax * plot_h;
        char label[32];
        tp_format_value(label, sizeof label, c->unit, v);
        fprintf(out, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>", LEFT,
                W - RIGHT, y, y);
        if (strcmp(label, prev) != 0) /* whole-unit scales: no repeated labels */
            text(out, LEFT - 6, y + 4, "end", " class=\"tick\"", label);
        snprintf(prev, sizeof prev, "%s", label);
    }
    fprintf(out,
            "<text class=\"axis-title\" transform=\"translate(14 %.1f) rotate(-90)\" "
            "text-anchor=\"middle\">",
            TOP + plot_h / 2);
    tp_html_escape(out, c->y_title);
    fputs("</text>", out);
}

/* A shaded span [x0, x1) of a plot plot_h high, named by label (its hover). */
static void shade_rect(FILE *out, double x0, double x1, double plot_h, const char *label)
{
    fprintf(out,
            "<rect class=\"shade\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">"
            "<title>",
            x0, (double)TOP, fmax(x1 - x0, 1), plot_h);
    tp_html_escape(out, label ? label : "");
    fputs("</title></rect>", out);
}

void tp_svg_line_chart(FILE *out, const tp_svg_chart *c, const tp_svg_line *lines, size_t n)
{
    double xmax = 0, ymax = 0; /* a point that is not a finite number is not drawn */
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < lines[i].n; k++)
            if (isfinite(lines[i].x[k]) && isfinite(lines[i].y[k])) {
                xmax = fmax(xmax, lines[i].x[k]);
                ymax = fmax(ymax, lines[i].y[k]);
            }
    if (!isfinite(xmax * 2) || !isfinite(ymax * 2)) /* 1e308 drawn to scale is no chart */
        xmax = ymax = 0;
    if (strcmp(c->unit, "percent") == 0)
        ymax = fmax(ymax, 100);
    double ystep = nice_step(ymax > 0 ? ymax : 1);
    ymax = ystep * ceil((ymax > 0 ? ymax : 1) / ystep);
    if (xmax <= 0)
        xmax = 1;
    double plot_h = H - TOP - BOTTOM, plot_w = W - LEFT - RIGHT;
    open_chart(out, c, H);
    y_axis(out, c, ymax, plot_h);
    double xstep = nice_step(xmax);
    for (double v = 0; v <= xmax * 1.0001; v += xstep) {
        char label[32];
        tp_format_duration(label, sizeof label, v);
        text(out, LEFT + v / xmax * plot_w, TOP + plot_h + 16, "middle", " class=\"tick\"", label);
    }
    text(out, LEFT + plot_w / 2, TOP + plot_h + 34, "middle", " class=\"axis-title\"", c->x_title);
    if (c->band_to > c->band_from && c->band_from < xmax) { /* beneath the lines */
        double x0 = LEFT + fmax(c->band_from, 0) / xmax * plot_w;
        double x1 = LEFT + fmin(c->band_to, xmax) / xmax * plot_w;
        fprintf(out,
                "<rect class=\"band\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">"
                "<title>",
                x0, (double)TOP, x1 - x0, plot_h);
        tp_html_escape(out, c->band_label ? c->band_label : "");
        fputs("</title></rect>", out);
        if (c->band_label)
            text(out, x0 + 3, TOP + 10, "start", " class=\"band-label\"", c->band_label);
    }
    for (size_t i = 0; i < c->nshades; i++) {
        const tp_svg_shade *sh = &c->shades[i];
        if (sh->to < 0 || sh->from > xmax)
            continue;
        double x0 = LEFT + fmax(sh->from, 0) / xmax * plot_w;
        double x1 = LEFT + fmin(sh->to, xmax) / xmax * plot_w;
        shade_rect(out, x0, x1, plot_h, sh->label);
    }
    const char *labels[64];
    for (size_t i = 0; i < n && i < 64; i++) {
        labels[i] = lines[i].label;
        fprintf(out, "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" points=\"",
                tp_svg_part_color(lines[i].label, i));
        for (size_t k = 0; k < lines[i].n; k++) {
            double x = LEFT + lines[i].x[k] / xmax * plot_w;
            double y = TOP + plot_h - lines[i].y[k] / ymax * plot_h;
            if (isfinite(x) && isfinite(y) && lines[i].x[k] <= xmax && lines[i].y[k] <= ymax)
                fprintf(out, "%.1f,%.1f ", x, y);
        }
        fputs("\"><title>", out);
        tp_html_escape(out, lines[i].label);
        fputs("</title></polyline>", out);
    }
    legend(out, labels, n < 64 ? n : 64, H - 14);
    fputs("</svg></figure>\n", out);
}

/* The sum of a bar's positive parts (NaN parts count as none; an infinite
 * one makes it infinite). */
static double bar_sum(const double *parts, size_t n)
{
    double sum = 0;
    for (size_t p = 0; p < n; p++)
        if (parts[p] > 0)
            sum += parts[p];
    return sum;
}

void tp_svg_stacked_bars(FILE *out, const tp_svg_chart *c, const char *const *bar_labels,
                         size_t nbars, const char *const *part_labels, size_t nparts,
                         const double *values, int horizontal)
{
    double max = 0; /* a bar whose parts are not finite numbers (a crafted file's) is not drawn */
    for (size_t b = 0; b < nbars; b++) {
        double sum = bar_sum(values + b * nparts, nparts);
        if (isfinite(sum * 2))
            max = fmax(max, sum);
    }
    if (max <= 0)
        max = 1;
    double step = nice_step(max);
    max = step * ceil(max / step);
    double height = horizontal ? TOP + 30.0 * (double)nbars + BOTTOM : H;
    double plot_h = height - TOP - BOTTOM, plot_w = W - LEFT - RIGHT;
    open_chart(out, c, height);
    if (horizontal) {
        for (double v = 0; v <= max * 1.0001; v += step) {
            char label[32];
            tp_format_value(label, sizeof label, c->unit, v);
            text(out, LEFT + v / max * plot_w, TOP + plot_h + 16, "middle", " class=\"tick\"",
                 label);
        }
        text(out, LEFT + plot_w / 2, TOP + plot_h + 34, "middle", " class=\"axis-title\"",
             c->x_title);
    } else {
        y_axis(out, c, max, plot_h);
        text(out, LEFT + plot_w / 2, TOP + plot_h + 34, "middle", " class=\"axis-title\"",
             c->x_title);
    }
    double slot = (horizontal ? plot_h : plot_w) / (double)(nbars ? nbars : 1);
    for (size_t i = 0; !horizontal && i < c->nshades; i++) { /* from, to: bar indices */
        const tp_svg_shade *sh = &c->shades[i];
        if (!(sh->to > sh->from) || sh->from >= (double)nbars || sh->to <= 0)
            continue;
        double x0 = LEFT + slot * fmax(sh->from, 0), x1 = LEFT + slot * fmin(sh->to, (double)nbars);
        shade_rect(out, x0, x1, plot_h, sh->label);
    }
    for (size_t b = 0; b < nbars; b++) {
        double at = 0;
        if (!horizontal && c->marks && c->marks[b]) {
            fprintf(out,
                    "<rect class=\"mark\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"6\">"
                    "<title>",
                    LEFT + slot * (double)b, (double)TOP - 8, fmax(slot - 1, 2));
            tp_html_escape(out, c->marks[b]);
            fputs("</title></rect>", out);
        }
        if (horizontal)
            text(out, LEFT - 6, TOP + slot * ((double)b + 0.5) + 4, "end", " class=\"tick\"",
                 bar_labels[b]);
        else if (nbars <= 40 || b % (nbars / 20 + 1) == 0)
            text(out, LEFT + slot * ((double)b + 0.5), TOP + plot_h + 16, "middle",
                 " class=\"tick\"", bar_labels[b]);
        if (!isfinite(bar_sum(values + b * nparts, nparts) * 2))
            continue;
        for (size_t p = 0; p < nparts; p++) {
            double v = values[b * nparts + p];
            if (!(v > 0))
                continue;
            if (horizontal)
                fprintf(out,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">",
                        LEFT + at / max * plot_w, TOP + slot * (double)b + 4, v / max * plot_w,
                        slot - 8, tp_svg_part_color(part_labels[p], p));
            else
                fprintf(
                    out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">",
                    LEFT + slot * (double)b, TOP + plot_h - (at + v) / max * plot_h,
                    fmax(slot - 1, 0.5), v / max * plot_h, tp_svg_part_color(part_labels[p], p));
            char val[32];
            tp_format_value(val, sizeof val, c->unit, v);
            fputs("<title>", out);
            tp_html_escape(out, bar_labels[b]);
            fputs(": ", out);
            tp_html_escape(out, part_labels[p]);
            fprintf(out, " %s</title></rect>", val);
            at += v;
        }
    }
    legend(out, part_labels, nparts, height - 14);
    fputs("</svg></figure>\n", out);
}
