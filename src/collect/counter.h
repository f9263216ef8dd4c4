/* counter.h: turning cumulative kernel counters into deltas and rates.
 *
 * Kernel counters only grow, except when they wrap (32-bit fields on some
 * kernels and drivers) or reset (a device re-created, a driver reloaded). A
 * delta is never negative: a wrap of a value in the top half of the 32-bit range is
 * unwrapped,
 * anything else that went backwards is a reset and yields no delta. */
#ifndef TP_COLLECT_COUNTER_H
#define TP_COLLECT_COUNTER_H

#include <stdbool.h>
#include <stdint.h>

/* Sets *delta to cur - prev, unwrapping a 32-bit wrap. False on a reset. */
bool tp_counter_delta(uint64_t prev, uint64_t cur, uint64_t *delta);

/* Like tp_counter_delta for a counter that wraps at max_range (RAPL). */
bool tp_counter_delta_range(uint64_t prev, uint64_t cur, uint64_t max_range, uint64_t *delta);

/* Per-second rate of a delta over dt_ns nanoseconds (0 when dt_ns is 0). */
double tp_rate_per_s(uint64_t delta, uint64_t dt_ns);

#endif
