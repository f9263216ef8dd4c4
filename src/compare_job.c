/* compare_job.c: see compare_job.h. */
#include "compare_job.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/compare.h"
#include "render/units.h"

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
    tp_inputs_name_run(in, s->run);
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
    tp_inputs_name_run(&job->in_a, job->a.run);
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

void tp_scale_rows_text(FILE *out, const tp_scale_row *rows, size_t n)
{
    fprintf(out, "%-32s %6s %12s %12s %9s %11s %12s %14s\n", "run", "world", "epoch time",
            "samples/s", "speed-up", "efficiency", "energy/epoch", "energy/sample");
    for (size_t i = 0; i < n; i++) {
        char e[32] = "-", es[32] = "-", ep[32] = "-";
        if (!isnan(rows[i].epoch_s))
            tp_format_duration(e, sizeof e, rows[i].epoch_s);
        if (!isnan(rows[i].energy_epoch_j))
            tp_format_value(ep, sizeof ep, "joules", rows[i].energy_epoch_j);
        if (!isnan(rows[i].energy_sample_j))
            tp_format_value(es, sizeof es, "joules", rows[i].energy_sample_j);
        size_t len = strlen(rows[i].path);
        const char *shown = len > 32 ? rows[i].path + len - 32 : rows[i].path;
        fprintf(out, "%-32s %6d %12s %12.1f %8.2fx %10.0f%% %12s %14s\n", shown, rows[i].world, e,
                rows[i].samples_per_s, rows[i].speedup, 100 * rows[i].efficiency, ep, es);
    }
}

char *tp_compare_job_text(const tp_compare_job *job)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem)
        return NULL;
    tp_compare_text(mem, &job->c);
    if (job->scaling) {
        fputs("\nAt their scales\n", mem);
        tp_scale_rows_text(mem, job->rows, 2);
    }
    fclose(mem);
    return text;
}
