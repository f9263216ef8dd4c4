/* cmd_compare.c: `trainprof compare`: two runs of one training phase by
 * phase, with what changed (analyze/run_compare.h), and a gate for CI;
 * several runs of different scales side by side (analyze/scaling.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "analyze/compare_job.h"
#include "render/causes_words.h"
#include "render/compare.h"
#include "render/report.h"
#include "render/units.h"
#include "util/utf8.h"
#include "util/json_writer.h"
#include "util/options.h"
#include "util/log.h"

static const char usage[] =
    "usage: trainprof compare [--json] [--fail-if-slower PCT] A.db B.db\n"
    "       trainprof compare [--json] [--fail-if-slower PCT] --base A.db... B.db...\n"
    "       trainprof compare [--json] RUN_FILE RUN_FILE RUN_FILE...\n"
    "\n"
    "With two run files, A (the baseline: last week's run, the main branch's) and B:\n"
    "whether B's steps are slower or faster, by how much with a 95% interval\n"
    "bootstrapped from the steps (so that noise is never called a change: a change\n"
    "is called past 5% and outside the interval), which phases moved, what changed\n"
    "with them (other processes' CPU, CPU and I/O pressure, swap, GPU clocks, the\n"
    "functions whose share of the moved phase grew), the facts of the script and the\n"
    "machine that differ (DataLoader settings, dtype, versions, host, world size) and\n"
    "the verdicts only one run had. Runs of different world sizes get the scaling\n"
    "table too. A run whose pace changed midway is compared on its latest pace, as\n"
    "its report judges it (the whole runs' figures beside); one whose steps grew\n"
    "all along is said to have drifted, its first and last quarter named.\n"
    "--fail-if-slower PCT is a gate for CI: exit status 3 when B's steps are slower\n"
    "than A's by more than PCT percent beyond the interval. A job's run files (one\n"
    "per node) are one side: --base for each of A's, B's as operands.\n"
    "\n"
    "With more runs: the same training at different scales: world size, time per\n"
    "epoch, samples/s, speed-up and efficiency against the smallest run, energy per\n"
    "epoch and per sample.\n";

static const char epilogue[] =
    "exit status: 0 on success, 3 when --fail-if-slower's B is slower than allowed,\n"
    "4 when it is, but the machine differed between the runs (others' CPU, pressure,\n"
    "swap, GPU clocks) and --gate-anyway was not given, 2 for bad arguments, a file\n"
    "that is not a readable trainprof run file, or a gate with a side that has no\n"
    "steps.\n";

static void runs_json(json_writer *w, const tp_scale_row *rows, size_t n)
{
    json_key(w, "runs");
    json_array_begin(w);
    for (size_t i = 0; i < n; i++) {
        json_object_begin(w);
        json_key(w, "path");
        json_string(w, rows[i].path);
        json_key(w, "world_size");
        json_int(w, rows[i].world);
        json_key(w, "epochs");
        json_int(w, (int64_t)rows[i].epochs);
        const char *keys[] = {"epoch_s",    "samples_per_s",      "speedup",
                              "efficiency", "energy_per_epoch_j", "energy_per_sample_j"};
        const double vals[] = {rows[i].epoch_s,    rows[i].samples_per_s,  rows[i].speedup,
                               rows[i].efficiency, rows[i].energy_epoch_j, rows[i].energy_sample_j};
        for (int k = 0; k < 6; k++) {
            json_key(w, keys[k]);
            json_double(w, vals[k]);
        }
        json_object_end(w);
    }
    json_array_end(w);
}

#define MAX_BASE 4096 /* --base files */

typedef struct base_files {
    char *paths[MAX_BASE];
    size_t n;
} base_files;

static bool add_base(const char *value, void *target, char *err, size_t cap)
{
    base_files *b = target;
    if (b->n >= MAX_BASE) {
        snprintf(err, cap, "is given more than %d times", MAX_BASE);
        return false;
    }
    b->paths[b->n++] = (char *)value;
    return true;
}

/* --fail-if-slower's percent (NaN: no gate), and --gate-anyway */
typedef struct gate {
    double fail_pct;
    bool anyway;
} gate;

/* B is slower than the gate allows (at least slower), and the machines
 * differed over the two runs' steps (analyze/run_compare.h): unless the
 * gate judges anyway, that is said, and the gate gives no verdict on the
 * code. */
static bool machines_differ(const tp_run_compare *c, const gate *g, double slower)
{
    tp_regime_cause machine[TP_REGIME_CAUSES];
    size_t n = tp_compare_machine_causes(c, machine);
    if (!n || g->anyway)
        return false;
    char words[1024];
    tp_causes_text(words, sizeof words, machine, n);
    tp_error("compare: B (%s) is slower than A (%s) by at least %.1f%% (more than the %g%% "
             "allowed), but the machine differed: %s. Not the code's doing alone: no verdict "
             "(exit status 4; --gate-anyway fails B all the same)",
             c->b.path, c->a.path, 100 * slower, g->fail_pct, words);
    return true;
}

/* The comparison as text or JSON; with the gate, its verdict (the exit status). */
static int say(const tp_compare_job *job, bool json, const gate *g)
{
    const tp_run_compare *c = &job->c;
    if (json) {
        json_writer w;
        json_init(&w, stdout);
        json_object_begin(&w);
        tp_compare_json(&w, c);
        if (job->scaling)
            runs_json(&w, job->rows, 2);
        json_object_end(&w);
        fputc('\n', stdout);
    } else { /* the run files' strings must not drive the terminal */
        char *text = tp_compare_job_text(job);
        if (text)
            tp_text_write_safe(stdout, text);
        free(text);
    }
    int status = 0;
    if (!isnan(g->fail_pct)) {
        double slower = tp_compare_slower_at_least(c);
        if (!c->comparable && c->a.steps >= 2 && c->b.steps >= 2) {
            tp_error("compare: --fail-if-slower: the change in step time could not be measured "
                     "(step figures of %s or %s that are not finite numbers): no verdict",
                     c->a.path, c->b.path);
            status = 2;
        } else if (!c->comparable) {
            tp_error("compare: --fail-if-slower: %s has no steps to time",
                     c->a.steps < 2 ? c->a.path : c->b.path);
            status = 2;
        } else if (slower > g->fail_pct / 100 && machines_differ(c, g, slower)) {
            status = 4;
        } else if (slower > g->fail_pct / 100) {
            char since[64] = "";
            if (tp_compare_side_on_latest_pace(&c->b))
                snprintf(since, sizeof since, " since step %zu (its latest pace)", c->b.first_step);
            tp_error("compare: B (%s) is slower than A (%s): its steps%s take at least %.1f%% "
                     "longer (%+.1f%%, 95%% interval %+.1f%% to %+.1f%%), more than the %g%% "
                     "allowed",
                     c->b.path, c->a.path, since, 100 * slower, 100 * c->change, 100 * c->low,
                     100 * c->high, g->fail_pct);
            status = 3;
        }
    }
    return status;
}

/* A against B, said as text or JSON; with the gate, its verdict. */
static int compare_two(char *const *a, size_t na, char *const *b, size_t nb, bool json,
                       const gate *g)
{
    tp_compare_job job;
    char err[1024];
    if (!tp_compare_job_run(&job, "compare", a, na, b, nb, err, sizeof err)) {
        tp_compare_job_free(&job);
        tp_error("%s", err);
        return 2;
    }
    if (job.loaded_a)
        tp_summary_source_note(stderr, "compare", &job.a.inv);
    if (job.loaded_b)
        tp_summary_source_note(stderr, "compare", &job.b.inv);
    int status = say(&job, json, g);
    tp_compare_job_free(&job);
    return status;
}

/* compare --regimes: one run's regimes around its biggest change. */
static int compare_regimes(char *const *paths, size_t n, bool json, const gate *g)
{
    tp_compare_job job;
    char err[1024];
    if (!tp_compare_job_regimes(&job, "compare", paths, n, err, sizeof err)) {
        tp_compare_job_free(&job);
        tp_error("%s", err);
        return 2;
    }
    if (job.loaded_a)
        tp_summary_source_note(stderr, "compare", &job.a.inv);
    int status = 0;
    if (job.regimes < 2 && !json) {
        printf("%s kept one pace: no change of pace to compare (%zu regime%s).\n", job.a.run->path,
               job.regimes, job.regimes == 1 ? "" : "s");
    } else {
        status = say(&job, json, g);
    }
    if (job.regimes < 2 && json) {
        json_writer w;
        json_init(&w, stdout);
        json_object_begin(&w);
        json_key(&w, "regimes");
        json_int(&w, (int64_t)job.regimes);
        json_object_end(&w);
        fputc('\n', stdout);
    }
    tp_compare_job_free(&job);
    return status;
}

int cmd_compare(int argc, char **argv)
{
    bool json = false, regimes = false;
    gate g = {NAN, false};
    static base_files base;
    base.n = 0;
    const tp_option options[] = {
        TP_FLAG(0, "json", "one JSON object instead of text", &json),
        TP_FLAG(0, "regimes",
                "one run (its files merged): the regimes before and after its biggest\n"
                "change of pace, compared as two runs",
                &regimes),
        TP_CUSTOM(0, "base", "FILE",
                  "a file of A, the baseline (again for each node of a job: merged);\n"
                  "the run files then are B's",
                  &base, add_base),
        TP_NUMBER(0, "fail-if-slower", "PCT",
                  "exit status 3 when B's steps are slower than A's by more than PCT\n"
                  "percent beyond the 95% interval (two run files only)",
                  &g.fail_pct, 0, 1000, "percent"),
        TP_FLAG(0, "gate-anyway",
                "with --fail-if-slower: fail B even where the two machines differed\n"
                "(others' CPU, pressure, swap, GPU clocks), exit status 4 otherwise",
                &g.anyway),
    };
    const tp_command cmd = {.name = "compare",
                            .usage = usage,
                            TP_OPTION_TABLE(options),
                            .min_operands = 1,
                            .max_operands = -1,
                            .operands = "two or more run files (one or more with --base)",
                            .epilogue = epilogue};
    int first;
    int parsed = tp_options_parse(&cmd, argc, argv, &first);
    if (parsed != TP_OPTIONS_OK)
        return parsed;
    size_t n = (size_t)(argc - first);
    if (regimes)
        return compare_regimes(argv + first, n, json, &g);
    if (base.n)
        return compare_two(base.paths, base.n, argv + first, n, json, &g);
    if (n == 2)
        return compare_two(argv + first, 1, argv + first + 1, 1, json, &g);
    if (n < 2) {
        tp_error("compare: needs two or more run files (or --base FILE and a run file)");
        return 2;
    }
    if (!isnan(g.fail_pct)) {
        tp_error("compare: --fail-if-slower compares two run files, A and B (%zu given; "
                 "--base FILE for a side of several)",
                 n);
        return 2;
    }
    tp_scale_row *rows = calloc(n, sizeof *rows);
    char err[1024];
    if (!rows || !tp_scaling_build(argv + first, n, rows, err, sizeof err)) {
        tp_error("%s", rows ? err : "compare: out of memory");
        free(rows);
        return 2;
    }
    if (json) {
        json_writer w;
        json_init(&w, stdout);
        json_object_begin(&w);
        runs_json(&w, rows, n);
        json_object_end(&w);
        fputc('\n', stdout);
    } else {
        tp_scale_rows_text(stdout, rows, n);
    }
    free(rows);
    return 0;
}
