/* region_cost.c: what a region begin+end costs the training thread.
 *
 * usage: region_cost            (run it under `trainprof record` for the
 *                                active case, without for the inactive one)
 * Times, on one thread, bursts of 20,000 iterations of: a bare pair of
 * clock_gettime(CLOCK_MONOTONIC) reads (the peer: the least a timed region
 * can cost), and tp_region_begin + tp_region_end. Between bursts it sleeps
 * 100 ms so the recorder drains the ring (a burst is 40,000 events, less than
 * a ring holds): the figure is the cost of recording, not of dropping.
 * Prints JSON: median ns per pair over the bursts, and their ratio. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "core/stats.h"
#include "trainprof.h"

#define BURST  20000
#define BURSTS 30

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink_value;

static double bare_pair(void)
{
    uint64_t t0 = now_ns(), acc = 0;
    for (int i = 0; i < BURST; i++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        clock_gettime(CLOCK_MONOTONIC, &b);
        acc += (uint64_t)(b.tv_nsec - a.tv_nsec);
    }
    sink_value = acc;
    return (double)(now_ns() - t0) / BURST;
}

static double region_pair(void)
{
    static tp_site site = TP_SITE("bench_region");
    uint64_t t0 = now_ns();
    for (int i = 0; i < BURST; i++) {
        tp_region_begin(&site);
        tp_region_end(&site);
    }
    return (double)(now_ns() - t0) / BURST;
}

int main(void)
{
    double bare[BURSTS], region[BURSTS];
    tp_step(); /* attach before timing */
    for (int b = 0; b < BURSTS; b++) {
        bare[b] = bare_pair();
        region[b] = region_pair();
        usleep(100000);
    }
    tp_stats sb, sr;
    tp_stats_compute(bare, BURSTS, &sb);
    tp_stats_compute(region, BURSTS, &sr);
    printf("{\"active\": %s, \"bare_clock_pair_ns\": %.1f, \"region_pair_ns\": %.1f, "
           "\"ratio\": %.2f, \"dropped\": %llu}\n",
           tp_active() ? "true" : "false", sb.p50, sr.p50, sr.p50 / sb.p50,
           (unsigned long long)tp_dropped());
    return 0;
}
