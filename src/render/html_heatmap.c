/* html_heatmap.c: own work per step by rank and by step (analyze/rank_heatmap.h) as
 * an SVG heatmap: each cell coloured by its step against the median cell's,
 * in five levels, equal neighbours of a row drawn as one rectangle, so the
 * page stays small whatever the ranks. */
#include <math.h>
#include <stdio.h>

#include "analyze/rank_heatmap.h"
#include "render/html.h"
#include "render/units.h"

#define LEVELS 5
static const double level_max[LEVELS] = {1.10, 1.25, 1.5, 2.0, INFINITY}; /* of the median */
static const char *const level_color[LEVELS] = {"#dfe9f3", "#fdd49e", "#fc8d59", "#e34a33",
                                                "#990000"};
static const char *const level_words[LEVELS] = {"within 10 % of the median", "+10-25 %", "+25-50 %",
                                                "+50-100 %", "twice or more"};

static int level_of(double v, double median)
{
    double ratio = median > 0 ? v / median : 1;
    for (int k = 0; k < LEVELS; k++)
        if (ratio <= level_max[k])
            return k;
    return LEVELS - 1;
}

static void row_label(char *buf, size_t cap, const tp_rank_heatmap *h, size_t r)
{
    if (h->first_rank[r] == h->last_rank[r])
        snprintf(buf, cap, "rank %d", h->first_rank[r]);
    else
        snprintf(buf, cap, "ranks %d-%d", h->first_rank[r], h->last_rank[r]);
}

void tp_html_rank_heatmap(FILE *out, const tp_rank_heatmap *h)
{
    if (!h->rows || isnan(h->median_s))
        return;
    const double left = 120, top = 34, width = 760;
    double cell_h = h->rows >= 96 ? 3 : h->rows >= 32 ? 6 : 12, cell_w = width / (double)h->cols;
    double height = top + cell_h * (double)h->rows + 60;
    char median[32];
    tp_format_duration(median, sizeof median, h->median_s);
    fprintf(out,
            "<figure class=\"chart\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
            "height=\"%.0f\" role=\"img\"><title>Own work per step by rank and step</title>"
            "<text x=\"%.0f\" y=\"16\" font-weight=\"bold\" font-size=\"13\">Own work per step "
            "(its phases but reduce_metrics) by rank and step: the slowest of each cell's ranks "
            "against the median cell's %s</text>\n",
            left + width + 20, height, left, median);
    size_t every = h->rows > 16 ? (h->rows + 15) / 16 : 1;
    for (size_t r = 0; r < h->rows; r++) {
        char label[48];
        row_label(label, sizeof label, h, r);
        double y = top + cell_h * (double)r;
        if (r % every == 0)
            fprintf(out,
                    "<text x=\"%.0f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%s</text>\n",
                    left - 4, y + cell_h, label);
        for (size_t c = 0; c < h->cols;) {
            double v = h->step_s[r * h->cols + c];
            if (isnan(v)) {
                c++;
                continue;
            }
            int level = level_of(v, h->median_s);
            size_t end = c + 1;
            double most = v;
            while (end < h->cols && !isnan(h->step_s[r * h->cols + end]) &&
                   level_of(h->step_s[r * h->cols + end], h->median_s) == level) {
                most = fmax(most, h->step_s[r * h->cols + end]);
                end++;
            }
            char slowest[32];
            tp_format_duration(slowest, sizeof slowest, most);
            fprintf(out,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
                    "<title>%s, steps %zu-%zu, up to %s of own work a step</title></rect>\n",
                    left + cell_w * (double)c, y, cell_w * (double)(end - c), cell_h,
                    level_color[level], label, c * h->steps / h->cols + 1, end * h->steps / h->cols,
                    slowest);
            c = end;
        }
    }
    double y = top + cell_h * (double)h->rows + 16;
    fprintf(out,
            "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"middle\">steps after "
            "the warm-up (%zu), left to right</text>\n",
            left + width / 2, y, h->steps);
    for (int k = 0; k < LEVELS; k++) {
        double x = left + 150.0 * k;
        fprintf(out,
                "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\">%s</text>\n",
                x, y + 14, level_color[k], x + 16, y + 24, level_words[k]);
    }
    fputs("</svg></figure>\n", out);
}
