/* step_kinds.h: which of a rank's closed steps are steady, and which were
 * the warm-up's, a capture window's or a stall's: the one rule the timings
 * (timings.c) and the ranks (ranks.c) measure steps by. */
#ifndef TP_ANALYZE_STEP_KINDS_H
#define TP_ANALYZE_STEP_KINDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/reader.h"

/* A thread's first steady steps that each take more than TP_WARMUP_SLOW
 * times the rank's median steady step are warm-up too (cuDNN's autotuning,
 * CUDA's lazy start, the caching allocator's first growth, the DataLoader's
 * workers starting): at most a tenth of the rank's steps (one at least),
 * and none after a capture window's. */
#define TP_WARMUP_SLOW 2.0

/* What held a run's threads: its compile regions and its capture windows
 * (those that ran), each in (thread, start) order. */
typedef struct tp_step_hold {
    int64_t thread, a, b, max_b; /* max_b: the latest end of the thread's holds up to it */
} tp_step_hold;

typedef struct tp_step_holds {
    tp_step_hold *compiles, *windows;
    size_t ncompiles, nwindows, compiles_cap;
} tp_step_holds;

typedef enum {
    TP_STEP_STEADY,   /* timed in the step figures */
    TP_STEP_WARMUP,   /* a thread's first steps: compiling, or slow before the steady pace */
    TP_STEP_PROFILED, /* a capture window ran (or stopped) in it */
    TP_STEP_STALLED,  /* it stalled and went on: a pause, not a step's time */
} tp_step_kind;

/* A closed step: from its step mark to the mark that closed it. */
typedef struct tp_closed_step {
    int64_t thread, a, b;
} tp_closed_step;

/* A thread's closed steps into out (room for n), from its marks m[0..n) in
 * time order; their number. A step mark closes the open step and opens
 * one; a step-end mark (an evaluation mid-epoch) only closes, and so does
 * an epoch mark (the time between a pass's last step and the next pass's
 * first is in no step). */
size_t tp_closed_steps(const tp_run_mark *m, size_t n, tp_closed_step *out);

/* The run's compile regions and capture windows; false (reason in err)
 * where they can't be read. */
bool tp_step_holds_read(tp_run *run, tp_step_holds *h, char *err, size_t cap);
void tp_step_holds_free(tp_step_holds *h);

/* The stall threshold of the steps of a rank's marks[lo, hi) (core/
 * stall_rule.h): from the median of every closed step (one step mark to the
 * next on a thread, no epoch mark between), or stall_after_s where the run
 * set it. */
double tp_steps_stall_threshold(const tp_run_mark *m, size_t lo, size_t hi, double stall_after_s);

/* kinds[i] for each of a rank's closed steps v[0..n), in (thread, time)
 * order. A thread's first steps are warm-up for as long as each overlaps
 * one of its compile regions (profiled where a window ran in it too); after
 * them, a step a window ran in is profiled and one longer than stall_s
 * stalled; of the rest, a thread's first ones that each took more than
 * TP_WARMUP_SLOW times their median are warm-up too, at most a
 * tenth of them and none after a window's step. */
void tp_step_kinds(const tp_step_holds *h, const tp_closed_step *v, size_t n, double stall_s,
                   unsigned char *kinds);

#endif
