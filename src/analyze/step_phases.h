/* step_phases.h: step time over the run, broken into its phases.
 *
 * For each rank asked for, the thread that marked the most steps is followed:
 * each step (one step mark to the next, never across an epoch mark) is split
 * into the time its outermost regions of each standard phase took, and
 * "other" for the rest. Steps are then averaged in at most max_groups
 * consecutive groups, so a million-step run plots as a few hundred bars.
 * A rank's warm-up steps (timings.h), which would dwarf the others, can be
 * left out: the groups then begin at the first step after them. */
#ifndef TP_ANALYZE_STEP_PHASES_H
#define TP_ANALYZE_STEP_PHASES_H

#include <stdbool.h>
#include <stddef.h>

#include "store/reader.h"

#define TP_STEP_PHASES 7   /* six standard phases and "other" */
#define TP_STEP_GROUPS 300 /* the groups of a plotted rank (html, and those stored) */

extern const char *const tp_step_phase_names[TP_STEP_PHASES];

typedef struct tp_step_phases {
    size_t nsteps; /* the rank's steps, those left out included */
    size_t ngroups;
    double *first_step; /* per group: index of its first step (from 0, the first left out) */
    double *values;     /* ngroups * TP_STEP_PHASES: mean seconds per step */
} tp_step_phases;

/* Fills out[k] for ranks[k], k < n, reading the marks once and the outermost
 * regions once however many ranks are asked for (out[k].ngroups is 0 for a
 * rank without steps), leaving out the first skip[k] steps of each (skip
 * may be NULL). False (reason in err) if the run can't be read. */
bool tp_step_phases_build(tp_run *run, const int *ranks, const size_t *skip, size_t n,
                          size_t max_groups, tp_step_phases *out, char *err, size_t cap);
void tp_step_phases_free(tp_step_phases *p);

#endif
