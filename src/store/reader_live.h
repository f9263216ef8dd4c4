/* reader_live.h: what a recording still running is doing right now, read
 * from its run file (WAL mode lets a reader see each committed second).
 *
 * A tp_live_reader reads only rows added since its previous call (by rowid)
 * and keeps per-second buckets of the last TP_LIVE_WINDOW seconds, so a
 * refresh costs what the training added since the last one, not the size of
 * the run. */
#ifndef TP_STORE_READER_LIVE_H
#define TP_STORE_READER_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/reader.h"

#define TP_LIVE_WINDOW  10                   /* seconds */
#define TP_LIVE_BUCKETS (TP_LIVE_WINDOW + 1) /* the window and the second in progress */
#define TP_LIVE_NAMES   32
#define TP_LIVE_PHASES  6

typedef struct tp_live_phase {
    char name[48];
    double share;        /* busy time in the window / the window */
    double device_share; /* the same for its device (CUDA event) times */
    bool has_device;     /* it had device times in the window */
} tp_live_phase;

typedef struct tp_live {
    double elapsed_s;
    double steps_per_s;                   /* 0 when no steps were marked */
    double samples_per_s;                 /* 0 when batch sizes were not seen */
    double batches_per_step;              /* micro-batches a step; 0 when none seen */
    tp_live_phase phases[TP_LIVE_PHASES]; /* busiest first */
    size_t nphases;
} tp_live;

typedef struct tp_live_reader {
    int64_t region_rowid, mark_rowid, device_rowid;
    int64_t bucket_sec[TP_LIVE_BUCKETS];
    double steps[TP_LIVE_BUCKETS], samples[TP_LIVE_BUCKETS], batches[TP_LIVE_BUCKETS];
    int nnames;
    int64_t name_ids[TP_LIVE_NAMES];
    char names[TP_LIVE_NAMES][48];
    double busy[TP_LIVE_NAMES][TP_LIVE_BUCKETS];
    double device[TP_LIVE_NAMES][TP_LIVE_BUCKETS];    /* by their regions' host start */
    bool device_seen[TP_LIVE_NAMES][TP_LIVE_BUCKETS]; /* any device time, even 0 ns */
} tp_live_reader;

/* Reads what is new and fills out with the last window's figures. False
 * when the file has no timings (schema 1) or can't be read. */
bool tp_live_update(tp_live_reader *r, tp_run *run, tp_live *out);

#endif
