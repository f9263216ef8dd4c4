/* clock.h: trainprof's time base.
 *
 * Every timestamp is CLOCK_MONOTONIC nanoseconds. A run records one anchor
 * (monotonic and wall clock read back to back) so that files from several
 * hosts can be put on one time line later. */
#ifndef TP_LIB_CLOCK_H
#define TP_LIB_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "trainprof.h"

/* Inline form for hot paths; tp_clock_now_ns() is the exported one. */
static inline uint64_t tp_clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef struct tp_clock_anchor {
    uint64_t mono_ns;        /* CLOCK_MONOTONIC */
    int64_t wall_ns;         /* CLOCK_REALTIME, Unix epoch */
    uint64_t uncertainty_ns; /* time between the two reads */
} tp_clock_anchor;

/* Reads both clocks as close together as it can (best of a few tries) and
 * reports how far apart the reads were, which bounds the anchor's error. */
tp_clock_anchor tp_clock_anchor_now(void);

#endif
