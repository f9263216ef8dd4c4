/* step_phases.h: step time over the run, broken into its phases.
 *
 * For each rank asked for, the thread that marked the most steps is followed:
 * each step (one step mark to the next, never across an epoch mark) is split
 * into the time its outermost regions of each standard phase took, and
 * "other" for the rest. Steps are then averaged in at most max_groups
 * consecutive groups, so a million-step run plots as a few hundred bars.
 * A rank's warm-up steps (timings.h), which would dwarf the others, can be
 * left out: the groups then begin at the first step after them. The steps
 * a capture window ran in (PyTorch's profiler slowed them) are left out of
 * the groups, the others keeping their numbers (first_step). */
#ifndef TP_ANALYZE_STEP_PHASES_H
#define TP_ANALYZE_STEP_PHASES_H

#include <stdbool.h>
#include <stddef.h>

#include "core/step_phase_facts.h"
#include "store/reader.h"

bool tp_step_phases_build(tp_run *run, const int *ranks, const size_t *skip, size_t n,
                          size_t max_groups, tp_step_phases *out, char *err, size_t cap);

#endif
