/* gpu_use.c: the job's GPUs, by UUID and by NVML's process lists. */
#include "analyze/gpu_use.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/rank_gpu.h"
#include "store/reader_stream.h"
#include "util/oom.h"
#include "core/run_keys.h"

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

static int thread_by_agent(const void *a, const void *b)
{
    const tp_run_thread *x = a, *y = b;
    return (x->agent_id > y->agent_id) - (x->agent_id < y->agent_id);
}

/* A GPU's place in run->gpus, ordered by agent (then by place). */
typedef struct gpu_place {
    int64_t agent_id;
    size_t at;
} gpu_place;

static int gpu_by_agent(const void *a, const void *b)
{
    const gpu_place *x = a, *y = b;
    if (x->agent_id != y->agent_id)
        return (x->agent_id > y->agent_id) - (x->agent_id < y->agent_id);
    return (x->at > y->at) - (x->at < y->at);
}

/* Whether gpu (of the agent whose threads are threads[0..n) and whose GPUs
 * are run->gpus[order[0..ngpus)]) is used, by UUID and process lists. */
static int8_t gpu_use(tp_run *run, const tp_run_gpu *gpu, const tp_run_thread *threads, size_t n,
                      const gpu_place *order, size_t ngpus)
{
    bool evidence = false, used = false;
    for (size_t i = 0; i < n; i++) {
        if (!threads[i].device_uuid[0])
            continue;
        evidence = true;
        used = used || tp_gpu_by_uuid(run, gpu->agent_id, threads[i].device_uuid) == gpu->index;
    }
    for (size_t k = 0; k < ngpus; k++) { /* any process list on the agent */
        const tp_run_gpu *other = &run->gpus[order[k].at];
        char key[48];
        tp_meta_key_gpu(key, sizeof key, other->index, TP_META_GPU_PROCESSES);
        const char *list = tp_run_agent_meta_get(run, gpu->agent_id, key);
        int listed = list ? lists_ours(list, threads, n, gpu->agent_id) : -1;
        if (listed < 0)
            continue;
        evidence = true;
        if (other == gpu)
            used = used || listed == 1;
    }
    return !evidence ? TP_GPU_USE_UNKNOWN : used ? TP_GPU_USED : TP_GPU_NOT_USED;
}

/* Agent by agent (threads and GPUs each sorted by agent once), so that a
 * fleet costs its GPUs times an agent's threads and GPUs, not times every
 * thread and GPU of the job. */
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
    if (n > 1)
        qsort(threads, n, sizeof *threads, thread_by_agent);
    gpu_place *order = tp_xmalloc(run->ngpus * sizeof *order);
    for (size_t g = 0; g < run->ngpus; g++)
        order[g] = (gpu_place){run->gpus[g].agent_id, g};
    qsort(order, run->ngpus, sizeof *order, gpu_by_agent);
    size_t t0 = 0;
    for (size_t g0 = 0, g1; g0 < run->ngpus; g0 = g1) {
        int64_t agent = order[g0].agent_id;
        for (g1 = g0; g1 < run->ngpus && order[g1].agent_id == agent;)
            g1++;
        while (t0 < n && threads[t0].agent_id < agent)
            t0++;
        size_t t1 = t0;
        while (t1 < n && threads[t1].agent_id == agent)
            t1++;
        for (size_t k = g0; k < g1; k++)
            out[order[k].at] = gpu_use(run, &run->gpus[order[k].at], t1 > t0 ? threads + t0 : NULL,
                                       t1 - t0, order + g0, g1 - g0);
    }
    free(order);
    free(threads);
    return out;
}
