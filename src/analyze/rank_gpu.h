/* rank_gpu.h: which of its node's GPUs a rank drove. */
#ifndef TP_ANALYZE_RANK_GPU_H
#define TP_ANALYZE_RANK_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/reader.h"

/* The index (NVML's, as the run's gpu table numbers them) of the GPU that a
 * rank of agent_id drove, or -1 when it can't be told.
 *
 * visible_set: the rank's process had CUDA_VISIBLE_DEVICES, `visible`. Its
 * entries are the GPUs the process sees, device 0 first (Slurm's per-task
 * binding, Kubernetes, a launcher's reordering). A process that sees one GPU
 * drove it; one that sees several drove the entry at its local rank
 * (cuda:LOCAL_RANK, as torchrun's scripts do). An entry is an index or a
 * GPU UUID ("GPU-...", where a unique prefix is enough, as CUDA takes it),
 * looked up among the agent's GPUs; CUDA reads the list up to its first
 * invalid entry, and so does this. A MIG instance ("MIG-...") names the GPU
 * it is part of, where the run lists its instances (meta gpu.N.mig). An index is taken as NVML's,
 * which is CUDA's order under CUDA_DEVICE_ORDER=PCI_BUS_ID and on nodes of one GPU model.
 *
 * Without CUDA_VISIBLE_DEVICES every GPU is visible, and the rank's is its
 * local rank (-1 when unknown). */
int tp_rank_gpu(const tp_run *run, int64_t agent_id, bool visible_set, const char *visible,
                int local_rank);

/* The index of agent_id's GPU whose NVML UUID is uuid, as the CUDA runtime
 * gives it (torch's device properties: no "GPU-" or "MIG-"; either form is
 * taken, letters in any case), or -1. What a rank's process told of its
 * device (table thread_device) maps it exactly, whatever the device order:
 * NVML's indices need not follow CUDA's. A MIG instance's UUID maps to the
 * GPU it is part of where the run lists its instances. */
int tp_gpu_by_uuid(const tp_run *run, int64_t agent_id, const char *uuid);

/* One MIG instance of a list in meta gpu.N.mig ("MIG-uuid=bytes,..."). */
typedef struct tp_mig_entry {
    const char *uuid; /* into the list, without "MIG-"; uuid_len bytes */
    size_t uuid_len;
    double total_bytes; /* 0 where the entry gives none */
} tp_mig_entry;

/* The entry at *p into *e, moving *p to the next; false at the list's end. */
bool tp_mig_next(const char **p, tp_mig_entry *e);

#endif
