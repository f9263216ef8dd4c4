/* status_line.h: the one line `record` redraws on a terminal while it runs. */
#ifndef TP_RECORD_STATUS_LINE_H
#define TP_RECORD_STATUS_LINE_H

#include <stdio.h>

#include "live/live_state.h"

/* Redraws "trainprof 00:01:23  cpu 45%  mem 3.2/23.4 GiB  gpu0 93%" in place
 * from the latest values in the live state, and while a rank is stalled
 * "STALLED: rank 1 no progress for 42 s" with where (record/stall_where.h's
 * words, "" none) after it, of the rank stalled longest, and how many are
 * ("STALLED (8 ranks): rank 1 ...") where more than one; cut to the
 * terminal's width (a line that wrapped would not be redrawn in place). */
void tp_status_line_draw(FILE *out, tp_live *live, double elapsed_s, double mem_total_bytes,
                         const char *where);

/* Erases the line so that later output starts clean. */
void tp_status_line_clear(FILE *out);

#endif
