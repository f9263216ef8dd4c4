/* counter.c: wrap- and reset-aware counter deltas. */
#include "collect/counter.h"

bool tp_counter_delta(uint64_t prev, uint64_t cur, uint64_t *delta)
{
    if (cur >= prev) {
        *delta = cur - prev;
        return true;
    }
    /* Only a value in the top half of the 32-bit range can plausibly have
     * wrapped; a smaller one going backwards is a reset. */
    if (prev <= UINT32_MAX && prev > UINT32_MAX / 2) {
        *delta = (UINT32_MAX - prev) + cur + 1;
        return true;
    }
    return false;
}

bool tp_counter_delta_range(uint64_t prev, uint64_t cur, uint64_t max_range, uint64_t *delta)
{
    if (cur >= prev) {
        *delta = cur - prev;
        return true;
    }
    if (max_range > 0 && prev <= max_range && cur <= max_range) {
        *delta = (max_range - prev) + cur + 1;
        return true;
    }
    return false;
}

double tp_rate_per_s(uint64_t delta, uint64_t dt_ns)
{
    return dt_ns ? (double)delta * 1e9 / (double)dt_ns : 0.0;
}
