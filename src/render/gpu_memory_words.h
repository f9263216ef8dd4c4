/* gpu_memory_words.h: a rank's GPU memory (analyze/gpu_memory.h) in words:
 * its headroom for the report, its verdicts (memory_pressure from the
 * allocator's readings, gpu_memory_growth), and an out-of-memory explained;
 * and the same figures as JSON. */
#ifndef TP_RENDER_GPU_MEMORY_WORDS_H
#define TP_RENDER_GPU_MEMORY_WORDS_H

#include <stddef.h>
#include <stdio.h>

#include "analyze/summary.h"
#include "analyze/verdicts.h"
#include "util/json_writer.h"

/* memory_pressure of a rank's allocator by its readings
 * (v->f.gpu_memory.allocator set). */
void tp_gpu_pressure_words(char *out, size_t cap, const tp_verdict *v);

/* gpu_memory_growth. */
void tp_gpu_growth_words(char *out, size_t cap, const tp_verdict *v);

/* The report's "GPU memory" section: each rank's headroom, fragmentation
 * and retries (nothing without readings). */
void tp_gpu_memory_text(FILE *out, const tp_verdicts *v);

/* A death by the allocator's out-of-memory explained (what it tried, what
 * was allocated, reserved and free, the step's usual peak, the operators
 * that allocated most in its rank's capture windows, the growth, what to
 * try), after the death's own line; nothing for another death. */
void tp_gpu_oom_words(char *out, size_t cap, const tp_summary *s, const tp_verdicts *v,
                      const tp_death *d);

/* "gpu_memory": [one object per rank, every figure in bytes or steps, null
 * unknown]. */
void tp_gpu_memory_json(json_writer *w, const tp_verdicts *v);

#endif
