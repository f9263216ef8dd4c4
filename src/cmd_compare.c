/* cmd_compare.c: `trainprof compare`: scalability across runs (see
 * analyze/scaling.h for what is measured). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/scaling.h"
#include "commands.h"
#include "render/units.h"
#include "util/json_writer.h"
#include "util/options.h"
#include "util/log.h"

static const char usage[] =
    "usage: trainprof compare [--json] RUN_FILE RUN_FILE...\n"
    "\n"
    "Compares runs of the same training at different scales: world size, time per epoch,\n"
    "samples/s, speed-up and efficiency against the smallest run, energy per epoch and\n"
    "per sample.\n";

static void print_text(const tp_scale_row *rows, size_t n)
{
    printf("%-32s %6s %12s %12s %9s %11s %12s %14s\n", "run", "world", "epoch time", "samples/s",
           "speed-up", "efficiency", "energy/epoch", "energy/sample");
    for (size_t i = 0; i < n; i++) {
        char e[32] = "-", es[32] = "-", ep[32] = "-";
        if (!isnan(rows[i].epoch_s))
            tp_format_duration(e, sizeof e, rows[i].epoch_s);
        if (!isnan(rows[i].energy_epoch_j))
            tp_format_value(ep, sizeof ep, "joules", rows[i].energy_epoch_j);
        if (!isnan(rows[i].energy_sample_j))
            tp_format_value(es, sizeof es, "joules", rows[i].energy_sample_j);
        size_t len = strlen(rows[i].path);
        const char *shown = len > 32 ? rows[i].path + len - 32 : rows[i].path;
        printf("%-32s %6d %12s %12.1f %8.2fx %10.0f%% %12s %14s\n", shown, rows[i].world, e,
               rows[i].samples_per_s, rows[i].speedup, 100 * rows[i].efficiency, ep, es);
    }
}

static void print_json(const tp_scale_row *rows, size_t n)
{
    json_writer w;
    json_init(&w, stdout);
    json_object_begin(&w);
    json_key(&w, "runs");
    json_array_begin(&w);
    for (size_t i = 0; i < n; i++) {
        json_object_begin(&w);
        json_key(&w, "path");
        json_string(&w, rows[i].path);
        json_key(&w, "world_size");
        json_int(&w, rows[i].world);
        json_key(&w, "epochs");
        json_int(&w, (int64_t)rows[i].epochs);
        const char *keys[] = {"epoch_s",    "samples_per_s",      "speedup",
                              "efficiency", "energy_per_epoch_j", "energy_per_sample_j"};
        const double vals[] = {rows[i].epoch_s,    rows[i].samples_per_s,  rows[i].speedup,
                               rows[i].efficiency, rows[i].energy_epoch_j, rows[i].energy_sample_j};
        for (int k = 0; k < 6; k++) {
            json_key(&w, keys[k]);
            json_double(&w, vals[k]);
        }
        json_object_end(&w);
    }
    json_array_end(&w);
    json_object_end(&w);
    fputc('\n', stdout);
}

int cmd_compare(int argc, char **argv)
{
    bool json = false;
    const tp_option options[] = {
        TP_FLAG(0, "json", "one JSON object instead of a table", &json),
    };
    const tp_command cmd = {.name = "compare",
                            .usage = usage,
                            TP_OPTION_TABLE(options),
                            .min_operands = 2,
                            .max_operands = -1,
                            .operands = "two or more run files"};
    int first;
    int parsed = tp_options_parse(&cmd, argc, argv, &first);
    if (parsed != TP_OPTIONS_OK)
        return parsed;
    size_t n = (size_t)(argc - first);
    tp_scale_row *rows = calloc(n, sizeof *rows);
    char err[1024];
    if (!rows || !tp_scaling_build(argv + first, n, rows, err, sizeof err)) {
        tp_error("%s", rows ? err : "compare: out of memory");
        free(rows);
        return 2;
    }
    if (json)
        print_json(rows, n);
    else
        print_text(rows, n);
    free(rows);
    return 0;
}
