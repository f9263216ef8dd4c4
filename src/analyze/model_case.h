/* model_case.h: the precision advice that follows from what the model runs
 * in (core/model_facts.h), for a compute-bound training, and the loader's
 * pinning. Facts; their words are render/remedy_words.h's. */
#ifndef TP_ANALYZE_MODEL_CASE_H
#define TP_ANALYZE_MODEL_CASE_H

#include "core/model_facts.h"

#include <stdbool.h>

typedef enum tp_precision_case {
    TP_PRECISION_NOT_CUDA,        /* nothing to say: not on a CUDA GPU */
    TP_PRECISION_ALREADY_REDUCED, /* a reduced-precision dtype, or under autocast */
    TP_PRECISION_TENSOR_CORES,    /* FP32 without autocast, compute capability 7.0 or newer:
                                     mixed precision is typically 1.5-5x */
    TP_PRECISION_NO_TENSOR_CORES, /* FP32 on an older GPU: mixed precision gains less */
} tp_precision_case;

tp_precision_case tp_precision_case_of(const tp_model_facts *facts);

/* Whether the phases inside a step were seen: not where a framework ran
 * its train step as compiled code of a backend other than PyTorch (Keras
 * on JAX or TensorFlow), whose steps, epochs and pauses come from the
 * framework's callbacks alone. */
bool tp_phases_unseen(const tp_model_facts *facts);

/* Whether pin_memory=True can help the loader: not pinned yet, and the model
 * on a CUDA GPU or where it runs is not known (pinned memory speeds
 * host-to-GPU copies only). */
bool tp_pin_memory_helps(const tp_model_facts *facts);

#endif
