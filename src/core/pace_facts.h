/* pace_facts.h: what a summary stores of a run's changes of pace besides
 * its step phases: the function behind each change, by the stack samples
 * (analyze/regime_stacks.c finds it, store/summary_tables.h keeps it). */
#ifndef TP_CORE_PACE_FACTS_H
#define TP_CORE_PACE_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TP_PACE_TEXT 160 /* a function's or file's text kept, cut beyond */

/* The function that moved most in the phase that moved, over the regime of
 * steps first_step..last_step against the one before; found false where
 * none did (the rest unset). */
typedef struct tp_pace_function {
    size_t first_step, last_step;
    bool found;
    size_t phase; /* index in tp_step_phase_names */
    bool workers; /* the DataLoader workers' samples, not the step thread's */
    int32_t line;
    double before, after; /* shares of the phase's samples */
    char function[TP_PACE_TEXT], file[TP_PACE_TEXT];
} tp_pace_function;

#endif
