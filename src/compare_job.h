/* compare_job.h: what `compare` and `html --compare` do with two run files,
 * A and B: each loaded with its stacks and verdicts, compared
 * (analyze/run_compare.h), the scaling rows beside where their world sizes
 * differ, and the comparison said as text. */
#ifndef TP_COMPARE_JOB_H
#define TP_COMPARE_JOB_H

#include <stdbool.h>
#include <stdio.h>

#include "analyze/run_compare.h"
#include "analyze/scaling.h"
#include "analyze/summary.h"
#include "analyze/verdicts.h"

typedef struct tp_compare_job {
    tp_summary a, b;
    tp_verdicts va, vb;
    tp_run_compare c;
    tp_scale_row rows[2];
    bool scaling; /* rows hold the two runs' scaling (world sizes differ) */
    bool loaded_a, loaded_b;
} tp_compare_job;

/* Loads and compares paths[0] (A) and paths[1] (B). False with a one-line
 * reason (prefixed by who) in err; tp_compare_job_free in every case. */
bool tp_compare_job_run(tp_compare_job *job, const char *who, char *const *paths, char *err,
                        size_t cap);
void tp_compare_job_free(tp_compare_job *job);

/* The scaling table (`compare` of several runs) as text. */
void tp_scale_rows_text(FILE *out, const tp_scale_row *rows, size_t n);

/* The comparison's text, the scaling table after it; the caller frees it
 * (NULL out of memory). The run files' strings are in it as they are. */
char *tp_compare_job_text(const tp_compare_job *job);

#endif
