/* phases.h: what each standard phase of a step is (names: include/trainprof.h's
 * TP_PHASE_*, shared with the in-training library and the Python face).
 *
 *   input          dataloader_next, to_device
 *   compute        train_batch, forward, loss, backward, optimizer_step,
 *                  step_lr_schedulers, from_device
 *   communication  reduce_metrics
 *   pause          evaluate, sanity_check, checkpoint, compile: not training,
 *                  kept out of the steps
 * Any other name (a user's region) is of none of them. */
#ifndef TP_CORE_PHASES_H
#define TP_CORE_PHASES_H

#include <stdbool.h>
#include <stddef.h>

#include "trainprof.h"

typedef enum {
    TP_PHASE_KIND_NONE,
    TP_PHASE_KIND_INPUT,
    TP_PHASE_KIND_COMPUTE,
    TP_PHASE_KIND_COMM,
    TP_PHASE_KIND_PAUSE,
} tp_phase_kind;

tp_phase_kind tp_phase_kind_of(const char *name);

/* Whether name is one of the standard phases timed inside train_batch
 * (forward, loss, backward, optimizer_step). */
bool tp_phase_inside_train_batch(const char *name);

/* The pauses, in the order html shades them. */
#define TP_PAUSE_NAMES 4
extern const char *const tp_pause_names[TP_PAUSE_NAMES];

#endif
