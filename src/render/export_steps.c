/* export_steps.c: each rank's steps by phase as JSON lines (export.h). */
#include <math.h>
#include <stdlib.h>

#include "analyze/step_phases.h"
#include "analyze/summary.h"
#include "core/metric_catalog.h"
#include "core/run_keys.h"
#include "render/export.h"
#include "util/json_writer.h"

/* The mean of the rank's GPU's utilization over [a, b] seconds, NaN unknown. */
static double gpu_util(const tp_summary *s, int rank, double a, double b)
{
    const tp_run_gpu *gpu = tp_summary_rank_gpu(s, rank);
    double mean;
    if (!gpu || isnan(a) || isnan(b))
        return NAN;
    char labels[32];
    tp_labels_gpu(labels, sizeof labels, gpu->index);
    return tp_run_agent_mean_between(s->run, gpu->agent_id, TP_METRIC_GPU_UTIL_PERCENT, labels,
                                     (int64_t)(a * 1e9), (int64_t)(b * 1e9), &mean)
               ? mean
               : NAN;
}

/* One line: a group of the rank's consecutive steps, g of ph. */
static void group_line(FILE *out, const tp_summary *s, int rank, const tp_step_phases *ph, size_t g)
{
    size_t first = (size_t)ph->first_step[g];
    const double *v = &ph->values[g * TP_STEP_PHASES];
    double step_s = 0;
    for (int k = 0; k < TP_STEP_PHASES; k++)
        step_s += v[k];
    json_writer w;
    json_init(&w, out);
    json_object_begin(&w);
    json_key(&w, "rank");
    json_int(&w, rank);
    json_key(&w, "step");
    json_int(&w, (int64_t)first + 1);
    json_field_double(&w, "start_s", ph->start_s[g]);
    json_field_double(&w, "end_s", ph->end_s[g]);
    json_field_double(&w, "step_s", step_s);
    json_field_double(&w, "steps_per_s", step_s > 0 ? 1 / step_s : NAN);
    json_key(&w, "phases_s");
    json_object_begin(&w);
    for (int k = 0; k < TP_STEP_PHASES; k++)
        json_field_double(&w, tp_step_phase_names[k], v[k]);
    json_object_end(&w);
    json_field_double(&w, TP_METRIC_GPU_UTIL_PERCENT,
                      gpu_util(s, rank, ph->start_s[g], ph->end_s[g]));
    json_object_end(&w);
    fputc('\n', out);
}

bool tp_export_steps(FILE *out, tp_run *run, tp_export_budget *b, char *err, size_t cap)
{
    tp_summary s;
    if (!tp_summary_build(run, &s, err, cap))
        return false;
    bool ok = true;
    for (size_t i = 0; i < s.timings.nsteps && ok; i++) {
        int rank = s.timings.steps[i].rank;
        size_t skip = 0;
        tp_step_phases ph = {0};
        ok = tp_step_phases_build(run, &rank, &skip, 1, TP_EXPORT_STEP_GROUPS, &ph, err, cap);
        for (size_t g = 0; ok && g < ph.ngroups && tp_export_room(b); g++)
            group_line(out, &s, rank, &ph, g);
        tp_step_phases_free(&ph);
    }
    tp_summary_free(&s);
    return ok;
}
