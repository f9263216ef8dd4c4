/* html.h: the run as one self-contained HTML page (no script, no external
 * file): header, verdicts, where step time goes per rank, step time over the
 * run with its phases, epoch times, a plot per system metric (downsampled,
 * extremes kept), and the report's tables. Every text from the run is
 * escaped. */
#ifndef TP_RENDER_HTML_H
#define TP_RENDER_HTML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "analyze/summary.h"

bool tp_html_write(FILE *out, const tp_summary *s, char *err, size_t cap);

#endif
