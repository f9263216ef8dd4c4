/* report_ranks.c: ranks side by side (own work, waiting, stragglers). */
#include <math.h>

#include "core/metric_catalog.h"
#include "analyze/rank_spread.h"
#include "render/report.h"
#include "render/units.h"
#include "render/ranks_words.h"
#include "render/verdict_words.h"

/* More ranks than TP_RANKS_LISTED: each figure's distribution over the
 * ranks, then the ranks and nodes that stand out. */
static void ranks_spread_text(FILE *out, const tp_summary *s, const tp_ranks *r, const char *window)
{
    tp_rank_spread sp;
    tp_rank_spread_build(r, &sp);
    fprintf(out,
            "\nRanks, per step: %zu ranks on %zu agent%s (%s; --all lists every rank)\n"
            "  %-10s %10s %10s %10s %10s %10s %8s\n",
            sp.ranks, sp.agents, sp.agents == 1 ? "" : "s", window, "", "median", "p5", "p95",
            "lowest", "highest", "p95/p5");
    for (size_t f = 0; f < TP_RANK_FIGURES; f++) {
        char c[5][32];
        const double v[] = {sp.p50[f], sp.p5[f], sp.p95[f], sp.min[f], sp.max[f]};
        for (int k = 0; k < 5; k++)
            tp_format_duration(c[k], sizeof c[k], v[k]);
        char spread[16] = "-";
        if (sp.p5[f] > 0)
            snprintf(spread, sizeof spread, "%.2fx", sp.p95[f] / sp.p5[f]);
        fprintf(out, "  %-10s %10s %10s %10s %10s %10s %8s\n", tp_rank_figure_names[f], c[0], c[1],
                c[2], c[3], c[4], spread);
    }
    if (!sp.nstandouts && !sp.nslow_nodes) {
        fprintf(out,
                "  no rank's own work (input + compute) is more than %.0f %% above the "
                "median rank's\n",
                100 * TP_STRAGGLER_EXCESS);
        return;
    }
    char median[32];
    tp_format_duration(median, sizeof median, r->median_own_s);
    fprintf(out, "  standing out (own work above the median rank's %s a step):\n", median);
    for (size_t i = 0; i < sp.nslow_nodes; i++) {
        const tp_slow_node *n = &sp.slow_nodes[i];
        fprintf(out, "    node %s: all its %zu ranks (%d-%d) slow, each +%.0f%% or more\n",
                tp_inventory_agent_name(&s->inv, n->agent_id), n->ranks, n->first_rank,
                n->last_rank, 100 * n->least_excess);
    }
    if (sp.more_slow_nodes)
        fprintf(out, "    and %zu more nodes whose ranks are all slow\n", sp.more_slow_nodes);
    for (size_t i = 0; i < sp.nstandouts; i++) {
        const tp_rank_row *row = &r->rows[sp.standouts[i]];
        char part[32];
        tp_format_duration(part, sizeof part, tp_rank_own_per_step(row));
        fprintf(out, "    rank %d (%s): +%.0f%%, %s of own work a step (%s)\n", row->rank,
                tp_inventory_agent_name(&s->inv, row->agent_id), 100 * row->excess, part,
                row->cause.input ? "input" : "compute");
    }
    if (sp.more_standouts)
        fprintf(out, "    and %zu more stragglers\n", sp.more_standouts);
}

/* Which steps the figures are over, where some ranks' were left out. */
static void unmeasured_text(FILE *out, const tp_ranks *r)
{
    size_t steps = 0, measured = 0;
    for (size_t i = 0; i < r->n; i++)
        steps += r->rows[i].steps, measured += r->rows[i].measured_steps;
    if (measured < steps)
        fprintf(out,
                "  per step: over the ranks' steady steps, as Timings times them (%zu of %zu; "
                "the warm-up's,\n  the capture windows' and stalled steps left out)\n",
                measured, steps);
}

/* The ranks table r over window ("the whole run's steady steps"; or
 * "steps 201-300, the latest pace"), or its spread beyond TP_RANKS_LISTED
 * ranks. */
static void ranks_table_text(FILE *out, const tp_summary *s, const tp_ranks *r, bool all,
                             const char *window)
{
    if (r->n > TP_RANKS_LISTED && !all) {
        ranks_spread_text(out, s, r, window);
        return;
    }
    fprintf(out,
            "\nRanks, per step (%s; parts by interval union, communication first)\n"
            "  %-6s %-16s %7s %10s %10s %10s %10s %10s %10s %8s\n",
            window, "rank", "agent", "steps", "step", "input", "compute", "comm", "overlap",
            "other", "own/med");
    for (size_t i = 0; i < r->n; i++) {
        const tp_rank_row *row = &r->rows[i];
        double n = (double)row->measured_steps;
        const double v[] = {row->window_s / n, row->input_s / n,        row->compute_s / n,
                            row->comm_s / n,   row->comm_overlap_s / n, row->other_s / n};
        char c[6][32];
        for (int k = 0; k < 6; k++)
            tp_format_duration(c[k], sizeof c[k], v[k]);
        fprintf(out, "  %-6d %-16.16s %7zu %10s %10s %10s %10s %10s %10s %+7.0f%%%s\n", row->rank,
                tp_inventory_agent_name(&s->inv, row->agent_id), row->steps, c[0], c[1], c[2], c[3],
                c[4], c[5], 100 * row->excess, row->straggler ? " slow" : "");
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
    unmeasured_text(out, r);
    double device = 0, host = 0;
    for (size_t i = 0; i < r->n; i++)
        device += r->rows[i].comm_device_s, host += r->rows[i].comm_s;
    if (device > 0) { /* collectives on CUDA: the host's comm is their launch */
        fprintf(out, "  comm on the device (CUDA events around each collective), per step, and "
                     "its part after the\n  backward pass's compute (the last collective of "
                     "each, and those outside one):\n ");
        for (size_t i = 0; i < r->n; i++) {
            char d[32], e[32];
            tp_format_duration(d, sizeof d,
                               r->rows[i].comm_device_s / (double)r->rows[i].measured_steps);
            tp_format_duration(
                e, sizeof e, r->rows[i].comm_device_exposed_s / (double)r->rows[i].measured_steps);
            fprintf(out, "%s rank %d %s (%s exposed)", i ? "," : "", r->rows[i].rank, d, e);
        }
        if (device > 2 * host)
            fprintf(out, "\n  the host's comm above is the collectives' launch (NCCL returns at "
                         "once)");
        fprintf(out, "\n");
    }
}

/* The latest of the first rank's paces where the ranks were compared over
 * it (tp_summary.ranks_latest), else NULL. */
static const tp_regime *latest_pace(const tp_summary *s)
{
    return s->ranks_latest.n >= 2 ? tp_regimes_latest(&s->regimes, s->regimes.rank) : NULL;
}

void tp_report_ranks_text(FILE *out, const tp_summary *s, bool all)
{
    if (s->ranks.n < 2)
        return;
    ranks_table_text(out, s, &s->ranks, all, "the whole run's steady steps");
    const tp_regime *pace = latest_pace(s);
    if (!pace)
        return;
    char window[96];
    snprintf(window, sizeof window, "steps %zu-%zu, the latest pace: what the verdicts judge",
             pace->first_step, pace->last_step);
    ranks_table_text(out, s, &s->ranks_latest, all, window);
}

static void number_or_null(json_writer *w, const char *key, double v)
{
    json_key(w, key);
    if (isnan(v))
        json_null(w);
    else
        json_double(w, v);
}

/* "spread": each figure's distribution over the ranks, the stragglers that
 * stand out and the nodes whose ranks are all slow. */
static void spread_json(json_writer *w, const tp_summary *s, const tp_ranks *r)
{
    tp_rank_spread sp;
    tp_rank_spread_build(r, &sp);
    json_key(w, "spread");
    json_object_begin(w);
    json_key(w, "agents");
    json_int(w, (int64_t)sp.agents);
    for (size_t f = 0; f < TP_RANK_FIGURES; f++) {
        char key[32];
        snprintf(key, sizeof key, "%s_s_per_step", f == 1 ? "own" : tp_rank_figure_names[f]);
        json_key(w, key);
        json_object_begin(w);
        const char *names[] = {"median", "p5", "p95", "lowest", "highest"};
        const double v[] = {sp.p50[f], sp.p5[f], sp.p95[f], sp.min[f], sp.max[f]};
        for (int k = 0; k < 5; k++)
            number_or_null(w, names[k], v[k]);
        json_object_end(w);
    }
    json_key(w, "standing_out");
    json_array_begin(w);
    for (size_t i = 0; i < sp.nstandouts; i++)
        json_int(w, r->rows[sp.standouts[i]].rank);
    json_array_end(w);
    json_key(w, "slow_nodes");
    json_array_begin(w);
    for (size_t i = 0; i < sp.nslow_nodes; i++) {
        json_object_begin(w);
        json_key(w, "agent");
        json_string(w, tp_inventory_agent_name(&s->inv, sp.slow_nodes[i].agent_id));
        json_key(w, "ranks");
        json_int(w, (int64_t)sp.slow_nodes[i].ranks);
        json_key(w, "first_rank");
        json_int(w, sp.slow_nodes[i].first_rank);
        json_key(w, "last_rank");
        json_int(w, sp.slow_nodes[i].last_rank);
        json_object_end(w);
    }
    json_array_end(w);
    json_object_end(w);
}

/* The figures of ranks table r, into the object open in w. */
static void ranks_json_fields(json_writer *w, const tp_summary *s, const tp_ranks *r)
{
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
        json_string(w, tp_inventory_agent_name(&s->inv, row->agent_id));
        json_key(w, "local_rank");
        json_int(w, row->local_rank);
        json_key(w, "gpu"); /* the index of the GPU it drove on its agent */
        if (row->gpu >= 0)
            json_int(w, row->gpu);
        else
            json_null(w);
        json_key(w, "steps");
        json_int(w, (int64_t)row->steps);
        json_key(w, "measured_steps"); /* those the parts are over: its steady steps */
        json_int(w, (int64_t)row->measured_steps);
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
        number_or_null(w, "cpu_wait_percent", row->cpu_wait_percent);
        json_key(w, "straggler");
        json_bool(w, row->straggler);
        json_key(w, "cause");
        if (row->straggler) {
            char cause[TP_CAUSE_MAX];
            tp_straggler_cause_text(cause, sizeof cause, &s->inv, row);
            json_string(w, cause);
        } else {
            json_null(w);
        }
        json_object_end(w);
    }
    json_array_end(w);
    spread_json(w, s, r);
}

void tp_report_ranks_json(json_writer *w, const tp_summary *s)
{
    json_key(w, "ranks");
    if (s->ranks.n == 0) {
        json_null(w);
        return;
    }
    json_object_begin(w);
    ranks_json_fields(w, s, &s->ranks);
    /* the same over the latest pace, where the first rank's changed */
    const tp_regime *pace = latest_pace(s);
    json_key(w, "latest");
    if (pace) {
        json_object_begin(w);
        json_key(w, "first_step");
        json_int(w, (int64_t)pace->first_step);
        json_key(w, "last_step");
        json_int(w, (int64_t)pace->last_step);
        ranks_json_fields(w, s, &s->ranks_latest);
        json_object_end(w);
    } else {
        json_null(w);
    }
    json_object_end(w);
}
