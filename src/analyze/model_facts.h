/* model_facts.h: what the training's model runs in (dtype, device, autocast,
 * the GPU's compute capability), as the auto-instrumentation saw it at the
 * first forward of a `trainprof bottleneck` replay run, and the precision
 * hint that follows from it. */
#ifndef TP_ANALYZE_MODEL_FACTS_H
#define TP_ANALYZE_MODEL_FACTS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct tp_model_facts {
    char dtype[32];         /* of the first parameter: "float32", "bfloat16", ... */
    char device[16];        /* its device type: "cuda", "cpu", ... */
    int cc_major, cc_minor; /* CUDA compute capability, 0.0 when not on CUDA */
    int autocast;           /* 1 on, 0 off, -1 unknown */
} tp_model_facts;

/* Reads the facts file (key=value lines: dtype, device, capability "M.m",
 * autocast 0/1) the Python side wrote. False when it is missing or names no
 * dtype and device; unknown keys are ignored. */
bool tp_model_facts_read(const char *path, tp_model_facts *facts);

/* The mixed-precision advice for a compute-bound training with these facts,
 * written into buf: FP32 without autocast on a GPU with tensor cores (compute
 * capability 7.0 or newer) gets the 1.5-5x hint; a model already in reduced
 * precision or under autocast is said to be so. Returns false, with buf
 * empty, when there is nothing to say (not on a CUDA GPU). */
bool tp_precision_hint(const tp_model_facts *facts, char *buf, size_t cap);

#endif
