/* clock.h: trainprof's time base.
 *
 * Every timestamp is CLOCK_MONOTONIC nanoseconds. A run records one anchor
 * (monotonic and wall clock read back to back) so that files from several
 * hosts can be put on one time line later.
 *
 * The events a thread stamps itself (a region's begin and end, a step mark)
 * may carry the time stamp counter instead, marked TP_TIME_TSC: one rdtsc
 * (10 ns on the CI machine) where clock_gettime takes 24, twice a region.
 * A process stamps so where the kernel itself keeps time by the TSC (its
 * clocksource is "tsc": invariant, and checked in step across the CPUs);
 * the recorder, on the same machine, maps each such stamp to CLOCK_MONOTONIC
 * ns as it reads it (src/record/tsc_map.h). TRAINPROF_TSC=0 turns it off. */
#ifndef TP_LIB_CLOCK_H
#define TP_LIB_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "trainprof.h"

/* A stamp that is the TSC, not ns (the counter reaches bit 63 after a
 * century at 3 GHz). */
#define TP_TIME_TSC (1ull << 63)

/* Whether this process stamps with the TSC (tp_clock_choose); read on the
 * hot path, written once before the process's first ring. */
extern int tp_clock_tsc_on;

/* Inline form for hot paths; tp_clock_now_ns() is the exported one. */
static inline uint64_t tp_clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* An event's time as its thread stamps it: the TSC marked TP_TIME_TSC, or
 * CLOCK_MONOTONIC ns. */
static inline uint64_t tp_clock_stamp(void)
{
#if defined(__x86_64__)
    if (__builtin_expect(tp_clock_tsc_on, 1))
        return __rdtsc() | TP_TIME_TSC;
#endif
    return tp_clock_mono_ns();
}

/* Decides, once per process (at its connection to the recorder), whether
 * it stamps with the TSC: on x86-64, where the kernel's clocksource is
 * "tsc", the TSC readable (prctl PR_GET_TSC) and TRAINPROF_TSC is not "0".
 * Anything it can't read (a sandbox's refusal) leaves it off. */
void tp_clock_choose(void);

typedef struct tp_clock_anchor {
    uint64_t mono_ns;        /* CLOCK_MONOTONIC */
    int64_t wall_ns;         /* CLOCK_REALTIME, Unix epoch */
    uint64_t uncertainty_ns; /* time between the two reads */
} tp_clock_anchor;

/* Reads both clocks as close together as it can (best of a few tries) and
 * reports how far apart the reads were, which bounds the anchor's error. */
tp_clock_anchor tp_clock_anchor_now(void);

#endif
