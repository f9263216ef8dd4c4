/* cmd_compare.c: `trainprof compare`: two runs of one training phase by
 * phase, with what changed (analyze/run_compare.h), and a gate for CI;
 * several runs of different scales side by side (analyze/scaling.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "compare_job.h"
#include "render/compare.h"
#include "render/units.h"
#include "util/utf8.h"
#include "util/json_writer.h"
#include "util/options.h"
#include "util/log.h"

static const char usage[] =
    "usage: trainprof compare [--json] [--fail-if-slower PCT] A.db B.db\n"
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
    "table too. --fail-if-slower PCT is a gate for CI: exit status 3 when B's steps\n"
    "are slower than A's by more than PCT percent beyond the interval.\n"
    "\n"
    "With more runs: the same training at different scales: world size, time per\n"
    "epoch, samples/s, speed-up and efficiency against the smallest run, energy per\n"
    "epoch and per sample.\n";

static const char epilogue[] =
    "exit status: 0 on success, 3 when --fail-if-slower's B is slower than allowed,\n"
    "2 for bad arguments, a file that is not a readable trainprof run file, or a gate\n"
    "with a side that has no steps.\n";

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

/* A against B, said as text or JSON; with the gate, its verdict. */
static int compare_two(char *const *paths, bool json, double fail_pct)
{
    tp_compare_job job;
    char err[1024];
    if (!tp_compare_job_run(&job, "compare", paths, err, sizeof err)) {
        tp_compare_job_free(&job);
        tp_error("%s", err);
        return 2;
    }
    const tp_run_compare *c = &job.c;
    if (json) {
        json_writer w;
        json_init(&w, stdout);
        json_object_begin(&w);
        tp_compare_json(&w, c);
        if (job.scaling)
            runs_json(&w, job.rows, 2);
        json_object_end(&w);
        fputc('\n', stdout);
    } else { /* the run files' strings must not drive the terminal */
        char *text = tp_compare_job_text(&job);
        if (text)
            tp_text_write_safe(stdout, text);
        free(text);
    }
    int status = 0;
    if (!isnan(fail_pct)) {
        double slower = tp_compare_slower_at_least(c);
        if (!c->comparable) {
            tp_error("compare: --fail-if-slower: %s has no steps to time",
                     c->a.steps < 2 ? paths[0] : paths[1]);
            status = 2;
        } else if (slower > fail_pct / 100) {
            tp_error("compare: B (%s) is slower than A (%s): its steps take at least %.1f%% "
                     "longer (%+.1f%%, 95%% interval %+.1f%% to %+.1f%%), more than the %g%% "
                     "allowed",
                     paths[1], paths[0], 100 * slower, 100 * c->change, 100 * c->low, 100 * c->high,
                     fail_pct);
            status = 3;
        }
    }
    tp_compare_job_free(&job);
    return status;
}

int cmd_compare(int argc, char **argv)
{
    bool json = false;
    double fail_pct = NAN;
    const tp_option options[] = {
        TP_FLAG(0, "json", "one JSON object instead of text", &json),
        TP_NUMBER(0, "fail-if-slower", "PCT",
                  "exit status 3 when B's steps are slower than A's by more than PCT\n"
                  "percent beyond the 95% interval (two run files only)",
                  &fail_pct, 0, 1000, "percent"),
    };
    const tp_command cmd = {.name = "compare",
                            .usage = usage,
                            TP_OPTION_TABLE(options),
                            .min_operands = 2,
                            .max_operands = -1,
                            .operands = "two or more run files",
                            .epilogue = epilogue};
    int first;
    int parsed = tp_options_parse(&cmd, argc, argv, &first);
    if (parsed != TP_OPTIONS_OK)
        return parsed;
    size_t n = (size_t)(argc - first);
    if (n == 2)
        return compare_two(argv + first, json, fail_pct);
    if (!isnan(fail_pct)) {
        tp_error("compare: --fail-if-slower compares two run files, A and B (%zu given)", n);
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
