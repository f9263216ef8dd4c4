/* stall_where.h: where each stalled rank was last seen, in the words the
 * report gives a stall's thread: the rank's latest stack sample inside a
 * region, read from the run file a recording is writing (store/
 * reader_live.h's tp_run_live_wheres), as "loop (train.py:20) calling
 * Condition.wait (threading.py:320)" and what it was doing ("waiting on
 * storage"). top's STALLED line, record's status line and its /metrics say
 * it. */
#ifndef TP_RECORD_STALL_WHERE_H
#define TP_RECORD_STALL_WHERE_H

#include <stdbool.h>
#include <stdint.h>

#include "live/live_state.h"
#include "render/report.h"
#include "store/reader.h"

typedef struct tp_stall_where {
    uint32_t node; /* the sample's node and state the words were made of (0: none) */
    int state;
    char place[800]; /* one line of plain text (the frames are the script's); "" none */
    tp_doing doing;
} tp_stall_where;

/* ", last seen in PLACE, DOING" of w (PLACE alone where DOING is unknown),
 * or "" where w says no place. */
void tp_stall_where_words(char *out, size_t cap, const tp_stall_where *w);

/* The places of the stalled ranks, up to TP_STALL_PLACES_MAX of them (the
 * rest not said), read in one pass over the file's latest samples while a
 * rank is stalled: once a second while one has none yet, then every
 * TP_STALL_PLACES_EVERY_NS (a pass: 6 ms on 10,000 rows, bench/
 * stall_where_cost.py), none while no rank is stalled. */
#define TP_STALL_PLACES_MAX      16
#define TP_STALL_PLACES_EVERY_NS 5000000000ull

typedef struct tp_stall_places {
    /* the run file, opened at the first stall; NULL: run is the caller's
     * (top's), neither opened nor closed here */
    const char *path;
    tp_run *run;
    int tries;        /* opens that failed (a file not yet readable), up to a few */
    uint64_t read_ns; /* when the places were last read (CLOCK_MONOTONIC) */
    size_t n;
    struct {
        int32_t rank;
        tp_stall_where where;
    } at[TP_STALL_PLACES_MAX];
} tp_stall_places;

/* Brings p up to the ranks stalled in live at now_ns (its latest time if
 * later) and, where live is the recorder's, says in it where each is
 * (tp_live_set_where; forgotten of the ranks no longer stalled); the words
 * of rank (tp_stall_where_words) into out, "" where it has none. */
void tp_stall_places_refresh(tp_stall_places *p, tp_live *live, uint64_t live_now_ns, int32_t rank,
                             char *out, size_t cap);
void tp_stall_places_close(tp_stall_places *p);

/* The ranks p follows, but except, grouped by where they were last seen
 * (the same words): one group a call, from *from (0 at first; moved on),
 * as "ranks 0, 2-3, last seen in PLACE, DOING" ("rank 4" alone where it
 * has no place yet), in the order of each group's first rank followed;
 * false once none is left. Ranks in a group ascending, runs as ranges. */
bool tp_stall_places_group(const tp_stall_places *p, int32_t except, size_t *from, char *out,
                           size_t cap);

#endif
