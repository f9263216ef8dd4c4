/* compare_job.c: see compare_job.h. */
#include "analyze/compare_job.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool load_side(tp_inputs *in, bool *opened, tp_summary *s, tp_verdicts *v, const char *who,
                      char *const *paths, size_t n, char *err, size_t cap)
{
    char why[1024];
    if (!tp_inputs_open(in, who, paths, n, true, false, err, cap))
        return false;
    *opened = true;
    /* the course too, as report reads it: a stalled run gets the verdicts
     * report gives it, not the steady run's */
    if (!tp_summary_load(in->path, TP_PARTS_ALL, s, why, sizeof why)) {
        snprintf(err, cap, "%s: %s", who, why);
        return false;
    }
    tp_summary_name_inputs(s, in);
    tp_verdicts_build(s, v);
    return true;
}

bool tp_compare_job_run(tp_compare_job *job, const char *who, char *const *a, size_t na,
                        char *const *b, size_t nb, char *err, size_t cap)
{
    memset(job, 0, sizeof *job);
    job->loaded_a = load_side(&job->in_a, &job->opened_a, &job->a, &job->va, who, a, na, err, cap);
    job->loaded_b = job->loaded_a &&
                    load_side(&job->in_b, &job->opened_b, &job->b, &job->vb, who, b, nb, err, cap);
    if (!job->loaded_b)
        return false;
    char why[1024];
    if (!tp_run_compare_build(&job->a, &job->va, &job->b, &job->vb, &job->c, why, sizeof why)) {
        snprintf(err, cap, "%s: %s", who, why);
        return false;
    }
    if (job->c.a.world != job->c.b.world) {
        char *paths[2] = {(char *)job->in_a.path, (char *)job->in_b.path};
        if (!tp_scaling_build(paths, 2, job->rows, why, sizeof why)) {
            snprintf(err, cap, "%s: %s", who, why);
            return false;
        }
        job->rows[0].path = job->a.run->path; /* as the files were named */
        job->rows[1].path = job->b.run->path;
        job->scaling = true;
    }
    return true;
}

bool tp_compare_job_regimes(tp_compare_job *job, const char *who, char *const *paths, size_t n,
                            char *err, size_t cap)
{
    memset(job, 0, sizeof *job);
    char why[1024];
    if (!tp_inputs_open(&job->in_a, who, paths, n, true, false, err, cap))
        return false;
    job->opened_a = true;
    if (!tp_summary_load(job->in_a.path, TP_PARTS_ALL, &job->a, why, sizeof why)) {
        snprintf(err, cap, "%s: %s", who, why);
        return false;
    }
    tp_summary_name_inputs(&job->a, &job->in_a);
    job->loaded_a = true;
    tp_verdicts_build(&job->a, &job->va);
    size_t after = tp_regimes_biggest_change(&job->a.regimes);
    if (!tp_run_compare_regimes(&job->a, after ? after - 1 : 0, after, &job->c, why, sizeof why)) {
        snprintf(err, cap, "%s: %s", who, why);
        return false;
    }
    job->regimes = job->a.regimes.n;
    return true;
}

void tp_compare_job_free(tp_compare_job *job)
{
    if (job->loaded_a) {
        tp_verdicts_free(&job->va);
        tp_summary_close(&job->a);
    }
    if (job->loaded_b) {
        tp_verdicts_free(&job->vb);
        tp_summary_close(&job->b);
    }
    if (job->opened_a)
        tp_inputs_done(&job->in_a);
    if (job->opened_b)
        tp_inputs_done(&job->in_b);
    job->loaded_a = job->loaded_b = job->opened_a = job->opened_b = false;
}
