/* compare.h: two runs compared (analyze/run_compare.h), said: the answer
 * first (the change in step time with its interval, the phases that
 * moved, what changed with them), then the phases' table, the machine, the
 * facts that differ and the verdicts only one run had. The text holds the
 * run files' own strings: the caller writes it through tp_text_write_safe. */
#ifndef TP_RENDER_COMPARE_H
#define TP_RENDER_COMPARE_H

#include <stdio.h>

#include "analyze/compare_job.h"
#include "analyze/run_compare.h"
#include "util/json_writer.h"

void tp_compare_text(FILE *out, const tp_run_compare *c);

/* The comparison's members, into an open JSON object. */
void tp_compare_json(json_writer *w, const tp_run_compare *c);

/* The scaling table (`compare` of several runs) as text. */
void tp_scale_rows_text(FILE *out, const tp_scale_row *rows, size_t n);

/* The comparison's text, the scaling table after it; the caller frees it
 * (NULL out of memory). The run files' strings are in it as they are. */
char *tp_compare_job_text(const tp_compare_job *job);

#endif
