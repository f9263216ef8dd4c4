/* verdict_evidence.c: each verdict's figures as a JSON object (the
 * evidence report --json and the Verdicts section show; words are in
 * verdict_words.c). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/metric_catalog.h"
#include "render/report.h"
#include "render/verdict_words.h"
#include "util/json_writer.h"
#include "util/labels.h"

/* Keeps an evidence object valid JSON whatever figures went into it: the
 * non-finite numbers printf writes (nan, inf, with a sign) become null, and
 * an object cut by its buffer becomes {"cut":true}. */
static void seal_evidence(char *evidence, size_t cap)
{
    char out[TP_VERDICT_EVIDENCE_MAX];
    size_t n = 0, len = strlen(evidence);
    bool in_string = false, cut = len == 0 || evidence[len - 1] != '}';
    for (const char *p = evidence; *p && !cut; p++) {
        if (*p == '"' && (p == evidence || p[-1] != '\\'))
            in_string = !in_string;
        size_t word = 0;
        if (!in_string) {
            const char *q = p + (*p == '-');
            word = strncmp(q, "nan", 3) == 0 || strncmp(q, "inf", 3) == 0 ? (size_t)(q + 3 - p) : 0;
        }
        if (n + (word ? 4 : 1) >= sizeof out) {
            cut = true;
            break;
        }
        if (word) {
            memcpy(out + n, "null", 4);
            n += 4;
            p += word - 1;
        } else {
            out[n++] = *p;
        }
    }
    out[n] = '\0';
    snprintf(evidence, cap, "%s", cut ? "{\"cut\":true}" : out);
}

static void rank_evidence(char *out, size_t cap, const tp_verdict *v)
{
    if (v->kind == TP_VERDICT_INPUT_BOUND) {
        const __typeof__(v->f.input) *f = &v->f.input;
        snprintf(out, cap,
                 "{\"rank\":%d,\"dataloader_next_share\":%.4f,\"dataloader_next_mean_s\":%.6f,"
                 "\"step_mean_s\":%.6f,\"proc_count_max\":%.0f,\"cause\":\"%s\","
                 "\"cpu_util_p50_percent\":%.2f,\"training_cpu_p50_percent\":%.2f,"
                 "\"pressure_io_some_p50_percent\":%.2f,"
                 "\"disk_busy_p50_percent\":%.2f,\"over\":\"%s\"}",
                 v->rank, f->share, f->next_mean_s, f->step_mean_s, f->procs,
                 f->cause == TP_INPUT_CPU          ? "cpu"
                 : f->cause == TP_INPUT_CONTENTION ? "contention"
                 : f->cause == TP_INPUT_WORKERS    ? "latency"
                                                   : "io",
                 f->cpu_p50, f->own_cpu_p50, f->io_p50, f->disk_p50, tp_verdict_over_key(f->cpu));
    } else if (v->kind == TP_VERDICT_TRANSFER_BOUND) {
        snprintf(out, cap, "{\"rank\":%d,\"to_device_share\":%.4f,\"to_device_device_share\":%.4f}",
                 v->rank, v->f.transfer.host_share, v->f.transfer.device_share);
    } else {
        const __typeof__(v->f.compute) *f = &v->f.compute;
        snprintf(out, cap,
                 "{\"rank\":%d,\"train_batch_share\":%.4f,\"train_batch_device_share\":%.4f,"
                 "\"dataloader_next_share\":%.4f,\"step_mean_s\":%.6f}",
                 v->rank, f->share, f->device_share, f->input_share, f->step_mean_s);
    }
}

static void system_evidence(char *out, size_t cap, const tp_summary *s, const tp_verdict *v)
{
    char of[80], agent[80];
    tp_verdict_agent_of(s->run, v->agent_id, of, sizeof of, agent, sizeof agent);
    if (v->kind == TP_VERDICT_GPU_UNDERUSED) {
        const tp_series_summary *u = v->f.gpu_util.util, *sm = v->f.gpu_util.sm_active;
        char sm_part[64] = "";
        if (sm)
            snprintf(sm_part, sizeof sm_part, ",\"sm_active_mean_percent\":%.2f", sm->steps.mean);
        snprintf(out, cap,
                 "{\"gpu\":%d,\"agent\":%s,\"util_mean_percent\":%.2f,\"util_p50_percent\":%.2f,"
                 "\"over\":\"%s\"%s}",
                 v->gpu->index, agent, u->steps.mean, u->steps.p50, tp_verdict_over_key(u),
                 sm_part);
    } else if (v->kind == TP_VERDICT_GPU_THROTTLED) {
        snprintf(out, cap,
                 "{\"gpu\":%d,\"agent\":%s,\"reasons\":%u,\"slowdown_share\":%.4f,"
                 "\"trouble_share\":%.4f}",
                 v->gpu->index, agent, v->f.gpu_throttle.bits, v->f.gpu_throttle.share,
                 v->f.gpu_throttle.trouble_share);
    } else if (v->kind == TP_VERDICT_GPU_MEMORY && !v->gpu) { /* a capture window's allocator */
        snprintf(out, cap,
                 "{\"rank\":%d,\"allocator_peak_bytes\":%.0f,\"device_memory_bytes\":%.0f}",
                 v->rank, v->f.gpu_memory.used_max_bytes, v->f.gpu_memory.total_bytes);
    } else if (v->kind == TP_VERDICT_GPU_MEMORY) {
        char inst[32] = "";
        if (v->f.gpu_memory.mig >= 0)
            snprintf(inst, sizeof inst, ",\"mig\":%d", v->f.gpu_memory.mig);
        snprintf(out, cap,
                 "{\"gpu\":%d,\"agent\":%s,\"mem_used_max_bytes\":%.0f,\"mem_total_bytes\":%.0f%s}",
                 v->gpu->index, agent, v->f.gpu_memory.used_max_bytes, v->f.gpu_memory.total_bytes,
                 inst);
    } else if (v->kind == TP_VERDICT_MEMORY_GROWTH) {
        const tp_memory_growth *g = &v->f.memory_growth;
        snprintf(out, cap,
                 "{\"agent\":%s,\"rss_start_bytes\":%.0f,\"rss_end_bytes\":%.0f,"
                 "\"rate_bytes_per_s\":%.1f,\"limit\":\"%s\",\"headroom_bytes\":%.0f,"
                 "\"seconds_to_limit\":%.0f}",
                 agent, g->start_bytes, g->end_bytes, g->rate_bytes_per_s,
                 g->cgroup ? "cgroup" : "host",
                 isfinite(g->headroom_bytes) ? g->headroom_bytes : -1,
                 isfinite(g->seconds_to_limit) ? g->seconds_to_limit : -1);
    } else if (v->kind == TP_VERDICT_HOST_MEMORY) {
        snprintf(out, cap,
                 "{\"agent\":%s,\"host_mem_used_max_bytes\":%.0f,\"mem_total_bytes\":%.0f,"
                 "\"swap_used_max_bytes\":%.0f}",
                 agent, v->f.host_memory.used_max_bytes, v->f.host_memory.total_bytes,
                 v->f.host_memory.swap_max_bytes);
    } else if (v->kind == TP_VERDICT_CPU_SATURATED) {
        const __typeof__(v->f.cpu) *c = &v->f.cpu;
        snprintf(out, cap,
                 "{\"agent\":%s,\"cpu_util_mean_percent\":%.2f,\"proc_cpu_mean_percent\":%.2f,"
                 "\"cgroup_cpu_limit_cores\":%.2f,\"pressure_cpu_some_mean_percent\":%.2f,"
                 "\"over\":\"%s\"}",
                 agent, c->util ? c->util->steps.mean : -1, c->proc ? c->proc->steps.mean : -1,
                 c->limit_cores, c->wait ? c->wait->steps.mean : -1,
                 tp_verdict_over_key(c->host ? c->util : c->proc));
    } else {
        const tp_series_summary *link = v->f.network.link, *worst = v->f.network.rate;
        char labels[TP_LABELS_MAX], link_json[80];
        tp_labels_display(link->series->labels, labels, sizeof labels);
        tp_json_quote(link_json, sizeof link_json, labels, 60);
        snprintf(out, cap,
                 "{\"agent\":%s,\"link\":%s,\"direction\":\"%s\",\"p95_bytes_per_s\":%.0f,"
                 "\"mean_bytes_per_s\":%.0f,\"link_bytes_per_s\":%.0f,\"over\":\"%s\"}",
                 agent, link_json, v->f.network.sent ? "sent" : "received", worst->steps.p95,
                 worst->steps.mean, link->stats.mean, tp_verdict_over_key(worst));
    }
}

void tp_verdict_evidence(char *out, size_t cap, const tp_summary *s, const tp_verdict *v)
{
    char text[TP_VERDICT_EVIDENCE_MAX];
    const tp_ranks *r = &s->ranks;
    switch (v->kind) {
    case TP_VERDICT_INPUT_BOUND:
    case TP_VERDICT_TRANSFER_BOUND:
    case TP_VERDICT_COMPUTE_BOUND: rank_evidence(text, sizeof text, v); break;
    case TP_VERDICT_STRAGGLER: {
        const tp_rank_row *row = v->f.straggler.row;
        snprintf(text, sizeof text,
                 "{\"rank\":%d,\"own_s_per_step\":%.6f,\"median_own_s_per_step\":%.6f,"
                 "\"input_s_per_step\":%.6f,\"compute_s_per_step\":%.6f,"
                 "\"median_comm_s_per_step\":%.6f}",
                 row->rank, tp_rank_own_per_step(row), r->median_own_s,
                 row->input_s / (double)row->steps, row->compute_s / (double)row->steps,
                 r->median_comm_s);
        break;
    }
    case TP_VERDICT_COMMUNICATION_BOUND:
        snprintf(text, sizeof text,
                 "{\"exposed_comm_s\":%.6f,\"window_s\":%.6f,\"ranks\":%zu,\"on_device\":%s}",
                 v->f.comm.exposed_s, v->f.comm.window_s, v->f.comm.ranks,
                 v->f.comm.device ? "true" : "false");
        break;
    default: system_evidence(text, sizeof text, s, v); break;
    }
    seal_evidence(text, sizeof text);
    snprintf(out, cap, "%s", text);
}
