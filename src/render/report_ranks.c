/* report_ranks.c: ranks side by side (own work, waiting, stragglers). */
#include <math.h>

#include "core/metric_catalog.h"
#include "render/report.h"
#include "render/units.h"
#include "render/verdict_words.h"

static const char *agent_name(const tp_run *run, int64_t id)
{
    for (size_t i = 0; i < run->nagents; i++)
        if (run->agents[i].id == id)
            return run->agents[i].name;
    return "?";
}

void tp_report_ranks_text(FILE *out, const tp_summary *s)
{
    const tp_ranks *r = &s->ranks;
    if (r->n < 2)
        return;
    fprintf(out,
            "\nRanks, per step (window: first to last step mark; parts by interval union, "
            "communication first)\n  %-6s %-16s %7s %10s %10s %10s %10s %10s %10s %8s\n",
            "rank", "agent", "steps", "step", "input", "compute", "comm", "overlap", "other",
            "own/med");
    for (size_t i = 0; i < r->n; i++) {
        const tp_rank_row *row = &r->rows[i];
        double n = (double)row->steps;
        const double v[] = {row->window_s / n, row->input_s / n,        row->compute_s / n,
                            row->comm_s / n,   row->comm_overlap_s / n, row->other_s / n};
        char c[6][32];
        for (int k = 0; k < 6; k++)
            tp_format_duration(c[k], sizeof c[k], v[k]);
        fprintf(out, "  %-6d %-16.16s %7zu %10s %10s %10s %10s %10s %10s %+7.0f%%%s\n", row->rank,
                agent_name(s->run, row->agent_id), row->steps, c[0], c[1], c[2], c[3], c[4], c[5],
                100 * row->excess, row->straggler ? " slow" : "");
    }
    char own[32], floor[32];
    tp_format_duration(own, sizeof own, r->median_own_s);
    tp_format_duration(floor, sizeof floor, TP_STRAGGLER_STEP_SHARE * r->median_step_s);
    fprintf(out,
            "  own work (input + compute) of the median rank: %s per step; %zu rank%s more "
            "than %.0f %% above it\n  and by %s (%.0f %% of the median step) or more: "
            "stragglers\n",
            own, r->nstragglers, r->nstragglers == 1 ? "" : "s", 100 * TP_STRAGGLER_EXCESS, floor,
            100 * TP_STRAGGLER_STEP_SHARE);
    fprintf(out, "  overlap: the part of comm during which a compute region was open too (work "
                 "hidden behind it); the end of\n  a backward pass from its last collective's "
                 "start is waiting, not compute\n");
    double device = 0, host = 0;
    for (size_t i = 0; i < r->n; i++)
        device += r->rows[i].comm_device_s, host += r->rows[i].comm_s;
    if (device > 0) { /* collectives on CUDA: the host's comm is their launch */
        fprintf(out, "  comm on the device (CUDA events around each collective), per step, and "
                     "its part after the\n  backward pass's compute (the last collective of "
                     "each, and those outside one):\n ");
        for (size_t i = 0; i < r->n; i++) {
            char d[32], e[32];
            tp_format_duration(d, sizeof d, r->rows[i].comm_device_s / (double)r->rows[i].steps);
            tp_format_duration(e, sizeof e,
                               r->rows[i].comm_device_exposed_s / (double)r->rows[i].steps);
            fprintf(out, "%s rank %d %s (%s exposed)", i ? "," : "", r->rows[i].rank, d, e);
        }
        if (device > 2 * host)
            fprintf(out, "\n  the host's comm above is the collectives' launch (NCCL returns at "
                         "once)");
        fprintf(out, "\n");
    }
}

static void number_or_null(json_writer *w, const char *key, double v)
{
    json_key(w, key);
    if (isnan(v))
        json_null(w);
    else
        json_double(w, v);
}

void tp_report_ranks_json(json_writer *w, const tp_summary *s)
{
    const tp_ranks *r = &s->ranks;
    json_key(w, "ranks");
    if (r->n == 0) {
        json_null(w);
        return;
    }
    json_object_begin(w);
    number_or_null(w, "median_own_s_per_step", r->median_own_s);
    number_or_null(w, "median_input_s_per_step", r->median_input_s);
    number_or_null(w, "median_compute_s_per_step", r->median_compute_s);
    number_or_null(w, "median_comm_s_per_step", r->median_comm_s);
    number_or_null(w, "median_step_s", r->median_step_s);
    json_key(w, "straggler_threshold");
    json_double(w, TP_STRAGGLER_EXCESS);
    json_key(w, "straggler_min_step_share");
    json_double(w, TP_STRAGGLER_STEP_SHARE);
    json_key(w, "per_rank");
    json_array_begin(w);
    for (size_t i = 0; i < r->n; i++) {
        const tp_rank_row *row = &r->rows[i];
        json_object_begin(w);
        json_key(w, "rank");
        json_int(w, row->rank);
        json_key(w, "agent");
        json_string(w, agent_name(s->run, row->agent_id));
        json_key(w, "local_rank");
        json_int(w, row->local_rank);
        json_key(w, "gpu"); /* the index of the GPU it drove on its agent */
        if (row->gpu >= 0)
            json_int(w, row->gpu);
        else
            json_null(w);
        json_key(w, "steps");
        json_int(w, (int64_t)row->steps);
        const char *keys[] = {"window_s", "input_s",        "compute_s",
                              "comm_s",   "comm_overlap_s", "other_s"};
        const double v[] = {row->window_s, row->input_s,        row->compute_s,
                            row->comm_s,   row->comm_overlap_s, row->other_s};
        for (int k = 0; k < 6; k++)
            number_or_null(w, keys[k], v[k]);
        number_or_null(w, "own_s_per_step", tp_rank_own_per_step(row));
        number_or_null(w, "excess", row->excess);
        number_or_null(w, TP_METRIC_GPU_UTIL_PERCENT, row->gpu_util_percent);
        number_or_null(w, TP_METRIC_GPU_SM_CLOCK_MHZ, row->gpu_sm_clock_mhz);
        /* NVML's clock event reasons over the window: slowdown bits, and the
         * share of samples with any (null where none were recorded) */
        json_key(w, "gpu_slowdown_reasons");
        if (isnan(row->gpu_slowdown_share))
            json_null(w);
        else
            json_int(w, row->gpu_slowdown_reasons);
        number_or_null(w, "gpu_slowdown_share", row->gpu_slowdown_share);
        number_or_null(w, "comm_device_s", row->comm_device_s);
        number_or_null(w, "comm_device_exposed_s", row->comm_device_exposed_s);
        json_key(w, "straggler");
        json_bool(w, row->straggler);
        json_key(w, "cause");
        if (row->straggler) {
            char cause[TP_CAUSE_MAX];
            tp_straggler_cause_text(cause, sizeof cause, s->run, row);
            json_string(w, cause);
        } else {
            json_null(w);
        }
        json_object_end(w);
    }
    json_array_end(w);
    json_object_end(w);
}
