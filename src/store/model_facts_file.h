/* model_facts_file.h: the model facts file that trainprof's Python side
 * writes beside a `bottleneck` replay run (TRAINPROF_BOTTLENECK_FACTS). */
#ifndef TP_STORE_MODEL_FACTS_FILE_H
#define TP_STORE_MODEL_FACTS_FILE_H

#include <stdbool.h>

#include "core/model_facts.h"

/* Reads the facts file (key=value lines: dtype, device, capability "M.m",
 * autocast 0/1). False when it is missing or names no dtype and device;
 * unknown keys are ignored, values cut at their field's size. */
bool tp_model_facts_read(const char *path, tp_model_facts *facts);

#endif
