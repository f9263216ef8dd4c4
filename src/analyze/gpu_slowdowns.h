/* gpu_slowdowns.h: each GPU's clock event reasons over its agent's
 * training steps (core/gpu_slowdown.h), as a summary reads them. */
#ifndef TP_ANALYZE_GPU_SLOWDOWNS_H
#define TP_ANALYZE_GPU_SLOWDOWNS_H

#include <stdbool.h>
#include <stddef.h>

#include "core/gpu_slowdown.h"
#include "store/reader.h"

/* *out: one for each of run->gpus (NULL without GPUs; the caller frees
 * it): the stored ones where the summary is stored (stored) with them,
 * else from the samples over each agent's steps window (windows[0..n); the
 * whole run for an agent without one); unknown (shares NaN) in a
 * summary-only file without them, whose series keep their first and last
 * samples only. False (reason in err) where the file can't be read. */
bool tp_gpu_slowdowns_build(tp_run *run, const tp_steps_window *windows, size_t n, bool stored,
                            tp_gpu_slowdown **out, char *err, size_t cap);

#endif
