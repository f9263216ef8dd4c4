/* memory_growth.h: the training's memory growing steadily through its
 * steps (a leak: DataLoader workers copying a Dataset of Python objects page
 * by page as they touch it, outputs kept with their graphs, a cache that
 * never evicts), and how long until it meets its limit.
 *
 * Judged on an agent's proc_rss_bytes (the command's process tree) over its
 * steady training steps: from the end of its ranks' warm-up (timings.h)
 * and past the first TP_GROWTH_SETTLE of what is left (CUDA's context,
 * pinned memory, DataLoader workers start there: start-up, not a leak), at
 * least TP_GROWTH_MIN_S to forecast from: the window in ten slices, each
 * slice's mean; it grows steadily when the last slice is above the first by
 * 256 MiB and 20 % or more, at least 8 of the 9 steps between slices go up
 * (or stay within 1 %), and the second half grows by at least 30 % of the
 * first half's growth (a start-up ramp that levels off is no leak). The
 * rate is the first slice to the last; the headroom is the cgroup limit
 * less the last slice where the run had one, else the host's available
 * memory at the end of the steps. */
#ifndef TP_ANALYZE_MEMORY_GROWTH_H
#define TP_ANALYZE_MEMORY_GROWTH_H

#include <stdbool.h>
#include <stdint.h>

#include "analyze/summary.h"

#define TP_GROWTH_MIN_S     60.0
#define TP_GROWTH_SETTLE    0.10
#define TP_GROWTH_SLICES    10
#define TP_GROWTH_MIN_BYTES (256.0 * 1024 * 1024)

typedef struct tp_memory_growth {
    double start_bytes, end_bytes; /* the first and last slices' means */
    double rate_bytes_per_s;
    double headroom_bytes;   /* left under the limit at the end, NaN unknown */
    bool cgroup;             /* the limit is the run's cgroup's, else the host's memory */
    double seconds_to_limit; /* headroom at the rate, NaN unknown */
} tp_memory_growth;

/* Whether the training's memory on agent_id grows steadily (the figures in
 * out). */
bool tp_memory_growth_of(const tp_summary *s, int64_t agent_id, tp_memory_growth *out);

#endif
