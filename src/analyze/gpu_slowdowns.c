/* gpu_slowdowns.c: see gpu_slowdowns.h. */
#include "analyze/gpu_slowdowns.h"

#include <math.h>

#include "core/metric_catalog.h"
#include "core/run_keys.h"
#include "store/summary_tables.h"
#include "util/oom.h"

bool tp_gpu_slowdowns_build(tp_run *run, const tp_steps_window *windows, size_t n, bool stored,
                            tp_gpu_slowdown **out, char *err, size_t cap)
{
    *out = NULL;
    if (!run->ngpus)
        return true;
    tp_gpu_slowdown *d = *out = tp_xcalloc(run->ngpus, sizeof *d);
    for (size_t g = 0; g < run->ngpus; g++)
        d[g] = (tp_gpu_slowdown){0, NAN, NAN};
    bool found = false;
    if (stored && !tp_stored_gpu_slowdowns(run, d, &found, err, cap))
        return false;
    if (found || tp_run_summary_only(run)) /* its last sample would stand for the window */
        return true;
    for (size_t g = 0; g < run->ngpus; g++) {
        const tp_run_gpu *gpu = &run->gpus[g];
        int64_t t0 = INT64_MIN, t1 = INT64_MAX;
        for (size_t w = 0; w < n; w++)
            if (windows[w].agent_id == gpu->agent_id)
                t0 = windows[w].t0_ns, t1 = windows[w].t1_ns;
        char labels[32];
        tp_labels_gpu(labels, sizeof labels, gpu->index);
        uint32_t trouble;
        if (tp_run_agent_bits_between(run, gpu->agent_id, TP_METRIC_GPU_CLOCK_EVENT_REASONS, labels,
                                      t0, t1, TP_GPU_REASONS_SLOWDOWN, &d[g].bits, &d[g].share))
            tp_run_agent_bits_between(run, gpu->agent_id, TP_METRIC_GPU_CLOCK_EVENT_REASONS, labels,
                                      t0, t1, TP_GPU_REASONS_TROUBLE, &trouble,
                                      &d[g].trouble_share);
    }
    return true;
}
