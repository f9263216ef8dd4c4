/* compare_job.c: see compare_job.h. */
#include "compare_job.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/compare.h"
#include "render/units.h"

static bool load_side(tp_summary *s, tp_verdicts *v, const char *who, const char *path, char *err,
                      size_t cap)
{
    char why[1024];
    if (!tp_summary_load(path, s, why, sizeof why)) {
        snprintf(err, cap, "%s: %s", who, why);
        return false;
    }
    if (!tp_summary_add_stacks(s, why, sizeof why)) {
        tp_summary_close(s);
        snprintf(err, cap, "%s: %s", who, why);
        return false;
    }
    tp_verdicts_build(s, v);
    return true;
}

bool tp_compare_job_run(tp_compare_job *job, const char *who, char *const *paths, char *err,
                        size_t cap)
{
    memset(job, 0, sizeof *job);
    job->loaded_a = load_side(&job->a, &job->va, who, paths[0], err, cap);
    job->loaded_b = job->loaded_a && load_side(&job->b, &job->vb, who, paths[1], err, cap);
    if (!job->loaded_b)
        return false;
    char why[1024];
    if (!tp_run_compare_build(&job->a, &job->va, &job->b, &job->vb, &job->c, why, sizeof why)) {
        snprintf(err, cap, "%s: %s", who, why);
        return false;
    }
    if (job->c.a.world != job->c.b.world) {
        if (!tp_scaling_build(paths, 2, job->rows, why, sizeof why)) {
            snprintf(err, cap, "%s: %s", who, why);
            return false;
        }
        job->scaling = true;
    }
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
    job->loaded_a = job->loaded_b = false;
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
