/* stall_where.h: where a stalled rank was last seen, in the words the
 * report gives a stall's thread: its latest stack sample inside a region,
 * read from the run file a recording is writing (store/reader_live.h's
 * tp_run_live_where), as "loop (train.py:20) calling Condition.wait
 * (threading.py:320)" and what it was doing ("waiting on storage"). top's
 * STALLED line, record's status line and its /metrics say it. */
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

/* Refreshes w for rank (-1: any) from run, reading the stack tree for the
 * words only where the latest sample's node or state changed; w starts
 * zeroed. Whether w now says a place. */
bool tp_stall_where_read(tp_run *run, int32_t rank, tp_stall_where *w);

/* ", last seen in PLACE, DOING" of w (PLACE alone where DOING is unknown),
 * or "" where w says no place. */
void tp_stall_where_words(char *out, size_t cap, const tp_stall_where *w);

/* The places of a recording's stalled ranks, kept in its live state
 * (tp_live_set_where) for its status line and /metrics: the run file it
 * writes opened to read them at the first stall, up to
 * TP_STALL_PLACES_MAX ranks followed (the rest not said). */
#define TP_STALL_PLACES_MAX 16

typedef struct tp_stall_places {
    const char *path; /* the run file */
    tp_run *run;      /* opened at the first stall; NULL before, or where it can't be */
    int tries;        /* opens that failed (a file not yet readable), up to a few */
    size_t n;
    struct {
        int32_t rank;
        tp_stall_where where;
    } at[TP_STALL_PLACES_MAX];
} tp_stall_places;

/* Says in live where each stalled rank is (and forgets it of the ranks no
 * longer stalled); the words of rank (tp_stall_where_words) into out, ""
 * where it has none. A look a second: a few small queries while a rank is
 * stalled, none otherwise. */
void tp_stall_places_refresh(tp_stall_places *p, tp_live *live, int32_t rank, char *out,
                             size_t cap);
void tp_stall_places_close(tp_stall_places *p);

#endif
