/* ranks_words.c: the verdicts across ranks in words (ranks_words.h). */
#include "render/ranks_words.h"

#include <stdio.h>

#include "analyze/rank_compare.h"
#include "render/report.h"
#include "render/gpu_reasons_words.h"
#include "render/causes_words.h"

void tp_straggler_cause_text(char *out, size_t cap, const tp_run_inventory *inv,
                             const tp_rank_row *r)
{
    const tp_straggler_cause *c = &r->cause;
    size_t len = (size_t)snprintf(out, cap,
                                  c->input ? "its input (dataloader_next, to_device): %.1f ms per "
                                             "step vs %.1f ms on the median rank"
                                           : "its compute (train_batch and its parts): %.1f ms "
                                             "per step vs %.1f ms on the median rank",
                                  c->part_s * 1e3, c->median_part_s * 1e3);
    if (len < cap && c->gpu_note == TP_GPU_NOTE_THROTTLED) {
        char why[160];
        tp_gpu_reasons_text(why, sizeof why, c->gpu_reasons);
        len +=
            (size_t)snprintf(out + len, cap - len,
                             "; its GPU %d was held back by %s %.0f %% of the time vs %.0f %% on "
                             "the median rank (NVML's clock event reasons)",
                             r->gpu, why, c->gpu_value, c->gpu_median);
    } else if (len < cap && c->gpu_note == TP_GPU_NOTE_CLOCK)
        len += (size_t)snprintf(out + len, cap - len,
                                "; its GPU %d runs at %.0f MHz vs %.0f MHz (throttled?)", r->gpu,
                                c->gpu_value, c->gpu_median);
    else if (len < cap && c->gpu_note == TP_GPU_NOTE_UTIL)
        len += (size_t)snprintf(out + len, cap - len,
                                "; its GPU %d is %.0f %% busy vs %.0f %% on the median rank",
                                r->gpu, c->gpu_value, c->gpu_median);
    if (len < cap && c->cpu_held)
        len += (size_t)snprintf(out + len, cap - len,
                                "; its step thread waited for a CPU %.0f %% of the time vs %.0f %% "
                                "on the median rank (other work on its CPUs)",
                                c->cpu_wait, c->median_cpu_wait);
    if (len < cap && c->node_slow)
        snprintf(out + len, cap - len, "; every rank on node %s is slow: look at the node",
                 tp_inventory_agent_name(inv, r->agent_id));
}

/* " Judged on steps 201-300, its latest pace: over the whole run its own
 * work took 62 % longer than the median rank's (...)": what a straggler
 * verdict on the latest pace was judged on, and what the whole run's
 * figures, diluted by the steps before, said of the same rank. */
static void straggler_pace_words(char *out, size_t cap, const tp_summary *s, const tp_verdict *v)
{
    const tp_regime *now = v->pace;
    const tp_rank_row *whole = tp_ranks_find(&s->ranks, v->rank);
    char was[160] = "";
    if (whole && whole->straggler)
        snprintf(was, sizeof was,
                 ": over the whole run its own work took %.0f %% longer than the "
                 "median rank's, the steps before included",
                 100 * whole->excess);
    else if (whole)
        snprintf(was, sizeof was,
                 ": over the whole run, the steps before included, it was no "
                 "straggler (its own work %+.0f %% against the median rank's)",
                 100 * whole->excess);
    snprintf(out, cap, " Judged on steps %zu-%zu, its latest %s%s (Changes of pace, below).",
             now->first_step, now->last_step,
             v->pace_drifted ? "(the pace grew or shrank all along, at no one step)" : "pace", was);
}

void tp_straggler_words(char *out, size_t cap, const tp_summary *s, const tp_verdict *v)
{
    const tp_rank_row *row = v->f.straggler.row;
    const tp_ranks *r = v->f.straggler.ranks ? v->f.straggler.ranks : &s->ranks;
    char cause[TP_CAUSE_MAX], who[80], since[48];
    tp_straggler_cause_text(cause, sizeof cause, &s->inv, row);
    if (v->pace) {
        tp_verdict_since(since, sizeof since, v, true);
        snprintf(who, sizeof who, "%s, rank %d", since, row->rank);
    } else
        snprintf(who, sizeof who, "Rank %d", row->rank);
    int n = snprintf(out, cap,
                     "%s is a straggler: its own work (input + compute) takes %.0f %% longer "
                     "per step than the median rank's (%.1f vs %.1f ms), and in synchronous "
                     "training every other rank waits for it in collectives. Cause: %s.",
                     who, 100 * row->excess, 1e3 * tp_rank_own_per_step(row), 1e3 * r->median_own_s,
                     cause);
    if (v->pace && n > 0 && (size_t)n < cap)
        straggler_pace_words(out + n, cap - (size_t)n, s, v);
}

void tp_communication_words(char *out, size_t cap, const tp_verdict *v)
{
    char who[80] = "Ranks", since[48];
    if (v->pace) {
        tp_verdict_since(since, sizeof since, v, true);
        snprintf(who, sizeof who, "%s, ranks", since);
    }
    int n = snprintf(out, cap,
                     "%s spend %.0f %% of their step time in communication %s, and none of "
                     "them is a straggler: more work per communication (a larger batch per rank, "
                     "gradient accumulation with no_sync), DDP's bucket_cap_mb, or a faster "
                     "interconnect.",
                     who, 100 * v->f.comm.exposed_s / v->f.comm.window_s,
                     v->f.comm.device ? "on the GPU after their backward compute ended (CUDA "
                                        "events: the last collective of each backward pass, and "
                                        "those outside it)"
                                      : "with no compute region open");
    if (v->pace && n > 0 && (size_t)n < cap)
        snprintf(out + n, cap - (size_t)n,
                 " Judged on steps %zu-%zu, its latest pace (Changes of pace, below).",
                 v->pace->first_step, v->pace->last_step);
}
