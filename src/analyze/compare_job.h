/* compare_job.h: what `compare` and `html --compare` do with two run files,
 * A and B: each loaded with its stacks and verdicts, compared
 * (analyze/run_compare.h), the scaling rows beside where their world sizes
 * differ (said by render/compare.h). */
#ifndef TP_ANALYZE_COMPARE_JOB_H
#define TP_ANALYZE_COMPARE_JOB_H

#include <stdbool.h>
#include <stdio.h>

#include "analyze/run_compare.h"
#include "analyze/scaling.h"
#include "analyze/summary.h"
#include "analyze/verdicts.h"
#include "store/inputs.h"

typedef struct tp_compare_job {
    tp_inputs in_a, in_b; /* each side's files, merged where there are several */
    bool opened_a, opened_b;
    tp_summary a, b;
    tp_verdicts va, vb;
    tp_run_compare c;
    tp_scale_row rows[2];
    bool scaling; /* rows hold the two runs' scaling (world sizes differ) */
    bool loaded_a, loaded_b;
    size_t regimes; /* tp_compare_job_regimes: the run's regimes (1: steady, none compared) */
} tp_compare_job;

/* Loads and compares A (the na files a, merged where there are several: a
 * job's nodes) and B (the nb files b). False with a one-line reason
 * (prefixed by who) in err; tp_compare_job_free in every case. */
bool tp_compare_job_run(tp_compare_job *job, const char *who, char *const *a, size_t na,
                        char *const *b, size_t nb, char *err, size_t cap);
void tp_compare_job_free(tp_compare_job *job);

/* The regimes of one run (the n files paths, merged where several) around
 * its biggest change of pace, A the regime before, B the one after. False
 * with a one-line reason in err; a run of one regime compares nothing
 * (job->regimes says how many). */
bool tp_compare_job_regimes(tp_compare_job *job, const char *who, char *const *paths, size_t n,
                            char *err, size_t cap);

#endif
