/* change_points.c: what finding the changes of pace costs over a node-day.
 *
 * usage: change_points [STEPS] [RANKS]   (default 86400 steps, 8 ranks)
 * Makes each rank's step durations (1 s steps with 5 % log-normal noise, one
 * slow step in 50 twice as long, the pace 30 % slower from 60 % of the run
 * on), then times tp_change_points over every rank's series, and the peer in
 * the same run: tp_stats_compute over the same series (the mean and
 * percentiles every report computes of the steps). Then what a report and
 * top run: tp_regime_starts over a rank's steps in 300 groups, and over 300
 * groups whose pace wanders (a level 25 % off every 40 groups: the most
 * change points, the most subsets of them to weigh), microseconds a call,
 * and the drift's test over those 300 groups (tp_pace_drift_of, after the
 * regimes; on groups whose pace grows all along too), the regimes' call
 * its peer. Prints JSON: seconds for all ranks, their ratio, and where the change was
 * found against where it was made. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyze/pace_drift.h"
#include "analyze/regimes.h"
#include "core/stats.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double gaussian(unsigned *seed)
{
    double u = (rand_r(seed) + 1.0) / (RAND_MAX + 2.0), v = (rand_r(seed) + 1.0) / (RAND_MAX + 2.0);
    return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

int main(int argc, char **argv)
{
    size_t steps = argc > 1 ? strtoul(argv[1], NULL, 10) : 86400;
    size_t ranks = argc > 2 ? strtoul(argv[2], NULL, 10) : 8;
    if (steps < 100 || ranks < 1) {
        fprintf(stderr, "usage: change_points [STEPS >= 100] [RANKS >= 1]\n");
        return 2;
    }
    double *d = malloc(steps * ranks * sizeof *d), *copy = malloc(steps * sizeof *copy);
    if (!d || !copy)
        return 1;
    unsigned seed = 1;
    size_t made = steps * 6 / 10;
    for (size_t r = 0; r < ranks; r++)
        for (size_t i = 0; i < steps; i++) {
            double v = exp(0.05 * gaussian(&seed)) * (i >= made ? 1.3 : 1.0);
            d[r * steps + i] = rand_r(&seed) % 50 == 0 ? 2 * v : v;
        }
    size_t starts[TP_REGIMES_MAX], found = 0, first = 0;
    double t0 = now_s();
    for (size_t r = 0; r < ranks; r++) {
        found = tp_change_points(d + r * steps, steps, starts);
        first = found ? starts[0] : 0;
    }
    double detect = now_s() - t0;
    t0 = now_s();
    tp_stats st;
    for (size_t r = 0; r < ranks; r++) {
        memcpy(copy, d + r * steps, steps * sizeof *copy);
        tp_stats_compute(copy, steps, &st);
    }
    double peer = now_s() - t0;
    enum { GROUPS = 300, CALLS = 200 };
    double g[GROUPS], wander[GROUPS], g0[GROUPS], g1[GROUPS], t = 0;
    size_t per = steps / GROUPS;
    for (size_t k = 0; k < GROUPS; k++) {
        g[k] = 0;
        for (size_t i = k * per; i < (k + 1) * per; i++)
            g[k] += d[i] / (double)per;
        wander[k] = g[k] * ((k / 40) % 2 ? 1.25 : 1.0);
        g0[k] = t;
        t += g[k] * (double)per;
        g1[k] = t;
    }
    size_t grouped = 0, wandered = 0;
    t0 = now_s();
    for (int c = 0; c < CALLS; c++)
        grouped = tp_regime_starts(g, g0, g1, GROUPS, starts);
    double grouped_us = (now_s() - t0) / CALLS * 1e6;
    t0 = now_s();
    for (int c = 0; c < CALLS; c++)
        wandered = tp_regime_starts(wander, g0, g1, GROUPS, starts);
    double wander_us = (now_s() - t0) / CALLS * 1e6;
    double grow[GROUPS], h0[GROUPS], h1[GROUPS], u = 0; /* 1 s a step, 3 s at the end */
    for (size_t k = 0; k < GROUPS; k++) {
        grow[k] = g[k] * (1 + 2.0 * (double)k / GROUPS);
        h0[k] = u;
        u += grow[k] * (double)per;
        h1[k] = u;
    }
    size_t grew_starts[TP_REGIMES_MAX];
    size_t ngrew = tp_regime_starts(grow, h0, h1, GROUPS, grew_starts);
    bool steady_drift = false, grew_drift = false;
    t0 = now_s();
    for (int c = 0; c < CALLS; c++)
        steady_drift = tp_pace_drift_of(g, g0, g1, GROUPS, starts, grouped).found;
    double drift_us = (now_s() - t0) / CALLS * 1e6;
    t0 = now_s();
    for (int c = 0; c < CALLS; c++)
        grew_drift = tp_pace_drift_of(grow, h0, h1, GROUPS, grew_starts, ngrew).found;
    double grew_us = (now_s() - t0) / CALLS * 1e6;
    printf("{\"steps\": %zu, \"ranks\": %zu, \"change_points_s\": %.4f, \"stats_s\": %.4f,"
           " \"ratio\": %.2f, \"changes_found\": %zu, \"made_at\": %zu, \"found_at\": %zu,"
           " \"regime_starts_300_us\": %.1f, \"regime_changes\": %zu,"
           " \"regime_starts_wander_us\": %.1f, \"wander_changes\": %zu,"
           " \"drift_300_us\": %.1f, \"drift_found\": %s, \"drift_growing_us\": %.1f,"
           " \"growing_drift_found\": %s}\n",
           steps, ranks, detect, peer, peer > 0 ? detect / peer : 0, found, made, first, grouped_us,
           grouped, wander_us, wandered, drift_us, steady_drift ? "true" : "false", grew_us,
           grew_drift ? "true" : "false");
    free(d);
    free(copy);
    return 0;
}
