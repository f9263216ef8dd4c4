/* phases.c: the standard phases' kinds. */
#include "core/phases.h"

#include <string.h>

const char *const tp_pause_names[TP_PAUSE_NAMES] = {TP_PHASE_EVALUATE, TP_PHASE_SANITY_CHECK,
                                                    TP_PHASE_CHECKPOINT, TP_PHASE_COMPILE};

tp_phase_kind tp_phase_kind_of(const char *name)
{
    static const struct {
        const char *name;
        tp_phase_kind kind;
    } phases[] = {
        {TP_PHASE_DATALOADER_NEXT, TP_PHASE_KIND_INPUT},
        {TP_PHASE_TO_DEVICE, TP_PHASE_KIND_INPUT},
        {TP_PHASE_TRAIN_BATCH, TP_PHASE_KIND_COMPUTE},
        {TP_PHASE_FORWARD, TP_PHASE_KIND_COMPUTE},
        {TP_PHASE_LOSS, TP_PHASE_KIND_COMPUTE},
        {TP_PHASE_BACKWARD, TP_PHASE_KIND_COMPUTE},
        {TP_PHASE_OPTIMIZER_STEP, TP_PHASE_KIND_COMPUTE},
        {TP_PHASE_STEP_LR_SCHEDULERS, TP_PHASE_KIND_COMPUTE},
        {TP_PHASE_FROM_DEVICE, TP_PHASE_KIND_COMPUTE},
        {TP_PHASE_REDUCE_METRICS, TP_PHASE_KIND_COMM},
        {TP_PHASE_EVALUATE, TP_PHASE_KIND_PAUSE},
        {TP_PHASE_SANITY_CHECK, TP_PHASE_KIND_PAUSE},
        {TP_PHASE_CHECKPOINT, TP_PHASE_KIND_PAUSE},
        {TP_PHASE_COMPILE, TP_PHASE_KIND_PAUSE},
    };
    for (size_t i = 0; i < sizeof phases / sizeof phases[0]; i++)
        if (strcmp(name, phases[i].name) == 0)
            return phases[i].kind;
    return TP_PHASE_KIND_NONE;
}

bool tp_phase_inside_train_batch(const char *name)
{
    static const char *const inside[] = {TP_PHASE_FORWARD, TP_PHASE_LOSS, TP_PHASE_BACKWARD,
                                         TP_PHASE_OPTIMIZER_STEP};
    for (size_t i = 0; i < sizeof inside / sizeof inside[0]; i++)
        if (strcmp(name, inside[i]) == 0)
            return true;
    return false;
}
