/* step_phase_facts.h: a rank's step time over the run, by phase, in groups
 * of consecutive steps (analyze/step_phases.h builds them, the summary
 * stores them, html plots them); and the phases' names. */
#ifndef TP_CORE_STEP_PHASE_FACTS_H
#define TP_CORE_STEP_PHASE_FACTS_H

#include <stddef.h>

#define TP_STEP_PHASES 7   /* six standard phases and "other" */
#define TP_STEP_GROUPS 300 /* the groups of a plotted rank (html, and those stored) */

/* dataloader_next, to_device, train_batch, step_lr_schedulers, from_device,
 * reduce_metrics, other: the order of tp_step_phases.values. */
extern const char *const tp_step_phase_names[TP_STEP_PHASES];

typedef struct tp_step_phases {
    size_t nsteps; /* the rank's steps, those left out included */
    size_t ngroups;
    double *first_step; /* per group: index of its first step (from 0, the first left out) */
    double *values;     /* ngroups * TP_STEP_PHASES: mean seconds per step */
    /* per group: the pauses (bit i: tp_pause_names[i], core/phases.h) that
     * began during its steps or right after them, before the next group's */
    unsigned *pauses;
    /* per group: its first step's begin and its last step's end, seconds
     * since the run's start (NaN where a file stored before kept none) */
    double *start_s, *end_s;
} tp_step_phases;

#define TP_PAUSE_BITS 4 /* tp_pause_names' count: the bits of pauses that mean anything */

void tp_step_phases_free(tp_step_phases *p);

#endif
