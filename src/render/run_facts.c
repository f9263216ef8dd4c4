/* run_facts.c: the facts about a run that every renderer shows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/report.h"
#include "render/units.h"
#include "core/run_keys.h"

static bool finished(const char *status) { return status && strcmp(status, "finished") == 0; }

/* Puts when and why writing the run file failed (meta write_failed_ns and
 * write_failed, as the recorder stores them; shift_s moves it onto the run's time
 * line) into f; -1 when it didn't. */
static void write_failure(const char *at_ns, const char *why, double shift_s, tp_run_facts *f)
{
    f->write_failed_s = at_ns ? (double)strtoll(at_ns, NULL, 10) / 1e9 + shift_s : -1;
    f->write_failed = at_ns ? (why ? why : "unknown") : NULL;
}

/* Where agent_id's own times sit on a merged run's time line: its start's
 * distance from the run's (both wall clock, as merge shifts them), in s. */
static double agent_shift_s(const tp_run *run, int64_t agent_id)
{
    const char *start = tp_run_agent_meta_get(run, agent_id, TP_META_START_WALL_NS);
    const char *run_start = tp_run_meta_get(run, TP_META_START_WALL_NS);
    if (!start || !run_start)
        return 0;
    return (double)(strtoll(start, NULL, 10) - strtoll(run_start, NULL, 10)) / 1e9;
}

void tp_run_facts_get(const tp_run *run, tp_run_facts *f)
{
    const char *v;
    write_failure(tp_run_meta_get(run, "write_failed_ns"), tp_run_meta_get(run, "write_failed"), 0,
                  f);
    f->complete = finished(tp_run_meta_get(run, "status")) && f->write_failed_s < 0;
    v = tp_run_meta_get(run, "duration_ns");
    if (v)
        f->duration_s = (double)strtoll(v, NULL, 10) / 1e9;
    else
        f->duration_s = run->last_t_ns > 0 ? (double)run->last_t_ns / 1e9 : 0;
    v = tp_run_meta_get(run, TP_META_EXIT_STATUS);
    f->exit_status = v ? strtoll(v, NULL, 10) : -1;
    f->exit_signal = tp_run_meta_get(run, "exit_signal");
    v = tp_run_meta_get(run, TP_META_COMMAND);
    f->command = v ? v : "";
    f->failed_agent = NULL;
    if (!run->nagent_meta)
        return; /* one node, or a merge that kept only the first node's facts */
    /* a merged run: complete when every node was, failed when any failed;
     * its own meta (the first node's) says nothing the nodes' don't */
    write_failure(NULL, NULL, 0, f);
    const tp_run_agent *stopped = NULL, *failed = NULL;
    for (size_t a = 0; a < run->nagents; a++) {
        const tp_run_agent *ag = &run->agents[a];
        const char *at = tp_run_agent_meta_get(run, ag->id, "write_failed_ns");
        if (!stopped && (at || !finished(tp_run_agent_meta_get(run, ag->id, "status")))) {
            stopped = ag;
            write_failure(at, tp_run_agent_meta_get(run, ag->id, "write_failed"),
                          agent_shift_s(run, ag->id), f);
        }
        v = tp_run_agent_meta_get(run, ag->id, TP_META_EXIT_STATUS);
        if (!failed && v && strtoll(v, NULL, 10) != 0)
            failed = ag;
    }
    f->complete = !stopped;
    if (failed) {
        f->exit_status =
            strtoll(tp_run_agent_meta_get(run, failed->id, TP_META_EXIT_STATUS), NULL, 10);
        f->exit_signal = tp_run_agent_meta_get(run, failed->id, "exit_signal");
    }
    f->failed_agent = stopped ? stopped->name : failed ? failed->name : NULL;
}

void tp_run_facts_incomplete(const tp_run_facts *f, char *buf, size_t cap)
{
    char who[64] = "";
    if (f->failed_agent)
        snprintf(who, sizeof who, ", on %.40s", f->failed_agent);
    if (f->write_failed_s < 0) {
        snprintf(buf, cap, "the recorder stopped before the command ended%s", who);
        return;
    }
    char at[32];
    tp_format_duration(at, sizeof at, f->write_failed_s);
    int len = snprintf(buf, cap, "the run file was not written after %s%s (%s)", at, who,
                       f->write_failed);
    if (f->exit_status >= 0 && len > 0 && (size_t)len < cap)
        snprintf(buf + len, cap - (size_t)len, "; the command went on to exit status %lld",
                 f->exit_status);
}

/* What sets agent_id's host apart from others, as one line. */
static void host_description(const tp_run *run, int64_t agent_id, char *buf, size_t cap)
{
    const char *kernel = tp_run_agent_meta_get(run, agent_id, "kernel");
    const char *cpus = tp_run_agent_meta_get(run, agent_id, TP_META_CPU_COUNT);
    const char *model = tp_run_agent_meta_get(run, agent_id, "cpu_model");
    const char *mem = tp_run_agent_meta_get(run, agent_id, TP_META_MEM_TOTAL_BYTES);
    const char *cpu_limit = tp_run_agent_meta_get(run, agent_id, TP_META_CGROUP_CPU_LIMIT_CORES);
    const char *mem_limit = tp_run_agent_meta_get(run, agent_id, TP_META_CGROUP_MEMORY_LIMIT_BYTES);
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
