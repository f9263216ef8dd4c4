/* memory_growth.c: the training's memory growing steadily (memory_growth.h). */
#include "analyze/memory_growth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/metric_catalog.h"
#include "util/ns_math.h"
#include "core/run_keys.h"

/* The longest warm-up (seconds) of the ranks on agent_id: its steps window
 * starts with it. */
static double warmup_of(const tp_summary *s, int64_t agent_id)
{
    double most = 0;
    for (size_t i = 0; i < s->timings.nsteps; i++) {
        const tp_step_row *st = &s->timings.steps[i];
        const tp_rank_row *place = tp_ranks_find(&s->ranks, st->rank);
        if ((place             ? place->agent_id
             : s->run->nagents ? s->run->agents[0].id
                               : 1) == agent_id &&
            st->warmup_s > most)
            most = st->warmup_s;
    }
    return most;
}

bool tp_memory_growth_of(const tp_summary *s, int64_t agent_id, tp_memory_growth *out)
{
    memset(out, 0, sizeof *out);
    const tp_steps_window *steps = tp_summary_window(s, agent_id);
    if (!steps)
        return false;
    tp_steps_window judged = *steps, *w = &judged; /* past the warm-up and the start-up's tail */
    w->t0_ns = tp_ns_add(w->t0_ns, tp_ns_round_s(warmup_of(s, agent_id)));
    if (w->t0_ns >= w->t1_ns)
        return false;
    w->t0_ns =
        tp_ns_add(w->t0_ns, (int64_t)((double)tp_ns_sub(w->t1_ns, w->t0_ns) * TP_GROWTH_SETTLE));
    if ((double)tp_ns_sub(w->t1_ns, w->t0_ns) / 1e9 < TP_GROWTH_MIN_S)
        return false;
    /* each slice's mean reaches to the first sample after it: the last one's
     * would be of the exit (workers gone), so the window ends two sampling
     * intervals before the last step */
    const char *interval = tp_run_agent_meta_get(s->run, agent_id, TP_META_INTERVAL_S);
    double dt = interval ? strtod(interval, NULL) : 0.5;
    int64_t t1 = tp_ns_sub(w->t1_ns, tp_ns_round_s(2 * (dt > 0 && dt < 60 ? dt : 0.5)));
    double m[TP_GROWTH_SLICES];
    int64_t slice = tp_ns_sub(t1, w->t0_ns) / TP_GROWTH_SLICES;
    for (int i = 0; i < TP_GROWTH_SLICES; i++) {
        int64_t a = tp_ns_add(w->t0_ns, i * slice);
        if (!tp_run_agent_mean_between(s->run, agent_id, TP_METRIC_PROC_RSS_BYTES, "{}", a,
                                       tp_ns_add(a, slice), &m[i]) ||
            !(m[i] > 0))
            return false;
    }
    double first = m[0], last = m[TP_GROWTH_SLICES - 1], half = m[TP_GROWTH_SLICES / 2];
    int up = 0;
    for (int i = 1; i < TP_GROWTH_SLICES; i++)
        up += m[i] >= m[i - 1] - 0.01 * first;
    if (last - first < TP_GROWTH_MIN_BYTES || last - first < 0.2 * first ||
        up < TP_GROWTH_SLICES - 2 || last - half < 0.3 * (half - first))
        return false;
    out->start_bytes = first;
    out->end_bytes = last;
    out->rate_bytes_per_s =
        (last - first) / ((double)slice * (TP_GROWTH_SLICES - 1) / 1e9); /* slice centres */
    const char *limit = tp_run_agent_meta_get(s->run, agent_id, TP_META_CGROUP_MEMORY_LIMIT_BYTES);
    double cgroup = limit ? strtod(limit, NULL) : 0;
    double available;
    out->headroom_bytes = NAN;
    if (cgroup > 0) {
        out->cgroup = true;
        out->headroom_bytes = cgroup > last ? cgroup - last : 0;
    } else if (tp_run_agent_value_at(s->run, agent_id, TP_METRIC_HOST_MEM_AVAILABLE_BYTES, "{}", t1,
                                     &available)) {
        out->headroom_bytes = available;
    }
    out->seconds_to_limit = out->headroom_bytes / out->rate_bytes_per_s;
    return true;
}
