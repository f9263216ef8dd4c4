/* tsc_map.c: see tsc_map.h. */
#include "record/tsc_map.h"

#include <time.h>

#include "clock.h"

#define TRIES         5
#define REBASE_NS     10000000000ull /* the older anchor moves up after 10 s */
#define FIRST_SPAN_NS 2000000ull     /* the first two anchors' distance */
/* A refresh whose reads lay further apart than this (the drain's thread
 * preempted between them every try, on a busy machine) is not taken: its
 * anchor could be off by that much; the map keeps the one before. */
#define GAP_MAX_NS 150.0 /* about 60 ns unhindered on the CI machine */

#if defined(__x86_64__)
/* The TSC in order with what comes before and after it (the vDSO's own
 * rdtsc_ordered does the same). */
static uint64_t tsc_ordered(void)
{
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}

/* A TSC read and a monotonic read as close together as a few tries get;
 * *gap the TSC ticks the closest pair of reads spanned. */
static tp_tsc_anchor anchor_now(uint64_t *gap_out)
{
    tp_tsc_anchor best = {0, 0};
    uint64_t gap = UINT64_MAX;
    for (int i = 0; i < TRIES; i++) {
        uint64_t before = tsc_ordered(), ns = tp_clock_mono_ns(), after = tsc_ordered();
        if (after >= before && after - before < gap) {
            gap = after - before;
            best = (tp_tsc_anchor){before + (after - before) / 2, ns};
        }
    }
    *gap_out = gap;
    return best;
}

static void set_rate(tp_tsc_map *m)
{
    uint64_t ticks = m->latest.tsc - m->older.tsc;
    m->ok = m->latest.tsc > m->older.tsc && m->latest.ns > m->older.ns;
    m->ns_per_tick = m->ok ? (double)(m->latest.ns - m->older.ns) / (double)ticks : 0;
}

void tp_tsc_map_init(tp_tsc_map *m)
{
    *m = (tp_tsc_map){0};
    uint64_t gap;
    m->older = anchor_now(&gap);
    uint64_t until = m->older.ns + FIRST_SPAN_NS;
    while (tp_clock_mono_ns() < until) {
        struct timespec nap = {0, 500000};
        nanosleep(&nap, NULL);
    }
    m->latest = m->next = anchor_now(&gap);
    set_rate(m);
}

void tp_tsc_map_refresh(tp_tsc_map *m)
{
    uint64_t gap;
    tp_tsc_anchor now = anchor_now(&gap);
    if ((double)gap * m->ns_per_tick > GAP_MAX_NS)
        return; /* reads too far apart to trust: the map stays */
    if (now.tsc <= m->latest.tsc || now.ns <= m->latest.ns)
        return;                            /* a TSC that went back (it can't here): the map stays */
    if (now.ns - m->next.ns > REBASE_NS) { /* older keeps 10 s or more behind */
        m->older = m->next;
        m->next = now;
    }
    m->latest = now;
    set_rate(m);
}
#else
/* No TSC to read: no map (its stamps, which no process here makes, read 0). */
void tp_tsc_map_init(tp_tsc_map *m) { *m = (tp_tsc_map){0}; }

void tp_tsc_map_refresh(tp_tsc_map *m) { (void)m; }
#endif

uint64_t tp_tsc_map_ns(const tp_tsc_map *m, uint64_t stamp)
{
    if (!(stamp & TP_TIME_TSC))
        return stamp;
    if (!m || !m->ok)
        return 0;
    uint64_t tsc = stamp & ~TP_TIME_TSC;
    /* ticks from the latest anchor, either way, as a double: a crafted
     * stamp's distance holds, and the result is clamped */
    double ticks =
        tsc >= m->latest.tsc ? (double)(tsc - m->latest.tsc) : -(double)(m->latest.tsc - tsc);
    double ns = (double)m->latest.ns + ticks * m->ns_per_tick;
    const double most = (double)(UINT64_MAX >> 1);
    return ns <= 0 ? 0 : ns >= most ? UINT64_MAX >> 1 : (uint64_t)ns;
}
