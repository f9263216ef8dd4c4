/* host_info.h: the run's description of its machine and job. */
#ifndef TP_COLLECT_HOST_INFO_H
#define TP_COLLECT_HOST_INFO_H

#include "collect/collector.h"

/* Records host name, agent name (agent, or the host name when NULL), kernel,
 * CPU model and count, memory size, and the job environment variables
 * (CUDA_VISIBLE_DEVICES, RANK, SLURM_JOB_ID, ...) as run metadata. */
void tp_host_info_record(const tp_collect_env *env, const char *agent);

#endif
