/* scaling.h: the same training at different scales, side by side.
 *
 * For each run: its world size (the largest WORLD_SIZE its processes saw, or
 * its number of ranks, or 1), time per epoch (mean over the lowest rank's
 * epochs), samples/s (summed over ranks: each rank of a data-parallel job
 * processes its own batches), energy per epoch and per sample (the whole
 * job's). Speed-up and efficiency are against the run with the smallest
 * world size. */
#ifndef TP_ANALYZE_SCALING_H
#define TP_ANALYZE_SCALING_H

#include <stdbool.h>
#include <stddef.h>

typedef struct tp_scale_row {
    const char *path;
    int world;
    size_t epochs;
    double epoch_s, samples_per_s, energy_epoch_j, energy_sample_j, speedup, efficiency;
} tp_scale_row;

struct tp_run;
struct tp_timings;
/* A run's world size: the largest WORLD_SIZE its processes saw, or its
 * number of ranks, or 1. */
int tp_run_world_size(struct tp_run *run, const struct tp_timings *t);

/* Measures each run file; rows[i] belongs to paths[i]. False with a one-line
 * reason in err when a file can't be read. */
bool tp_scaling_build(char *const *paths, size_t n, tp_scale_row *rows, char *err, size_t cap);

#endif
