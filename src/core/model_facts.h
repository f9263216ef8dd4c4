/* model_facts.h: what the training's model runs in (dtype, device, autocast,
 * the GPU's compute capability), as the auto-instrumentation saw it at the
 * first forward of a `trainprof bottleneck` replay run. No I/O:
 * store/model_facts_file.h reads them, analyze/model_facts.h judges them. */
#ifndef TP_CORE_MODEL_FACTS_H
#define TP_CORE_MODEL_FACTS_H

typedef struct tp_model_facts {
    char dtype[32];         /* of the first parameter: "float32", "bfloat16", ... */
    char device[16];        /* its device type: "cuda", "cpu", ... */
    int cc_major, cc_minor; /* CUDA compute capability, 0.0 when not on CUDA */
    int autocast;           /* 1 on, 0 off, -1 unknown */
} tp_model_facts;

#endif
