/* clock.c: monotonic time and the wall-clock anchor of a run. */
#include "clock.h"

uint64_t tp_clock_now_ns(void) { return tp_clock_mono_ns(); }

tp_clock_anchor tp_clock_anchor_now(void)
{
    tp_clock_anchor best = {0, 0, UINT64_MAX};
    for (int i = 0; i < 5; i++) {
        struct timespec wall;
        uint64_t before = tp_clock_mono_ns();
        clock_gettime(CLOCK_REALTIME, &wall);
        uint64_t after = tp_clock_mono_ns();
        if (after - before < best.uncertainty_ns) {
            best.mono_ns = before + (after - before) / 2;
            best.wall_ns = (int64_t)wall.tv_sec * 1000000000 + wall.tv_nsec;
            best.uncertainty_ns = after - before;
        }
    }
    return best;
}
