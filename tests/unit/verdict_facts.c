/* verdict_facts.c: see verdict_facts.h. */
#include "verdict_facts.h"

#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "render/verdict_words.h"

facts *facts_new(void)
{
    facts *f = calloc(1, sizeof *f);
    f->agent = (tp_run_agent){.id = 1, .name = "node", .host = "node"};
    f->run.agents = &f->agent;
    f->run.nagents = 1;
    f->run.meta = f->meta;
    f->s.run = &f->run;
    f->s.parts = TP_PARTS_ALL; /* no stacks, windows or stalls: empty, but built */
    f->s.items = f->items;
    f->s.timings.rows = f->rows;
    f->s.timings.steps = &f->steps;
    f->s.timings.nsteps = 1;
    /* 100 steps of 10 ms */
    f->steps = (tp_step_row){.rank = 0, .stats = {.count = 100, .mean = 0.010}, .total_s = 1.0};
    return f;
}

void take_inventory(facts *f)
{
    tp_run_inventory_free(&f->s.inv);
    tp_run_settings_read(f->run.meta, f->run.nmeta, &f->run.settings);
    assert_true(tp_run_inventory_build(&f->run, &f->s.inv));
}

void facts_free(facts *f)
{
    tp_run_inventory_free(&f->s.inv);
    free(f);
}

static int by_rank_name(const void *x, const void *y)
{
    const tp_timing_row *a = x, *b = y;
    return a->rank != b->rank ? (a->rank > b->rank) - (a->rank < b->rank)
                              : strcmp(a->name, b->name);
}

void phase(facts *f, const char *name, double share, double device)
{
    tp_timing_row *r = &f->rows[f->s.timings.nrows++];
    *r = (tp_timing_row){.rank = 0,
                         .name = (char *)name,
                         .share = share,
                         .in_steps_s = share * f->steps.total_s,
                         .total_s = share * f->steps.total_s,
                         .stats = {.count = 100, .mean = share * f->steps.stats.mean},
                         .device_total_s = device * f->steps.total_s};
    qsort(f->rows, f->s.timings.nrows, sizeof *f->rows, by_rank_name);
}

void series(facts *f, const char *metric, const char *labels, double p50, double mean, double max)
{
    size_t i = f->s.n++;
    f->series[i] = (tp_run_series){.id = (int64_t)i + 1,
                                   .agent_id = 1,
                                   .metric = (char *)metric,
                                   .unit = "",
                                   .labels = (char *)labels};
    tp_stats st = {
        .count = 100, .mean = mean, .min = 0, .p5 = p50, .p50 = p50, .p95 = max, .max = max};
    f->items[i] =
        (tp_series_summary){.series = &f->series[i], .stats = st, .steps = st, .in_steps = true};
}

void meta(facts *f, const char *key, const char *value)
{
    f->meta[f->run.nmeta++] = (tp_run_meta){.key = (char *)key, .value = (char *)value};
}

size_t verdicts_of(const facts *f, tp_verdict_kind kind, tp_verdict *first)
{
    tp_verdicts v;
    tp_verdicts_build(&f->s, &v);
    size_t n = 0;
    for (size_t i = 0; i < v.n; i++)
        if (v.items[i].kind == kind && n++ == 0 && first)
            *first = v.items[i];
    tp_verdicts_free(&v);
    return n;
}

void one_gpu(facts *f)
{
    f->gpu = (tp_run_gpu){.agent_id = 1, .index = 0, .name = "H100", .mem_total_bytes = 80LL << 30};
    f->run.gpus = &f->gpu;
    f->run.ngpus = 1;
}

bool message_of(facts *f, tp_verdict_kind kind, char *words, size_t cap)
{
    take_inventory(f);
    tp_verdicts v;
    tp_verdicts_build(&f->s, &v);
    bool found = false;
    for (size_t i = 0; i < v.n && !found; i++)
        if ((found = v.items[i].kind == kind))
            tp_verdict_message(words, cap, &f->s, &v.items[i]);
    tp_verdicts_free(&v);
    return found;
}

void measure_all(tp_rank_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        rows[i].measured_steps = rows[i].steps;
}
