/* gpu_use.h: which of a node's GPUs the job used, so that verdicts about
 * utilization and memory are about those alone: NVML sees every GPU on the
 * node, the job's and others'. */
#ifndef TP_ANALYZE_GPU_USE_H
#define TP_ANALYZE_GPU_USE_H

#include <stdint.h>

#include "store/reader.h"

enum { TP_GPU_USE_UNKNOWN = -1, TP_GPU_NOT_USED = 0, TP_GPU_USED = 1 };

/* For each of run->gpus (out[i] for run->gpus[i]): TP_GPU_USED where a
 * process of the job told that GPU's UUID (table thread_device), or NVML
 * listed a process of the job on it (meta gpu.N.processes against the pids of
 * the instrumented processes); TP_GPU_NOT_USED where its agent has either
 * kind of evidence and it has none; TP_GPU_USE_UNKNOWN where its agent has
 * no evidence (files from before, a driver without process lists). The
 * caller frees the array; NULL when the run has no GPU. */
int8_t *tp_gpus_used(tp_run *run);

#endif
