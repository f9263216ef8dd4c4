/* rank_gpu.c: a rank's GPU from its CUDA_VISIBLE_DEVICES and local rank. */
#include "analyze/rank_gpu.h"
#include "core/run_keys.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_VISIBLE 64

/* uuid without its "GPU-" or "MIG-". */
static const char *bare_uuid(const char *uuid)
{
    return strncmp(uuid, "GPU-", 4) == 0 || strncmp(uuid, "MIG-", 4) == 0 ? uuid + 4 : uuid;
}

bool tp_mig_next(const char **p, tp_mig_entry *e)
{
    const char *s = *p;
    if (!*s)
        return false;
    const char *end = strchr(s, ','), *eq = strchr(s, '=');
    if (!end)
        end = s + strlen(s);
    if (!eq || eq > end)
        eq = end;
    e->uuid = bare_uuid(s);
    e->uuid_len = e->uuid < eq ? (size_t)(eq - e->uuid) : 0;
    e->total_bytes = eq < end ? strtod(eq + 1, NULL) : 0;
    *p = *end ? end + 1 : end;
    return true;
}

/* The GPU of agent_id one of whose MIG instances (meta gpu.N.mig:
 * "MIG-uuid=bytes,...") has the UUID want (bare, len bytes), or -1. */
static int mig_parent(const tp_run *run, int64_t agent_id, const char *want, size_t len)
{
    for (size_t g = 0; g < run->ngpus; g++) {
        const tp_run_gpu *gpu = &run->gpus[g];
        char key[48];
        tp_meta_key_gpu(key, sizeof key, gpu->index, TP_META_GPU_MIG);
        const char *list =
            gpu->agent_id == agent_id ? tp_run_agent_meta_get(run, agent_id, key) : NULL;
        tp_mig_entry e;
        for (const char *p = list; list && tp_mig_next(&p, &e);)
            if (e.uuid_len == len && strncasecmp(e.uuid, want, len) == 0)
                return gpu->index;
    }
    return -1;
}

/* The index of the agent's GPU that one entry of CUDA_VISIBLE_DEVICES names
 * ([s, s + len)), or -1: none, an unknown or ambiguous UUID prefix, a MIG
 * instance, or not an entry CUDA would take. */
static int entry_gpu(const tp_run *run, int64_t agent_id, const char *s, size_t len)
{
    if (len == 0)
        return -1;
    if (isdigit((unsigned char)s[0])) {
        int index = 0;
        for (size_t i = 0; i < len; i++) {
            if (!isdigit((unsigned char)s[i]) || index > 100000)
                return -1;
            index = index * 10 + (s[i] - '0');
        }
        return index;
    }
    if (len >= 5 && strncmp(s, "MIG-", 4) == 0) /* an instance: the GPU it is part of */
        return mig_parent(run, agent_id, s + 4, len - 4);
    if (len < 5 || strncmp(s, "GPU-", 4) != 0) /* nothing CUDA knows */
        return -1;
    int found = -1;
    for (size_t g = 0; g < run->ngpus; g++) {
        const tp_run_gpu *gpu = &run->gpus[g];
        if (gpu->agent_id != agent_id || !gpu->uuid || strncmp(gpu->uuid, s, len) != 0)
            continue;
        if (found >= 0)
            return -1; /* a prefix of two UUIDs: CUDA refuses it too */
        found = gpu->index;
    }
    return found;
}

int tp_gpu_by_uuid(const tp_run *run, int64_t agent_id, const char *uuid)
{
    if (!uuid || !*uuid)
        return -1;
    const char *want = bare_uuid(uuid);
    for (size_t g = 0; g < run->ngpus; g++) {
        const tp_run_gpu *gpu = &run->gpus[g];
        if (gpu->agent_id == agent_id && gpu->uuid && strcasecmp(bare_uuid(gpu->uuid), want) == 0)
            return gpu->index;
    }
    return mig_parent(run, agent_id, want, strlen(want));
}

int tp_rank_gpu(const tp_run *run, int64_t agent_id, bool visible_set, const char *visible,
                int local_rank)
{
    if (!visible_set)
        return local_rank;
    /* split at commas, each entry trimmed; CUDA stops at the first bad one */
    const char *start[MAX_VISIBLE];
    size_t len[MAX_VISIBLE], n = 0;
    for (const char *p = visible; *p && n < MAX_VISIBLE;) {
        while (*p == ' ')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        size_t l = (size_t)(e - p);
        while (l && p[l - 1] == ' ')
            l--;
        start[n] = p, len[n] = l, n++;
        p = *e ? e + 1 : e;
    }
    int gpu[MAX_VISIBLE]; /* the GPUs the process sees, device 0 first */
    size_t seen = 0;
    while (seen < n && (gpu[seen] = entry_gpu(run, agent_id, start[seen], len[seen])) >= 0)
        seen++;
    size_t pick = seen == 1 ? 0 : (local_rank >= 0 ? (size_t)local_rank : seen);
    return pick < seen ? gpu[pick] : -1;
}
