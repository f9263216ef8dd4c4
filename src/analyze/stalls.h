/* stalls.h: ranks that stopped making progress and never resumed before the
 * recording ended (a hang, ended by a timeout, a scheduler or Ctrl-C), and
 * where each of their threads was then.
 *
 * A rank has stalled when a step of its was open at the end (tp_course),
 * nothing moved on its threads (no region closed, no step mark) for longer
 * than its threshold, and its step thread was inside a region then (the
 * sampled stacks say which: a loop that ended leaves its last step open
 * with nothing inside, so a run recorded without stacks has no stall; a
 * rank stopped outside any region counts where another stalled inside
 * one; a pause, a checkpoint or an evaluation, counts past 10 minutes). The
 * threshold: the run's `record --stall-after` (meta stall_after_s)
 * where set, else 10 times its median step and at least 30 s, or 10 minutes
 * for a rank that never closed a step. Where it was: the sampled stacks of
 * its processes' threads since it stopped (DataLoader workers included):
 * per thread the region it had open last, the innermost frame of most of its
 * samples, and how many of them the kernel saw on a CPU.
 *
 * Who waits for whom: a rank whose step thread sits in a communication
 * phase (reduce_metrics, a collective) or in backward (where DDP's gradient
 * all-reduce waits) waits for the others; the ranks that stopped elsewhere
 * (in their input, their forward, their own code) are the ones the others
 * wait for, and are named first. Where every stalled rank waits, or none
 * does, the rank whose progress stopped earliest (aligned clocks in a merged
 * run) is.
 *
 * A step of a rank that took longer than its threshold and then closed is
 * a stall that ended: kept with where its threads were during it (ended),
 * left out of the step figures by timings.c with the same threshold. No
 * words: render/ says it. */
#ifndef TP_ANALYZE_STALLS_H
#define TP_ANALYZE_STALLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/rank_course.h"
#include "core/stall_facts.h"
#include "core/stall_rule.h"
#include "core/timing_facts.h"
#include "store/reader_stacks.h"

#define TP_STALLS_ENDED_MAX 32 /* stalls that ended, kept (the rest counted) */

typedef struct tp_stalls {
    tp_stall *v; /* in rank order, those that lasted to the end first */
    size_t n;
    size_t ended_untold; /* stalls that ended past TP_STALLS_ENDED_MAX */
    tp_stack_tree tree;  /* the frames of the threads' nodes (empty without stacks) */
} tp_stalls;

/* The stalled ranks of run, whose recording lasted run_s, from its ranks'
 * courses and steps. False (reason in err) when the file can't be read;
 * tp_stalls_free in every case. */
bool tp_stalls_build(tp_run *run, const tp_course *course, const tp_timings *t, double run_s,
                     tp_stalls *out, char *err, size_t cap);
void tp_stalls_free(tp_stalls *s);

#endif
