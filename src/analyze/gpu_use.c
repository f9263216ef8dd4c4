/* gpu_use.c: the job's GPUs, by UUID and by NVML's process lists. */
#include "analyze/gpu_use.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/rank_gpu.h"
#include "store/reader_stream.h"
#include "util/oom.h"

/* Whether the comma-separated pid list names a pid of one of threads on
 * agent_id. */
static bool lists_ours(const char *list, const tp_run_thread *threads, size_t n, int64_t agent_id)
{
    for (const char *p = list; p && *p;) {
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p)
            return false; /* not a list of pids: no evidence */
        for (size_t i = 0; i < n; i++)
            if (threads[i].agent_id == agent_id && threads[i].pid == pid)
                return true;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return false;
    }
    return false;
}

int8_t *tp_gpus_used(tp_run *run)
{
    if (!run->ngpus)
        return NULL;
    int8_t *out = tp_xcalloc(run->ngpus, sizeof *out);
    tp_run_thread *threads = NULL;
    size_t n = 0;
    char err[256];
    if (!tp_run_threads(run, &threads, &n, err, sizeof err))
        n = 0;
    for (size_t g = 0; g < run->ngpus; g++) {
        const tp_run_gpu *gpu = &run->gpus[g];
        bool evidence = false, used = false;
        for (size_t i = 0; i < n; i++) {
            if (threads[i].agent_id != gpu->agent_id || !threads[i].device_uuid[0])
                continue;
            evidence = true;
            used = used || tp_gpu_by_uuid(run, gpu->agent_id, threads[i].device_uuid) == gpu->index;
        }
        for (size_t o = 0; o < run->ngpus; o++) { /* any process list on the agent */
            char key[48];
            snprintf(key, sizeof key, "gpu.%d.processes", run->gpus[o].index);
            const char *list = run->gpus[o].agent_id == gpu->agent_id
                                   ? tp_run_agent_meta_get(run, gpu->agent_id, key)
                                   : NULL;
            if (!list)
                continue;
            evidence = true;
            if (o == g)
                used = used || lists_ours(list, threads, n, gpu->agent_id);
        }
        out[g] = !evidence ? TP_GPU_USE_UNKNOWN : used ? TP_GPU_USED : TP_GPU_NOT_USED;
    }
    free(threads);
    return out;
}
