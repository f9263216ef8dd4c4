/* step_phase_facts.c: the phases' names; freeing step phases. */
#include "core/step_phase_facts.h"

#include <stdlib.h>
#include <string.h>

const char *const tp_step_phase_names[TP_STEP_PHASES] = {
    "dataloader_next", "to_device",      "train_batch", "step_lr_schedulers",
    "from_device",     "reduce_metrics", "other",
};

void tp_step_phases_free(tp_step_phases *p)
{
    free(p->first_step);
    free(p->values);
    memset(p, 0, sizeof *p);
}
