/* event_rate.c: sustained event throughput into the run file.
 *
 * usage: event_rate [EVENTS_PER_S] [SECONDS]   (run it under trainprof record)
 * Emits region begin/end pairs at a steady rate (default 1,000,000 events/s
 * for 10 s) in 1 ms slices, then prints how many it emitted and dropped. The
 * run file then shows how many arrived. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "trainprof.h"

int main(int argc, char **argv)
{
    long rate = argc > 1 ? atol(argv[1]) : 1000000;
    long seconds = argc > 2 ? atol(argv[2]) : 10;
    static tp_site site = TP_SITE("rate_region");
    long per_ms_pairs = rate / 2000;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    long long pairs = 0;
    for (long ms = 0; ms < seconds * 1000; ms++) {
        for (long i = 0; i < per_ms_pairs; i++) {
            tp_region_begin(&site);
            tp_region_end(&site);
        }
        pairs += per_ms_pairs;
        next.tv_nsec += 1000000;
        if (next.tv_nsec >= 1000000000) {
            next.tv_sec++;
            next.tv_nsec -= 1000000000;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    printf("{\"events\": %lld, \"dropped\": %llu, \"active\": %s}\n", pairs * 2,
           (unsigned long long)tp_dropped(), tp_active() ? "true" : "false");
    return 0;
}
