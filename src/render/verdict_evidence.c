/* verdict_evidence.c: see verdict_evidence.h (words are in verdict_words.c). */
#include "render/verdict_evidence.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/metric_catalog.h"
#include "render/units.h"
#include "render/verdict_words.h"
#include "util/labels.h"
#include "util/utf8.h"
#include "trainprof.h"

/* ---- figures ---- */

static tp_evidence_figure *add(tp_evidence *e, const char *key, const char *label,
                               tp_figure_unit unit)
{
    if (e->n >= TP_EVIDENCE_FIGURES) /* a programming error: every verdict has fewer */
        return &e->v[TP_EVIDENCE_FIGURES - 1];
    tp_evidence_figure *f = &e->v[e->n++];
    memset(f, 0, sizeof *f);
    f->key = key, f->label = label, f->unit = unit;
    return f;
}

/* A number with its decimals in JSON; negative or NaN: the run did not have it. */
static void number(tp_evidence *e, const char *key, const char *label, tp_figure_unit unit,
                   int digits, double value)
{
    tp_evidence_figure *f = add(e, key, label, unit);
    f->digits = digits;
    f->value = value;
}

static void text(tp_evidence *e, const char *key, const char *label, const char *value)
{
    tp_utf8_clean(add(e, key, label, TP_FIGURE_TEXT)->text, sizeof e->v[0].text, value);
}

static void flag(tp_evidence *e, const char *key, const char *label, bool value)
{
    add(e, key, label, TP_FIGURE_BOOL)->value = value;
}

/* rank (a rank verdict's; none where the process had no rank) */
static void rank(tp_evidence *e, int r) { number(e, "rank", "rank", TP_FIGURE_PLAIN, 0, r); }

/* The agent a system verdict is about: its name where the run has several. */
static void agent(tp_evidence *e, const tp_summary *s, int64_t agent_id)
{
    tp_evidence_figure *f = add(e, "agent", "node", TP_FIGURE_AGENT);
    /* "" for one agent: the run is the node */
    snprintf(f->text, sizeof f->text, "%.60s",
             s->inv.nagents > 1 ? tp_inventory_agent_name(&s->inv, agent_id) : "");
}

static void over(tp_evidence *e, const tp_series_summary *x)
{
    text(e, "over", "over", strcmp(tp_verdict_over_key(x), "steps") == 0 ? "steps" : "run");
}

static const char *input_cause_word(tp_input_cause c)
{
    return c == TP_INPUT_CPU          ? "cpu"
           : c == TP_INPUT_CONTENTION ? "contention"
           : c == TP_INPUT_WORKERS    ? "latency"
                                      : "io";
}

/* The step since which v was judged, its latest pace (null: the whole
 * run's), and where that pace drifted all along, its last step too (a cut
 * of a slope, not a change at that step). */
static void since_step(tp_evidence *e, const tp_verdict *v)
{
    number(e, "since_step", v->pace_drifted ? "judged over steps from" : "judged since step",
           TP_FIGURE_PLAIN, 0, v->pace ? (double)v->pace->first_step : -1);
    if (v->pace_drifted)
        number(e, "to_step", "to", TP_FIGURE_PLAIN, 0, (double)v->pace->last_step);
}

static void rank_evidence(tp_evidence *e, const tp_verdict *v)
{
    rank(e, v->rank);
    since_step(e, v);
    if (v->kind == TP_VERDICT_INPUT_BOUND) {
        const __typeof__(v->f.input) *f = &v->f.input;
        number(e, "dataloader_next_share", TP_PHASE_DATALOADER_NEXT, TP_FIGURE_SHARE, 4, f->share);
        number(e, "dataloader_next_mean_s", "a fetch", TP_FIGURE_SECONDS, 6, f->next_mean_s);
        number(e, "step_mean_s", "a step", TP_FIGURE_SECONDS, 6, f->step_mean_s);
        number(e, "proc_count_max", "processes at most", TP_FIGURE_PLAIN, 0, f->procs);
        text(e, "cause", "cause", input_cause_word(f->cause));
        number(e, "cpu_util_p50_percent", "CPUs busy (median)", TP_FIGURE_PERCENT, 2, f->cpu_p50);
        number(e, "training_cpu_p50_percent", "the training's share of them", TP_FIGURE_PERCENT, 2,
               f->own_cpu_p50);
        number(e, "training_cpu_wait_p50_percent", "the training waiting for a CPU (median)",
               TP_FIGURE_PERCENT, 2, f->held_p50);
        number(e, "pressure_io_some_p50_percent", "waiting for I/O (median)", TP_FIGURE_PERCENT, 2,
               f->io_p50);
        number(e, "disk_busy_p50_percent", "busiest disk (median)", TP_FIGURE_PERCENT, 2,
               f->disk_p50);
        number(e, "training_blocked_mean", "the training's threads waiting on storage (mean)",
               TP_FIGURE_PLAIN, 3, f->blocked);
        if (f->over_pace) /* the medians of the latest pace's span */
            text(e, "over", "over", "latest_pace");
        else
            over(e, f->cpu);
    } else if (v->kind == TP_VERDICT_TRANSFER_BOUND) {
        number(e, "to_device_share", TP_PHASE_TO_DEVICE, TP_FIGURE_SHARE, 4,
               v->f.transfer.host_share);
        number(e, "to_device_device_share", TP_PHASE_TO_DEVICE " on the GPU", TP_FIGURE_SHARE, 4,
               v->f.transfer.device_share);
    } else {
        const __typeof__(v->f.compute) *f = &v->f.compute;
        number(e, "train_batch_share", TP_PHASE_TRAIN_BATCH, TP_FIGURE_SHARE, 4, f->share);
        number(e, "train_batch_device_share", TP_PHASE_TRAIN_BATCH " on the GPU", TP_FIGURE_SHARE,
               4, f->device_share);
        number(e, "dataloader_next_share", TP_PHASE_DATALOADER_NEXT, TP_FIGURE_SHARE, 4,
               f->input_share);
        number(e, "step_mean_s", "a step", TP_FIGURE_SECONDS, 6, f->step_mean_s);
        /* the GPU's side, where the step ran on one (-1: null) */
        number(e, "gpu", "GPU", TP_FIGURE_PLAIN, 0, v->gpu ? v->gpu->index : -1);
        number(e, "gpu_busy_share", "GPU busy", TP_FIGURE_SHARE, 4, f->gpu_busy);
        if (f->witness != TP_GPU_BUSY_UNKNOWN)
            text(e, "gpu_busy_from", "from",
                 f->witness == TP_GPU_BUSY_NVML ? "nvml" : "capture_windows");
        number(e, "sm_active_mean_percent", "SMs active (mean)", TP_FIGURE_PERCENT, 2,
               f->sm_active ? f->sm_active->steps.mean : -1);
        number(e, "window_gpu_idle_share", "GPU idle in the captured steps", TP_FIGURE_SHARE, 4,
               f->window_idle);
        number(e, "training_cpu_cores", "the training's CPU, cores", TP_FIGURE_PLAIN, 2,
               f->proc_cpu ? f->proc_cpu->steps.mean / 100 : -1);
    }
}

static void gpu_evidence(tp_evidence *e, const tp_summary *s, const tp_verdict *v)
{
    if (v->kind == TP_VERDICT_GPU_MEMORY && !v->gpu) { /* a rank's allocator */
        const tp_gpu_memory_rank *g = v->f.gpu_memory.allocator;
        rank(e, v->rank);
        number(e, "allocator_peak_bytes", "allocator's peak", TP_FIGURE_BYTES, 0,
               v->f.gpu_memory.used_max_bytes);
        number(e, "device_memory_bytes",
               g ? "what it can use of the device" : "the device's memory", TP_FIGURE_BYTES, 0,
               v->f.gpu_memory.total_bytes);
        if (g) {
            number(e, "peak_reserved_bytes", "its peak reserved", TP_FIGURE_BYTES, 0,
                   g->peak_reserved_bytes);
            number(e, "alloc_retries", "cache flushes to retry", TP_FIGURE_PLAIN, 0,
                   isfinite(g->retries) ? g->retries : -1);
            text(e, "source", "read", "at step boundaries");
        }
        return;
    }
    number(e, "gpu", "GPU", TP_FIGURE_PLAIN, 0, v->gpu->index);
    agent(e, s, v->agent_id);
    if (v->kind == TP_VERDICT_GPU_UNDERUSED) {
        const tp_series_summary *u = v->f.gpu_util.util, *sm = v->f.gpu_util.sm_active;
        number(e, "util_mean_percent", "utilization (mean)", TP_FIGURE_PERCENT, 2, u->steps.mean);
        number(e, "util_p50_percent", "utilization (median)", TP_FIGURE_PERCENT, 2, u->steps.p50);
        over(e, u);
        if (sm)
            number(e, "sm_active_mean_percent", "SMs active (mean)", TP_FIGURE_PERCENT, 2,
                   sm->steps.mean);
    } else if (v->kind == TP_VERDICT_GPU_THROTTLED) {
        number(e, "reasons", "slowdown reasons (NVML bits)", TP_FIGURE_PLAIN, 0,
               v->f.gpu_throttle.bits);
        number(e, "slowdown_share", "slowed", TP_FIGURE_SHARE, 4, v->f.gpu_throttle.share);
        number(e, "trouble_share", "by heat or a fault", TP_FIGURE_SHARE, 4,
               v->f.gpu_throttle.trouble_share);
    } else {
        number(e, "mem_used_max_bytes", "memory used at most", TP_FIGURE_BYTES, 0,
               v->f.gpu_memory.used_max_bytes);
        number(e, "mem_total_bytes", "its memory", TP_FIGURE_BYTES, 0, v->f.gpu_memory.total_bytes);
        if (v->f.gpu_memory.mig >= 0)
            number(e, "mig", "MIG instance", TP_FIGURE_PLAIN, 0, v->f.gpu_memory.mig);
    }
}

static void system_evidence(tp_evidence *e, const tp_summary *s, const tp_verdict *v)
{
    if (v->kind == TP_VERDICT_GPU_UNDERUSED || v->kind == TP_VERDICT_GPU_THROTTLED ||
        v->kind == TP_VERDICT_GPU_MEMORY) {
        gpu_evidence(e, s, v);
        return;
    }
    agent(e, s, v->agent_id);
    if (v->kind == TP_VERDICT_MEMORY_GROWTH) {
        const tp_memory_growth *g = &v->f.memory_growth;
        number(e, "rss_start_bytes", "RSS at the start", TP_FIGURE_BYTES, 0, g->start_bytes);
        number(e, "rss_end_bytes", "at the end", TP_FIGURE_BYTES, 0, g->end_bytes);
        number(e, "rate_bytes_per_s", "growing", TP_FIGURE_BYTES_PER_S, 1, g->rate_bytes_per_s);
        text(e, "limit", "limit", g->cgroup ? "cgroup" : "host");
        number(e, "headroom_bytes", "headroom", TP_FIGURE_BYTES, 0, g->headroom_bytes);
        number(e, "seconds_to_limit", "until the limit", TP_FIGURE_SECONDS, 0, g->seconds_to_limit);
    } else if (v->kind == TP_VERDICT_HOST_MEMORY) {
        number(e, "host_mem_used_max_bytes", "memory used at most", TP_FIGURE_BYTES, 0,
               v->f.host_memory.used_max_bytes);
        number(e, "mem_total_bytes", "of", TP_FIGURE_BYTES, 0, v->f.host_memory.total_bytes);
        number(e, "swap_used_max_bytes", "swap used at most", TP_FIGURE_BYTES, 0,
               v->f.host_memory.swap_max_bytes);
        number(e, "training_rss_max_bytes", "the training's processes at most", TP_FIGURE_BYTES, 0,
               v->f.host_memory.training_max_bytes);
    } else if (v->kind == TP_VERDICT_CPU_CONTENTION) {
        const __typeof__(v->f.cpu) *c = &v->f.cpu;
        number(e, "cpu_util_mean_percent", "CPUs busy (mean)", TP_FIGURE_PERCENT, 2,
               c->util->steps.mean);
        number(e, "proc_cpu_mean_percent", "the training's CPU (mean, 100 a core)",
               TP_FIGURE_PERCENT, 2, c->proc->steps.mean);
        number(e, "cpu_count", "cores", TP_FIGURE_PLAIN, 0, c->cores);
        number(e, "others_cpu_percent", "others' share of the machine", TP_FIGURE_PERCENT, 2,
               c->others_percent);
        number(e, "training_cpu_wait_percent", "the training waiting for a CPU (mean)",
               TP_FIGURE_PERCENT, 2, c->held ? c->held->steps.mean : -1);
        number(e, TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT,
               "its step thread waiting for a CPU (mean)", TP_FIGURE_PERCENT, 2,
               c->step_wait ? c->step_wait->steps.mean : -1);
        if (c->step_wait && c->step_wait_rank >= 0)
            number(e, "step_thread_rank", "of rank", TP_FIGURE_PLAIN, 0, c->step_wait_rank);
        number(e, "step_threads", "step threads read", TP_FIGURE_PLAIN, 0, (double)c->step_threads);
        number(e, "pressure_cpu_some_mean_percent", "waiting for a CPU (mean)", TP_FIGURE_PERCENT,
               2, c->wait ? c->wait->steps.mean : -1);
        number(e, "cpu_steal_mean_percent", "the VM's host's steal (mean)", TP_FIGURE_PERCENT, 2,
               c->steal ? c->steal->steps.mean : -1);
        over(e, c->util);
    } else if (v->kind == TP_VERDICT_CPU_STEAL) {
        const __typeof__(v->f.cpu) *c = &v->f.cpu;
        number(e, "cpu_steal_mean_percent", "the VM's host's steal (mean)", TP_FIGURE_PERCENT, 2,
               c->steal->steps.mean);
        number(e, "cpu_steal_p95_percent", "p95", TP_FIGURE_PERCENT, 2, c->steal->steps.p95);
        number(e, "proc_cpu_mean_percent", "the training's CPU (mean, 100 a core)",
               TP_FIGURE_PERCENT, 2, c->proc->steps.mean);
        number(e, "cpu_count", "cores", TP_FIGURE_PLAIN, 0, c->cores >= 1 ? c->cores : -1);
        over(e, c->steal);
    } else if (v->kind == TP_VERDICT_CPU_SATURATED) {
        const __typeof__(v->f.cpu) *c = &v->f.cpu;
        number(e, "cpu_util_mean_percent", "CPUs busy (mean)", TP_FIGURE_PERCENT, 2,
               c->util ? c->util->steps.mean : -1);
        number(e, "proc_cpu_mean_percent", "the command's CPU (mean, 100 a core)",
               TP_FIGURE_PERCENT, 2, c->proc ? c->proc->steps.mean : -1);
        number(e, "cgroup_cpu_limit_cores", "its cgroup's limit, cores", TP_FIGURE_PLAIN, 2,
               c->limit_cores > 0 ? c->limit_cores : -1);
        number(e, "pressure_cpu_some_mean_percent", "waiting for a CPU (mean)", TP_FIGURE_PERCENT,
               2, c->wait ? c->wait->steps.mean : -1);
        over(e, c->host ? c->util : c->proc);
    } else {
        const tp_series_summary *link = v->f.network.link, *worst = v->f.network.rate;
        char labels[TP_LABELS_MAX];
        tp_labels_display(link->series->labels, labels, sizeof labels);
        text(e, "link", "link", labels);
        text(e, "direction", "direction", v->f.network.sent ? "sent" : "received");
        number(e, "p95_bytes_per_s", "p95", TP_FIGURE_BYTES_PER_S, 0, worst->steps.p95);
        number(e, "mean_bytes_per_s", "mean", TP_FIGURE_BYTES_PER_S, 0, worst->steps.mean);
        number(e, "link_bytes_per_s", "the link's speed", TP_FIGURE_BYTES_PER_S, 0,
               link->stats.mean);
        over(e, worst);
    }
}

void tp_verdict_evidence_of(const tp_summary *s, const tp_verdict *v, tp_evidence *out)
{
    out->n = 0;
    switch (v->kind) {
    case TP_VERDICT_INPUT_BOUND:
    case TP_VERDICT_TRANSFER_BOUND:
    case TP_VERDICT_COMPUTE_BOUND:
    case TP_VERDICT_HOST_BOUND: rank_evidence(out, v); break;
    case TP_VERDICT_STRAGGLER: {
        const tp_rank_row *row = v->f.straggler.row;
        const tp_ranks *r = v->f.straggler.ranks ? v->f.straggler.ranks : &s->ranks;
        double steps = row->measured_steps > 0 ? (double)row->measured_steps : NAN;
        rank(out, row->rank);
        since_step(out, v);
        number(out, "own_s_per_step", "its own work a step", TP_FIGURE_SECONDS, 6,
               tp_rank_own_per_step(row));
        number(out, "median_own_s_per_step", "the median rank's", TP_FIGURE_SECONDS, 6,
               r->median_own_s);
        number(out, "input_s_per_step", "its input a step", TP_FIGURE_SECONDS, 6,
               row->input_s / steps);
        number(out, "compute_s_per_step", "its compute a step", TP_FIGURE_SECONDS, 6,
               row->compute_s / steps);
        number(out, "median_comm_s_per_step", "the median rank's communication a step",
               TP_FIGURE_SECONDS, 6, r->median_comm_s);
        break;
    }
    case TP_VERDICT_COMMUNICATION_BOUND:
        number(out, "exposed_comm_s", "communication not hidden", TP_FIGURE_SECONDS, 6,
               v->f.comm.exposed_s);
        number(out, "window_s", "of the steps' time", TP_FIGURE_SECONDS, 6, v->f.comm.window_s);
        number(out, "ranks", "ranks", TP_FIGURE_PLAIN, 0, (double)v->f.comm.ranks);
        flag(out, "on_device", "timed on the GPU", v->f.comm.device);
        since_step(out, v);
        break;
    case TP_VERDICT_GPU_MEMORY_GROWTH: {
        const tp_gpu_memory_rank *g = v->f.gpu_growth;
        rank(out, g->rank);
        number(out, "between_steps_first_bytes", "between steps at first", TP_FIGURE_BYTES, 0,
               g->growth_first_bytes);
        number(out, "between_steps_last_bytes", "at last", TP_FIGURE_BYTES, 0,
               g->growth_last_bytes);
        number(out, "growth_bytes_per_step", "growing a step", TP_FIGURE_BYTES, 0,
               g->growth_bytes_per_step);
        number(out, "limit_bytes", "what it can use", TP_FIGURE_BYTES, 0, g->limit_bytes);
        number(out, "out_of_room_step", "out of room at step", TP_FIGURE_PLAIN, 0,
               isfinite(g->out_of_room_step) ? g->out_of_room_step : -1);
        break;
    }
    default: system_evidence(out, s, v); break;
    }
}

/* ---- writing them ---- */

static bool missing(const tp_evidence_figure *f)
{
    return f->unit != TP_FIGURE_TEXT && f->unit != TP_FIGURE_BOOL && f->unit != TP_FIGURE_AGENT &&
           !(f->value >= 0 && isfinite(f->value));
}

void tp_evidence_json(json_writer *w, const tp_evidence *e)
{
    json_object_begin(w);
    for (size_t i = 0; i < e->n; i++) {
        const tp_evidence_figure *f = &e->v[i];
        json_key(w, f->key);
        if (f->unit == TP_FIGURE_TEXT)
            json_string(w, f->text);
        else if (f->unit == TP_FIGURE_AGENT && f->text[0])
            json_string(w, f->text);
        else if (f->unit == TP_FIGURE_BOOL)
            json_bool(w, f->value != 0);
        else if (f->unit == TP_FIGURE_AGENT || missing(f))
            json_null(w);
        else
            json_double_fixed(w, f->value, f->digits);
    }
    json_object_end(w);
}

void tp_evidence_value_text(char *buf, size_t cap, const tp_evidence_figure *f)
{
    if (f->unit == TP_FIGURE_TEXT || f->unit == TP_FIGURE_AGENT) {
        snprintf(buf, cap, "%s", f->text[0] ? f->text : "-");
        return;
    }
    if (f->unit == TP_FIGURE_BOOL) {
        snprintf(buf, cap, "%s", f->value != 0 ? "yes" : "no");
        return;
    }
    if (missing(f)) {
        snprintf(buf, cap, "-");
        return;
    }
    switch (f->unit) {
    case TP_FIGURE_SHARE: snprintf(buf, cap, "%.0f%%", 100 * f->value); break;
    case TP_FIGURE_PERCENT: snprintf(buf, cap, "%.0f%%", f->value); break;
    case TP_FIGURE_SECONDS: tp_format_duration(buf, cap, f->value); break;
    case TP_FIGURE_BYTES: tp_format_value(buf, cap, "bytes", f->value); break;
    case TP_FIGURE_BYTES_PER_S: tp_format_value(buf, cap, "bytes_per_s", f->value); break;
    default: snprintf(buf, cap, "%.*f", f->digits, f->value); break;
    }
}

void tp_evidence_text(FILE *out, const tp_evidence *e)
{
    bool first = true;
    for (size_t i = 0; i < e->n; i++) {
        const tp_evidence_figure *f = &e->v[i];
        if (missing(f) || (f->unit == TP_FIGURE_AGENT && !f->text[0]))
            continue;
        char value[96];
        tp_evidence_value_text(value, sizeof value, f);
        fprintf(out, "%s%s %s", first ? "" : ", ", f->label, value);
        first = false;
    }
}
