/* model_case.c: see model_case.h. */
#include "analyze/model_case.h"

#include <string.h>

tp_precision_case tp_precision_case_of(const tp_model_facts *facts)
{
    if (strcmp(facts->device, "cuda") != 0)
        return TP_PRECISION_NOT_CUDA;
    if (strcmp(facts->dtype, "float32") != 0 || facts->autocast == 1)
        return TP_PRECISION_ALREADY_REDUCED;
    return facts->cc_major >= 7 ? TP_PRECISION_TENSOR_CORES : TP_PRECISION_NO_TENSOR_CORES;
}

bool tp_phases_unseen(const tp_model_facts *facts)
{
    return facts->framework[0] && facts->backend[0] && strcmp(facts->backend, "torch") != 0;
}

bool tp_pin_memory_helps(const tp_model_facts *facts)
{
    return facts->pin_memory != 1 && (!facts->device[0] || strcmp(facts->device, "cuda") == 0);
}
