/* cmd_compare.c: `trainprof compare`: scalability across runs.
 *
 * For each run: its world size (the largest WORLD_SIZE its processes saw, or
 * its number of ranks, or 1), time per epoch (mean over the lowest rank's
 * epochs), samples/s (summed over ranks: each rank of a data-parallel job
 * processes its own batches), energy per epoch and per sample. Speed-up and
 * efficiency are against the run with the smallest world size. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/summary.h"
#include "commands.h"
#include "render/units.h"
#include "store/reader_stream.h"
#include "util/json_writer.h"
#include "util/log.h"

static const char usage[] =
    "usage: trainprof compare [--json] RUN_FILE RUN_FILE...\n"
    "\n"
    "Compares runs of the same training at different scales: world size, time per epoch,\n"
    "samples/s, speed-up and efficiency against the smallest run, energy per epoch and\n"
    "per sample.\n"
    "\n"
    "options:\n"
    "  --json       one JSON object instead of a table\n"
    "  -h, --help   show this help\n";

typedef struct scale_row {
    const char *path;
    int world;
    size_t epochs;
    double epoch_s, samples_per_s, energy_epoch_j, energy_sample_j, speedup, efficiency;
} scale_row;

static int world_size(tp_run *run, const tp_timings *t)
{
    tp_run_thread *threads;
    size_t n;
    char err[256];
    int world = 0, ranks = 0;
    if (tp_run_threads(run, &threads, &n, err, sizeof err)) {
        for (size_t i = 0; i < n; i++) {
            if (threads[i].rank + 1 > ranks)
                ranks = threads[i].rank + 1;
            if (threads[i].world_size > world) /* each process's own WORLD_SIZE */
                world = threads[i].world_size;
        }
        free(threads);
    }
    const char *env = tp_run_meta_get(run, "env.WORLD_SIZE");
    if (env && atoi(env) > world)
        world = atoi(env);
    for (size_t i = 0; i < t->nsteps; i++)
        if (t->steps[i].rank + 1 > ranks)
            ranks = t->steps[i].rank + 1;
    if (world < ranks)
        world = ranks;
    return world > 0 ? world : 1;
}

static bool measure(const char *path, scale_row *row)
{
    char err[1024];
    tp_summary s;
    if (!tp_summary_load(path, &s, err, sizeof err)) {
        tp_error("%s", err);
        return false;
    }
    tp_run *run = s.run;
    const tp_timings *t = &s.timings;
    memset(row, 0, sizeof *row);
    row->path = path;
    row->world = world_size(run, t);
    row->energy_epoch_j = row->energy_sample_j = NAN;
    for (size_t i = 0; i < t->nsteps; i++)
        if (t->steps[i].samples > 0 && t->steps[i].total_s > 0)
            row->samples_per_s += (double)t->steps[i].samples / t->steps[i].total_s;
    int first_rank = t->nepochs ? t->epochs[0].rank : 0;
    double energy = 0, samples = 0, seconds = 0;
    bool has_energy = false;
    for (size_t i = 0; i < t->nepochs; i++) {
        if (t->epochs[i].rank == first_rank) {
            row->epochs++;
            seconds += t->epochs[i].duration_s;
            if (!isnan(t->epochs[i].energy_j)) {
                energy += t->epochs[i].energy_j;
                has_energy = true;
            }
        }
        samples += (double)t->epochs[i].samples; /* every rank's */
    }
    row->epoch_s = row->epochs ? seconds / (double)row->epochs : NAN;
    if (has_energy && row->epochs) {
        row->energy_epoch_j = energy / (double)row->epochs;
        if (samples > 0)
            row->energy_sample_j = energy / samples;
    }
    tp_summary_close(&s);
    return true;
}

static void print_text(const scale_row *rows, size_t n)
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

static void print_json(const scale_row *rows, size_t n)
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
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    bool json = false;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'j')
            json = true;
        else if (c == 'h') {
            fputs(usage, stdout);
            return 0;
        } else {
            tp_error("compare: unknown option %s (see trainprof compare --help)", argv[optind - 1]);
            return 2;
        }
    }
    size_t n = (size_t)(argc - optind);
    if (n < 2) {
        tp_error("compare: give two or more run files (see trainprof compare --help)");
        return 2;
    }
    scale_row *rows = calloc(n, sizeof *rows);
    for (size_t i = 0; i < n; i++)
        if (!measure(argv[optind + (int)i], &rows[i])) {
            free(rows);
            return 2;
        }
    size_t base = 0;
    for (size_t i = 1; i < n; i++)
        if (rows[i].world < rows[base].world)
            base = i;
    for (size_t i = 0; i < n; i++) {
        rows[i].speedup =
            rows[base].samples_per_s > 0 ? rows[i].samples_per_s / rows[base].samples_per_s : NAN;
        rows[i].efficiency = rows[i].speedup * rows[base].world / rows[i].world;
    }
    if (json)
        print_json(rows, n);
    else
        print_text(rows, n);
    free(rows);
    return 0;
}
