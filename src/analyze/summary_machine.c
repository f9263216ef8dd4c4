/* summary_machine.c: a rank's GPU, and what the machine did over each
 * stall (summary.h: tp_summary_rank_gpu, tp_summary_stalls_machine), from
 * the run's GPUs and samples. */
#include <stdio.h>

#include "analyze/summary.h"
#include "core/metric_catalog.h"
#include "core/run_keys.h"
#include "util/labels.h"
#include "util/ns_math.h"

const tp_run_gpu *tp_summary_rank_gpu(const tp_summary *s, int rank)
{
    const tp_run_gpu *gpu = NULL;
    const tp_rank_row *r = tp_ranks_find(&s->ranks, rank);
    for (size_t g = 0; r && g < s->run->ngpus && !gpu; g++)
        if (s->run->gpus[g].agent_id == r->agent_id && s->run->gpus[g].index == r->gpu)
            gpu = &s->run->gpus[g];
    if (!gpu && s->run->ngpus == 1)
        gpu = &s->run->gpus[0];
    return gpu;
}

void tp_summary_stalls_machine(const tp_summary *s, tp_stalls *stalls)
{
    if (tp_run_summary_only(s->run)) /* no samples over a span: the stored ones stand */
        return;
    for (size_t i = 0; i < stalls->n; i++) {
        tp_stall *st = &stalls->v[i];
        const tp_rank_row *place = tp_ranks_find(&s->ranks, st->rank);
        double blocked;
        if (tp_run_agent_mean_between(s->run, place ? place->agent_id : 1, TP_METRIC_PROC_BLOCKED,
                                      "{}", tp_ns_round_s(st->start_s), tp_ns_round_s(st->end_s),
                                      &blocked))
            st->blocked = blocked;
        const tp_run_gpu *gpu = tp_summary_rank_gpu(s, st->rank);
        char index[16], labels[48];
        double util;
        if (!gpu)
            continue;
        snprintf(index, sizeof index, "%d", gpu->index);
        tp_labels1(labels, sizeof labels, TP_LABEL_GPU, index);
        st->gpu = gpu->index;
        if (tp_run_agent_mean_between(s->run, gpu->agent_id, TP_METRIC_GPU_UTIL_PERCENT, labels,
                                      tp_ns_round_s(st->start_s), tp_ns_round_s(st->end_s), &util))
            st->gpu_util_percent = util;
    }
}
