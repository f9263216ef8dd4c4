/* run_facts.c: see run_facts.h. */
#include "analyze/run_facts.h"

#include <stdlib.h>
#include <string.h>

#include "core/run_keys.h"
#include "util/json_read.h"

static bool finished(const char *status) { return status && strcmp(status, "finished") == 0; }

/* Puts when and why writing the run file failed (meta write_failed_ns and
 * write_failed, as the recorder stores them; shift_s moves it onto the run's time
 * line) into f; -1 when it didn't. */
static void write_failure(const char *at_ns, const char *why, double shift_s, tp_run_facts *f)
{
    f->write_failed_s = at_ns ? (double)strtoll(at_ns, NULL, 10) / 1e9 + shift_s : -1;
    f->write_failed = at_ns ? (why ? why : "unknown") : NULL;
}

double tp_run_agent_shift_s(const tp_run *run, int64_t agent_id)
{
    const char *start = tp_run_agent_meta_get(run, agent_id, TP_META_START_WALL_NS);
    const char *run_start = tp_run_meta_get(run, TP_META_START_WALL_NS);
    if (!start || !run_start)
        return 0;
    return (double)(strtoll(start, NULL, 10) - strtoll(run_start, NULL, 10)) / 1e9;
}

/* tp_json_string_array's callback: decides, at the command's program (the
 * first word past `env` and NAME=VALUE words), whether it runs Python. */
typedef struct program_scan {
    bool decided, python;
} program_scan;

static void scan_word(void *ctx, const char *word)
{
    program_scan *p = ctx;
    if (p->decided)
        return;
    const char *eq = strchr(word, '='), *slash = strchr(word, '/');
    if (strcmp(word, "env") == 0 || (eq && eq != word && (!slash || eq < slash)))
        return; /* env, or an assignment env hands on */
    p->decided = true;
    const char *base = slash ? strrchr(word, '/') + 1 : word;
    static const char *const launchers[] = {"torchrun", "accelerate", "deepspeed"};
    p->python = strncmp(base, "python", 6) == 0 || strncmp(base, "pypy", 4) == 0;
    for (size_t i = 0; i < sizeof launchers / sizeof *launchers; i++)
        p->python |= strcmp(base, launchers[i]) == 0;
}

void tp_run_facts_get(const tp_run *run, tp_run_facts *f)
{
    const char *v;
    write_failure(tp_run_meta_get(run, TP_META_WRITE_FAILED_NS),
                  tp_run_meta_get(run, TP_META_WRITE_FAILED), 0, f);
    f->complete = finished(tp_run_meta_get(run, TP_META_STATUS)) && f->write_failed_s < 0;
    if (run->settings.duration_ns >= 0)
        f->duration_s = (double)run->settings.duration_ns / 1e9;
    else
        f->duration_s = run->last_t_ns > 0 ? (double)run->last_t_ns / 1e9 : 0;
    f->exit_status = run->settings.exit_status;
    f->exit_signal = tp_run_meta_get(run, TP_META_EXIT_SIGNAL);
    f->command = run->settings.command;
    f->failed_agent = NULL;
    f->start_wall = tp_run_meta_get(run, TP_META_START_WALL);
    f->argv = *run->settings.argv ? run->settings.argv : NULL;
    program_scan scan = {false, false};
    if (f->argv)
        tp_json_string_array(f->argv, scan_word, &scan);
    const char *hz = tp_run_meta_get(run, TP_META_STACKS_HZ);
    f->package_unloaded = scan.python && hz && atof(hz) > 0 && run->schema_version >= 2 &&
                          tp_run_thread_rows(run) == 0;
    f->host = tp_run_meta_get(run, TP_META_HOST);
    f->agent = tp_run_meta_get(run, TP_META_AGENT);
    f->trainprof_version = *run->settings.version ? run->settings.version : NULL;
    f->interval_s = tp_run_meta_get(run, TP_META_INTERVAL_S);
    f->merged_from = tp_run_meta_get(run, TP_META_MERGED_FROM);
    f->merge_anchor_ns = tp_run_meta_get(run, TP_META_MERGE_ANCHOR_UNCERTAINTY_NS);
    if (!run->nagent_meta)
        return; /* one node, or a merge that kept only the first node's facts */
    /* a merged run: complete when every node was, failed when any failed;
     * its own meta (the first node's) says nothing the nodes' don't */
    write_failure(NULL, NULL, 0, f);
    const tp_run_agent *stopped = NULL, *failed = NULL;
    for (size_t a = 0; a < run->nagents; a++) {
        const tp_run_agent *ag = &run->agents[a];
        const char *at = tp_run_agent_meta_get(run, ag->id, TP_META_WRITE_FAILED_NS);
        if (!stopped && (at || !finished(tp_run_agent_meta_get(run, ag->id, TP_META_STATUS)))) {
            stopped = ag;
            write_failure(at, tp_run_agent_meta_get(run, ag->id, TP_META_WRITE_FAILED),
                          tp_run_agent_shift_s(run, ag->id), f);
        }
        v = tp_run_agent_meta_get(run, ag->id, TP_META_EXIT_STATUS);
        if (!failed && v && strtoll(v, NULL, 10) != 0)
            failed = ag;
    }
    f->complete = !stopped;
    if (failed) {
        f->exit_status =
            strtoll(tp_run_agent_meta_get(run, failed->id, TP_META_EXIT_STATUS), NULL, 10);
        f->exit_signal = tp_run_agent_meta_get(run, failed->id, TP_META_EXIT_SIGNAL);
    }
    f->failed_agent = stopped ? stopped->name : failed ? failed->name : NULL;
}

void tp_host_facts_of(const tp_run *run, int64_t agent_id, tp_host_facts *h)
{
    h->host = tp_run_agent_meta_get(run, agent_id, TP_META_HOST);
    h->kernel = tp_run_agent_meta_get(run, agent_id, TP_META_KERNEL);
    h->cpu_count = tp_run_agent_meta_get(run, agent_id, TP_META_CPU_COUNT);
    h->cpu_model = tp_run_agent_meta_get(run, agent_id, TP_META_CPU_MODEL);
    h->mem_total_bytes = tp_run_agent_meta_get(run, agent_id, TP_META_MEM_TOTAL_BYTES);
    h->cgroup_version = tp_run_agent_meta_get(run, agent_id, TP_META_CGROUP_VERSION);
    h->cgroup_cpu_limit_cores =
        tp_run_agent_meta_get(run, agent_id, TP_META_CGROUP_CPU_LIMIT_CORES);
    h->cgroup_memory_limit_bytes =
        tp_run_agent_meta_get(run, agent_id, TP_META_CGROUP_MEMORY_LIMIT_BYTES);
}

int64_t tp_run_start_wall_ns(const tp_run *run)
{
    const char *start = tp_run_meta_get(run, TP_META_START_WALL_NS);
    return start ? (int64_t)strtoll(start, NULL, 10) : -1;
}
