/* verdicts.h: plain-words conclusions with the figures behind them.
 *
 * Rules (from the seed documents), per rank with timings, shares of the
 * rank's step time:
 *   input_bound     dataloader_next >= 25 %: loading should take much less
 *                   than training; its cause (the machine's CPUs busy, tasks
 *                   waiting on storage, else too few workers) picks the advice
 *   transfer_bound  to_device >= 15 %
 *   compute_bound   train_batch >= 60 % and dataloader_next < 10 %
 * and per agent (every agent of a merged run, named when there are several):
 *   gpu_underused   a GPU's mean utilization < 90 %
 *   memory_pressure GPU memory or host memory >= 90 % at peak, or swap used
 *   cpu_saturated   on an agent with GPUs, its CPUs >= 90 % busy on average, or
 *                   the command at >= 90 % of its cgroup CPU limit
 *   network_saturated  a link's traffic one way >= 90 % of its speed at p95
 * Each verdict carries its evidence as a JSON object. */
#ifndef TP_ANALYZE_VERDICTS_H
#define TP_ANALYZE_VERDICTS_H

#include <stddef.h>

#include "analyze/summary.h"

typedef struct tp_verdict {
    const char *kind;
    char message[640];
    char evidence[512]; /* JSON object */
} tp_verdict;

typedef struct tp_verdicts {
    tp_verdict *items;
    size_t n, cap;
} tp_verdicts;

void tp_verdicts_build(const tp_summary *s, tp_verdicts *out);
void tp_verdicts_free(tp_verdicts *v);

#endif
