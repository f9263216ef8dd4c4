/* trainprof.h: the one public C header of libtrainprof.
 *
 * For now it carries the version and the clock every trainprof timestamp is
 * taken on; the timing API (tp_region_begin/end, steps, epochs, counters)
 * arrives with the Timings work and will live here too. */
#ifndef TRAINPROF_H
#define TRAINPROF_H

#include <stdint.h>

#define TRAINPROF_VERSION_MAJOR 0
#define TRAINPROF_VERSION_MINOR 1
#define TRAINPROF_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

/* CLOCK_MONOTONIC in nanoseconds: the same clock in every process of a host. */
uint64_t tp_clock_now_ns(void);

#ifdef __cplusplus
}
#endif
#endif
