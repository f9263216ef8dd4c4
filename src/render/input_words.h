/* input_words.h: an input-bound verdict's cause and advice in words. */
#ifndef TP_RENDER_INPUT_WORDS_H
#define TP_RENDER_INPUT_WORDS_H

#include <stddef.h>

#include "analyze/verdicts.h"

/* The advice of an input-bound verdict v, by what its loading waits on
 * (tp_input_cause): the figure that names the cause, over the steps or its
 * latest pace, and the one thing to try; where the storage was busy but not
 * with the training's I/O, that said first. */
void tp_input_advice(char *out, size_t cap, const tp_verdict *v);

#endif
