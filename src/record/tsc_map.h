/* tsc_map.h: the recorder's map from a training thread's TSC stamps
 * (lib/clock.h: TP_TIME_TSC) to CLOCK_MONOTONIC ns.
 *
 * The TSC counts at a constant rate, the same on every CPU of the machine
 * (the kernel keeps time by it); CLOCK_MONOTONIC follows it, slewed by NTP
 * by a few parts per million. The map holds two anchors, each a TSC read
 * and a monotonic read taken back to back (the best of a few tries): the
 * latest, taken again at every refresh (the drain's passes), and one from
 * 10 to 20 s before it (the run's first after its start), which gives the
 * rate. A stamp maps from the latest anchor at that rate: one taken a
 * drain's period before it is off by that period times the rate's error
 * (an anchor's 25 ns over 10 s), not by the slew since the run began. */
#ifndef TP_RECORD_TSC_MAP_H
#define TP_RECORD_TSC_MAP_H

#include <stdbool.h>
#include <stdint.h>

typedef struct tp_tsc_anchor {
    uint64_t tsc, ns;
} tp_tsc_anchor;

typedef struct tp_tsc_map {
    bool ok; /* this machine has a TSC to read (x86-64) */
    /* older: the rate's other end; next: the older one to be, 10 s on */
    tp_tsc_anchor older, next, latest;
    double ns_per_tick;
} tp_tsc_map;

/* Two anchors 2 ms apart: a map good to a few microseconds a second until
 * refreshes lengthen its baseline. */
void tp_tsc_map_init(tp_tsc_map *m);

/* A new latest anchor (a few clock reads); once it is 10 s past next, the
 * older anchor moves up to next, and next to it. */
void tp_tsc_map_refresh(tp_tsc_map *m);

/* The CLOCK_MONOTONIC ns of stamp: a TP_TIME_TSC stamp mapped (0 where m
 * is NULL or can't map, UINT64_MAX >> 1 at most: a crafted ring's), any
 * other stamp as it is. */
uint64_t tp_tsc_map_ns(const tp_tsc_map *m, uint64_t stamp);

#endif
