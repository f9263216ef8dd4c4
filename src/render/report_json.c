/* report_json.c: the report as one JSON object (see docs/run-file.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/gpu_use.h"
#include "core/run_keys.h"
#include "render/gpu_memory_words.h"
#include "render/report.h"
#include "util/json_read.h"
#include "util/json_writer.h"

/* mean, p5, p50, p95, max and samples (the count) as keys of the open object. */
static void write_stats(json_writer *w, const tp_stats *st)
{
    const char *keys[] = {"mean", "p5", "p50", "p95", "max"};
    const double vals[] = {st->mean, st->p5, st->p50, st->p95, st->max};
    for (int i = 0; i < 5; i++) {
        json_key(w, keys[i]);
        json_double(w, vals[i]);
    }
    json_key(w, "samples");
    json_int(w, (int64_t)st->count);
}

static void ignore_pair(void *ctx, const char *key, const char *value)
{
    (void)ctx, (void)key, (void)value;
}

static void write_pair(void *w, const char *key, const char *value)
{
    json_key(w, key);
    json_string(w, value);
}

static void ignore_item(void *ctx, const char *value) { (void)ctx, (void)value; }

static void write_item(void *w, const char *value) { json_string(w, value); }

/* A series' labels as the object they are, written from their values (a
 * run file's text is never spliced in); null when they are not a flat
 * object of strings. */
static void write_labels(json_writer *w, const char *labels)
{
    if (!tp_json_flat_object(labels, ignore_pair, NULL)) {
        json_null(w);
        return;
    }
    json_object_begin(w);
    tp_json_flat_object(labels, write_pair, w);
    json_object_end(w);
}

/* The command's argv (meta argv, a JSON array of strings), likewise. */
static void write_argv(json_writer *w, const char *argv)
{
    if (!tp_json_string_array(argv, ignore_item, NULL)) {
        json_null(w);
        return;
    }
    json_array_begin(w);
    tp_json_string_array(argv, write_item, w);
    json_array_end(w);
}

static void write_metric(json_writer *w, const tp_series_summary *m)
{
    json_object_begin(w);
    json_key(w, "name");
    json_string(w, m->series->metric);
    json_key(w, "unit");
    json_string(w, m->series->unit);
    json_key(w, "labels");
    write_labels(w, m->series->labels);
    write_stats(w, &m->stats);
    json_key(w, "in_steps"); /* the same over the agent's training steps, or null */
    if (m->in_steps) {
        json_object_begin(w);
        write_stats(w, &m->steps);
        json_object_end(w);
    } else {
        json_null(w);
    }
    json_object_end(w);
}

static void write_run(json_writer *w, const tp_run_inventory *inv)
{
    const tp_run_facts f = inv->facts;
    json_object_begin(w);
    json_key(w, "path");
    json_string(w, inv->path);
    json_key(w, "command");
    json_string(w, f.command);
    json_key(w, "argv");
    write_argv(w, f.argv);
    json_key(w, "duration_s");
    json_double(w, f.duration_s);
    json_key(w, "complete");
    json_bool(w, f.complete);
    json_key(w, "exit_status");
    if (f.exit_status >= 0)
        json_int(w, f.exit_status);
    else
        json_null(w);
    json_key(w, "failed_agent"); /* a merged run's node that stopped early or failed */
    json_string(w, f.failed_agent);
    json_key(w, "write_failed"); /* the run file took no rows after at_s */
    if (f.write_failed_s >= 0) {
        json_object_begin(w);
        json_key(w, "at_s");
        json_double(w, f.write_failed_s);
        json_key(w, "reason");
        json_string(w, f.write_failed);
        json_object_end(w);
    } else {
        json_null(w);
    }
    const char *plain[][2] = {{"host", f.host},
                              {"agent", f.agent},
                              {"start_wall", f.start_wall},
                              {"trainprof_version", f.trainprof_version}};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        json_key(w, plain[i][0]);
        json_string(w, plain[i][1]);
    }
    json_key(w, "meta"); /* every key as the file holds it (the facts above are read from it) */
    json_object_begin(w);
    for (size_t i = 0; i < inv->nmeta; i++) {
        if (strcmp(inv->meta[i].key, TP_META_ARGV) == 0)
            continue;
        json_key(w, inv->meta[i].key);
        json_string(w, inv->meta[i].value);
    }
    json_object_end(w);
    json_object_end(w);
}

/* One GPU of an agent (index i of the run's): what NVML said of it, its
 * slowdowns over the steps, and whether the job used it. */
static void write_gpu(json_writer *w, const tp_summary *s, size_t i)
{
    const tp_run_gpu *g = &s->inv.gpus[i];
    json_object_begin(w);
    json_key(w, "index");
    json_int(w, g->index);
    json_key(w, "name");
    json_string(w, g->name);
    json_key(w, "uuid");
    json_string(w, g->uuid);
    json_key(w, "mem_total_bytes");
    json_int(w, g->mem_total_bytes);
    json_key(w, "energy_source");
    json_string(w, g->energy_source);
    json_key(w, "slowdown"); /* NVML's clock event reasons over the steps */
    const struct tp_gpu_slowdown *d = s->gpu_slowdown ? &s->gpu_slowdown[i] : NULL;
    if (d && !isnan(d->share)) {
        json_object_begin(w);
        json_key(w, "reasons");
        json_int(w, d->bits);
        json_key(w, "share");
        json_double(w, d->share);
        json_key(w, "trouble_share");
        json_double(w, d->trouble_share);
        json_object_end(w);
    } else {
        json_null(w);
    }
    json_key(w, "used"); /* by the job: its processes' UUIDs, NVML's process lists */
    if (!s->gpu_used || s->gpu_used[i] == TP_GPU_USE_UNKNOWN)
        json_null(w);
    else
        json_bool(w, s->gpu_used[i] == TP_GPU_USED);
    json_object_end(w);
}

static void write_agent(json_writer *w, const tp_summary *s, const tp_run_agent *a)
{
    const tp_run_inventory *inv = &s->inv;
    json_object_begin(w);
    json_key(w, "name");
    json_string(w, a->name);
    json_key(w, "host");
    json_string(w, a->host);
    json_key(w, "meta"); /* a merged run's, per node; else the run's meta */
    if (inv->nagent_meta) {
        json_object_begin(w);
        for (size_t i = 0; i < inv->nagent_meta; i++) {
            const tp_run_agent_meta *m = &inv->agent_meta[i];
            if (m->agent_id == a->id && strcmp(m->key, TP_META_ARGV) != 0) {
                json_key(w, m->key);
                json_string(w, m->value);
            }
        }
        json_object_end(w);
    } else {
        json_null(w);
    }
    json_key(w, "steps_window"); /* what each series' in_steps figures span */
    const tp_steps_window *win = tp_summary_window(s, a->id);
    if (win) {
        json_object_begin(w);
        json_key(w, "start_s");
        json_double(w, (double)win->t0_ns / 1e9);
        json_key(w, "end_s");
        json_double(w, (double)win->t1_ns / 1e9);
        json_object_end(w);
    } else {
        json_null(w);
    }
    json_key(w, "gpus");
    json_array_begin(w);
    for (size_t i = 0; i < inv->ngpus; i++) {
        if (inv->gpus[i].agent_id == a->id)
            write_gpu(w, s, i);
    }
    json_array_end(w);
    json_key(w, "metrics");
    json_array_begin(w);
    for (size_t i = 0; i < s->n; i++)
        if (s->items[i].series->agent_id == a->id)
            write_metric(w, &s->items[i]);
    json_array_end(w);
    json_key(w, "unavailable");
    json_array_begin(w);
    for (size_t i = 0; i < inv->nunavailable; i++) {
        if (inv->unavailable[i].agent_id != a->id)
            continue;
        json_object_begin(w);
        json_key(w, "source");
        json_string(w, inv->unavailable[i].source);
        json_key(w, "reason");
        json_string(w, inv->unavailable[i].reason);
        json_object_end(w);
    }
    json_array_end(w);
    json_object_end(w);
}

void tp_report_json(FILE *out, const tp_summary *s, const tp_verdicts *v)
{
    tp_summary_needs(s, TP_PARTS_ALL, "tp_report_json");
    json_writer w;
    json_init(&w, out);
    json_object_begin(&w);
    json_key(&w, "run");
    write_run(&w, &s->inv);
    json_key(&w, "agents");
    json_array_begin(&w);
    for (size_t i = 0; i < s->inv.nagents; i++)
        write_agent(&w, s, &s->inv.agents[i]);
    json_array_end(&w);
    tp_report_timings_json(&w, s);
    tp_report_ranks_json(&w, s);
    tp_report_stacks_json(&w, s);
    tp_report_ops_json(&w, s);
    tp_report_course_json(&w, s);
    tp_report_ends_json(&w, s);
    tp_gpu_memory_json(&w, v);
    tp_report_own_json(&w, s);
    tp_report_regimes_json(&w, s);
    tp_report_verdicts_json(&w, s, v);
    json_object_end(&w);
    fputc('\n', out);
}
