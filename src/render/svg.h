/* svg.h: the charts of the HTML report, drawn as inline SVG by trainprof.
 *
 * Every chart has a title, titled axes with units, a legend and a distinct
 * colour per series; text from the run is HTML-escaped. Callers pass data
 * already downsampled (see analyze/downsample.h). */
#ifndef TP_RENDER_SVG_H
#define TP_RENDER_SVG_H

#include <stddef.h>
#include <stdio.h>

typedef struct tp_svg_line {
    char label[96];
    const double *x; /* seconds */
    const double *y; /* in the chart's unit */
    size_t n;
} tp_svg_line;

/* A span of x (seconds) shaded on a line chart, named when hovered. */
typedef struct tp_svg_shade {
    double from, to;
    const char *label;
} tp_svg_shade;

typedef struct tp_svg_chart {
    const char *title;
    const char *x_title;
    const char *y_title;
    const char *unit; /* run-file unit name: percent, bytes, bytes_per_s, ... */
    /* line charts: a shaded span of x from band_from to band_to (when
     * band_to > band_from), named band_label: the training steps */
    double band_from, band_to;
    const char *band_label;
    /* line charts: further spans shaded darker over the band (the
     * training's pauses) */
    const tp_svg_shade *shades; /* x in the axis' unit; vertical stacked bars: bar indices */
    size_t nshades;
    /* vertical stacked bars: a note per bar (NULL, or a NULL entry: none),
     * marked by a grey tick above its bar, the note as its hover text (the
     * pauses after a group of steps) */
    const char *const *marks;
} tp_svg_chart;

/* Writes s with &, <, >, " and ' escaped, as valid UTF-8 (invalid bytes as
 * U+FFFD), control characters but newline and tab as \xNN. */
void tp_html_escape(FILE *out, const char *s);

/* The n-th colour of the palette (cycles). */
const char *tp_svg_color(size_t n);
/* The colour of the n-th line or part labelled label: a step phase's, or a
 * rank part's (input, compute, communication, other), the same on every
 * chart; any other label's tp_svg_color(n). */
const char *tp_svg_part_color(const char *label, size_t n);

void tp_svg_line_chart(FILE *out, const tp_svg_chart *c, const tp_svg_line *lines, size_t n);

/* Stacked bars: nbars bars of nparts parts; values[bar * nparts + part].
 * Horizontal bars (one per rank) or vertical ones (one per step group). */
void tp_svg_stacked_bars(FILE *out, const tp_svg_chart *c, const char *const *bar_labels,
                         size_t nbars, const char *const *part_labels, size_t nparts,
                         const double *values, int horizontal);

#endif
