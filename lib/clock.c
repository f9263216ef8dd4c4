/* clock.c: monotonic time, the TSC's choice and the wall-clock anchor of a run. */
#include "clock.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int tp_clock_tsc_on;

#if defined(__x86_64__)
/* Whether the kernel keeps time by the TSC: the clocksource file says "tsc". */
static int kernel_uses_tsc(void)
{
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                  O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[16];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n == 4 && memcmp(buf, "tsc\n", 4) == 0;
}

void tp_clock_choose(void)
{
    tp_clock_tsc_on = 0;
    const char *v = getenv("TRAINPROF_TSC");
    int tsc_mode = 0;
    if ((v && strcmp(v, "0") == 0) || !kernel_uses_tsc())
        return;
    if (prctl(PR_GET_TSC, (unsigned long)&tsc_mode, 0, 0, 0) != 0 || tsc_mode != PR_TSC_ENABLE)
        return;
    tp_clock_tsc_on = 1;
}
#else
void tp_clock_choose(void) { tp_clock_tsc_on = 0; } /* no TSC: monotonic stamps */
#endif

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
