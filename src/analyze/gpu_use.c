/* gpu_use.c: the job's GPUs, by UUID and by NVML's process lists. */
#include "analyze/gpu_use.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/rank_gpu.h"
#include "store/reader_stream.h"
#include "util/oom.h"

/* 1 when the comma-separated pid list names a pid of one of threads on
 * agent_id, 0 when it names none, -1 when it is no list of pids (a file
 * written by something else: no evidence either way). */
static int lists_ours(const char *list, const tp_run_thread *threads, size_t n, int64_t agent_id)
{
    int ours = 0;
    for (const char *p = list; *p;) {
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p || (*end && *end != ','))
            return -1;
        for (size_t i = 0; i < n; i++)
            ours |= threads[i].agent_id == agent_id && threads[i].pid == pid;
        p = *end == ',' ? end + 1 : end;
    }
    return ours;
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
            int listed = list ? lists_ours(list, threads, n, gpu->agent_id) : -1;
            if (listed < 0)
                continue;
            evidence = true;
            if (o == g)
                used = used || listed == 1;
        }
        out[g] = !evidence ? TP_GPU_USE_UNKNOWN : used ? TP_GPU_USED : TP_GPU_NOT_USED;
    }
    free(threads);
    return out;
}
