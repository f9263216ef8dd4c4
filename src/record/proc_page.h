/* proc_page.h: the page each training process hands the recorder with its
 * connection (lib/ring.h's tp_proc_page), as the drain holds it. */
#ifndef TP_RECORD_PROC_PAGE_H
#define TP_RECORD_PROC_PAGE_H

#include "core/sink.h"
#include "ring.h"

/* Maps the process page in fd (closed here) into *slot, read-only, for the
 * connection's life: NULL, or why it was refused (the connection has one
 * already; not a sealed memfd of a page; another kind or version). */
const char *tp_proc_page_map(tp_proc_page **slot, int fd);

/* The capture windows a process could not hand over: how many, and the
 * step count the last began at (0 unknown). */
typedef struct tp_windows_unsent {
    uint32_t n;
    uint64_t last_first_step;
} tp_windows_unsent;

/* The threads *slot counts that could not hand their ring over, added to
 * sink (the process's claim, saturating), and the capture windows process
 * pid could not hand over, said as the unavailable source "capture windows
 * of pid PID" and returned; the page let go. None mapped: nothing, none. */
tp_windows_unsent tp_proc_page_release(tp_proc_page **slot, tp_sink *sink, int32_t pid);

#endif
