/* model_facts_file.h: the model facts: from a run's meta (the "fact.*"
 * keys lib/facts.h sends), or from the file that trainprof's Python side
 * writes beside a `bottleneck` replay run (TRAINPROF_BOTTLENECK_FACTS). */
#ifndef TP_STORE_MODEL_FACTS_FILE_H
#define TP_STORE_MODEL_FACTS_FILE_H

#include <stdbool.h>

#include "core/model_facts.h"
#include "store/reader.h"

/* Reads the facts file (key=value lines: dtype, device, capability "M.m",
 * autocast 0/1). False when it is missing or names no dtype and device;
 * unknown keys are ignored, values cut at their field's size. */
bool tp_model_facts_read(const char *path, tp_model_facts *facts);

/* The facts run's meta holds (each unknown where it holds none, or a value
 * out of its range). False when it knows neither the model's device nor the
 * loader's workers (recorded before facts, or no PyTorch training). */
bool tp_run_model_facts(const tp_run *run, tp_model_facts *facts);

#endif
