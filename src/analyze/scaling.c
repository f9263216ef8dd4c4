/* scaling.c: runs of different world sizes side by side. */
#include "analyze/scaling.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/summary.h"
#include "analyze/timings.h"
#include "store/reader_stream.h"
#include "core/run_keys.h"

int tp_run_world_size(tp_run *run, const tp_timings *t)
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
    const char *env = tp_run_meta_get(run, TP_META_ENV "WORLD_SIZE");
    if (env && atoi(env) > world)
        world = atoi(env);
    for (size_t i = 0; i < t->nsteps; i++)
        if (t->steps[i].rank + 1 > ranks)
            ranks = t->steps[i].rank + 1;
    if (world < ranks)
        world = ranks;
    return world > 0 ? world : 1;
}

static bool measure(const char *path, tp_scale_row *row, char *err, size_t cap)
{
    tp_summary s;
    if (!tp_summary_load(path, 0, &s, err, cap))
        return false;
    tp_run *run = s.run;
    const tp_timings *t = &s.timings;
    memset(row, 0, sizeof *row);
    row->path = path;
    row->world = tp_run_world_size(run, t);
    row->energy_epoch_j = row->energy_sample_j = NAN;
    for (size_t i = 0; i < t->nsteps; i++)
        if (t->steps[i].samples > 0 && t->steps[i].total_s > 0)
            row->samples_per_s += (double)t->steps[i].samples / t->steps[i].total_s;
    int first_rank = t->nepochs ? t->epochs[0].rank : 0;
    double energy = 0, samples = 0, seconds = 0;
    size_t measured = 0; /* epochs with energy: the sampling reached both of their ends */
    for (size_t i = 0; i < t->nepochs; i++) {
        if (t->epochs[i].rank == first_rank) {
            row->epochs++;
            seconds += t->epochs[i].duration_s;
            if (!isnan(t->epochs[i].energy_j)) {
                energy += t->epochs[i].energy_j;
                measured++;
            }
        }
        samples += (double)t->epochs[i].samples; /* every rank's */
    }
    row->epoch_s = row->epochs ? seconds / (double)row->epochs : NAN;
    if (measured) { /* over the epochs measured, their samples as an epoch's mean */
        row->energy_epoch_j = energy / (double)measured;
        if (samples > 0)
            row->energy_sample_j = row->energy_epoch_j / (samples / (double)row->epochs);
    }
    tp_summary_close(&s);
    return true;
}

bool tp_scaling_build(char *const *paths, size_t n, tp_scale_row *rows, char *err, size_t cap)
{
    for (size_t i = 0; i < n; i++)
        if (!measure(paths[i], &rows[i], err, cap))
            return false;
    size_t base = 0;
    for (size_t i = 1; i < n; i++)
        if (rows[i].world < rows[base].world)
            base = i;
    for (size_t i = 0; i < n; i++) {
        rows[i].speedup =
            rows[base].samples_per_s > 0 ? rows[i].samples_per_s / rows[base].samples_per_s : NAN;
        rows[i].efficiency = rows[i].speedup * rows[base].world / rows[i].world;
    }
    return true;
}
