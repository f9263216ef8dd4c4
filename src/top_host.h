/* top_host.h: `trainprof top`'s drawing of the host (top_host.c), for
 * cmd_top.c: curses is set up, the screen erased. */
#ifndef TP_TOP_HOST_H
#define TP_TOP_HOST_H

#include "live/live_state.h"

/* A bar of width characters, filled to percent: "[|||||     ]". */
void tp_top_bar(int width, double percent);

/* The MEM, DISK and NET lines from row on (row moves past them), from the
 * latest values of top's own collectors (machine): memory used of its total
 * and swap; disk rates, IOPS and the busiest disk; network rates and the
 * link most used against its speed. */
void tp_top_draw_host(tp_live *machine, int *row);

#endif
