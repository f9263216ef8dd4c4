/* step_phase_facts.c: the phases' names; freeing step phases. */
#include "core/step_phase_facts.h"

#include <stdlib.h>
#include <string.h>

#include "trainprof.h"

const char *const tp_step_phase_names[TP_STEP_PHASES] = {
    TP_PHASE_DATALOADER_NEXT,
    TP_PHASE_TO_DEVICE,
    TP_PHASE_TRAIN_BATCH,
    TP_PHASE_STEP_LR_SCHEDULERS,
    TP_PHASE_FROM_DEVICE,
    TP_PHASE_REDUCE_METRICS,
    "other",
};

void tp_step_phases_free(tp_step_phases *p)
{
    free(p->first_step);
    free(p->values);
    free(p->pauses);
    free(p->start_s);
    free(p->end_s);
    memset(p, 0, sizeof *p);
}
