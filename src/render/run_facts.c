/* run_facts.c: the facts about a run that every renderer shows. */
#include <stdlib.h>
#include <string.h>

#include "render/report.h"
#include "render/units.h"

static bool finished(const char *status) { return status && strcmp(status, "finished") == 0; }

void tp_run_facts_get(const tp_run *run, tp_run_facts *f)
{
    const char *v;
    f->complete = finished(tp_run_meta_get(run, "status"));
    v = tp_run_meta_get(run, "duration_ns");
    if (v)
        f->duration_s = (double)strtoll(v, NULL, 10) / 1e9;
    else
        f->duration_s = run->last_t_ns > 0 ? (double)run->last_t_ns / 1e9 : 0;
    v = tp_run_meta_get(run, "exit_status");
    f->exit_status = v ? strtoll(v, NULL, 10) : -1;
    f->exit_signal = tp_run_meta_get(run, "exit_signal");
    v = tp_run_meta_get(run, "command");
    f->command = v ? v : "";
    f->failed_agent = NULL;
    if (!run->nagent_meta)
        return; /* one node, or a merge that kept only the first node's facts */
    /* a merged run: complete when every node was, failed when any failed */
    const tp_run_agent *stopped = NULL, *failed = NULL;
    for (size_t a = 0; a < run->nagents; a++) {
        const tp_run_agent *ag = &run->agents[a];
        if (!stopped && !finished(tp_run_agent_meta_get(run, ag->id, "status")))
            stopped = ag;
        v = tp_run_agent_meta_get(run, ag->id, "exit_status");
        if (!failed && v && strtoll(v, NULL, 10) != 0)
            failed = ag;
    }
    f->complete = !stopped;
    if (failed) {
        f->exit_status = strtoll(tp_run_agent_meta_get(run, failed->id, "exit_status"), NULL, 10);
        f->exit_signal = tp_run_agent_meta_get(run, failed->id, "exit_signal");
    }
    f->failed_agent = stopped ? stopped->name : failed ? failed->name : NULL;
}

/* What sets agent_id's host apart from others, as one line. */
static void host_description(const tp_run *run, int64_t agent_id, char *buf, size_t cap)
{
    const char *kernel = tp_run_agent_meta_get(run, agent_id, "kernel");
    const char *cpus = tp_run_agent_meta_get(run, agent_id, "cpu_count");
    const char *model = tp_run_agent_meta_get(run, agent_id, "cpu_model");
    const char *mem = tp_run_agent_meta_get(run, agent_id, "mem_total_bytes");
    const char *cpu_limit = tp_run_agent_meta_get(run, agent_id, "cgroup_cpu_limit_cores");
    const char *mem_limit = tp_run_agent_meta_get(run, agent_id, "cgroup_memory_limit_bytes");
    char memory[32] = "?", limits[96] = "";
    if (mem)
        tp_format_value(memory, sizeof memory, "bytes", strtod(mem, NULL));
    size_t len = 0;
    if (cpu_limit && strcmp(cpu_limit, "none") != 0)
        len += (size_t)snprintf(limits, sizeof limits, ", cgroup CPU limit %.20s cores", cpu_limit);
    if (mem_limit && strcmp(mem_limit, "none") != 0 && len < sizeof limits) {
        char m[32];
        tp_format_value(m, sizeof m, "bytes", strtod(mem_limit, NULL));
        snprintf(limits + len, sizeof limits - len, ", cgroup memory limit %s", m);
    }
    snprintf(buf, cap, "%.100s, %.12s CPUs (%.100s), %s memory%s", kernel ? kernel : "?",
             cpus ? cpus : "?", model ? model : "?", memory, limits);
}

size_t tp_host_groups(const tp_run *run, tp_host_group *out, size_t cap, size_t *unlisted)
{
    enum { NAMED = 4 }; /* agents named per group; more are counted */
    size_t n = 0;
    *unlisted = 0;
    for (size_t a = 0; a < run->nagents; a++) {
        char desc[sizeof out->description];
        host_description(run, run->agents[a].id, desc, sizeof desc);
        size_t g = 0;
        while (g < n && strcmp(out[g].description, desc) != 0)
            g++;
        if (g == cap) {
            ++*unlisted;
            continue;
        }
        tp_host_group *grp = &out[g];
        if (g == n) {
            n++;
            memcpy(grp->description, desc, sizeof desc);
            grp->agents[0] = '\0';
            grp->count = 0;
        }
        size_t len = strlen(grp->agents);
        if (grp->count < NAMED)
            snprintf(grp->agents + len, sizeof grp->agents - len, "%s%.40s", grp->count ? ", " : "",
                     run->agents[a].name);
        grp->count++;
    }
    for (size_t g = 0; g < n; g++) {
        tp_host_group *grp = &out[g];
        size_t len = strlen(grp->agents);
        if (grp->count == run->nagents && grp->count > NAMED)
            snprintf(grp->agents, sizeof grp->agents, "all %zu agents", grp->count);
        else if (grp->count > NAMED)
            snprintf(grp->agents + len, sizeof grp->agents - len, " and %zu more",
                     grp->count - NAMED);
    }
    return n;
}
