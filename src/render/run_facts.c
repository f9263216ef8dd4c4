/* run_facts.c: the run's facts (analyze/run_facts.h) said: why a run is
 * incomplete, and its hosts grouped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/report.h"
#include "render/units.h"
#include "util/utf8.h"

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

void tp_summary_source_note(FILE *err, const char *who, const tp_run_inventory *inv)
{
    if (!inv->summary_foreign)
        return;
    fprintf(err, "trainprof %s: ", who);
    tp_text_write_safe(err, inv->path);
    if (inv->summary_only)
        fputs(" holds summaries another trainprof made and none of the rows to make them again: "
              "its figures and verdicts are that one's (`trainprof summarize` of the node "
              "files stores this one's)\n",
              err);
    else {
        fputs(" holds a summary another trainprof made: its figures and verdicts are made again "
              "from its rows (`trainprof summarize ",
              err);
        tp_text_write_safe(err, inv->path);
        fputs("` stores them, for a faster read)\n", err);
    }
}

/* What sets agent_id's host apart from others, as one line. */
static void host_description(const tp_host_facts *h, char *buf, size_t cap)
{
    const char *kernel = h->kernel, *cpus = h->cpu_count, *model = h->cpu_model;
    const char *mem = h->mem_total_bytes, *cpu_limit = h->cgroup_cpu_limit_cores;
    const char *mem_limit = h->cgroup_memory_limit_bytes;
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

size_t tp_host_groups(const tp_run_inventory *inv, tp_host_group *out, size_t cap, size_t *unlisted)
{
    enum { NAMED = 4 }; /* agents named per group; more are counted */
    size_t n = 0;
    *unlisted = 0;
    for (size_t a = 0; a < inv->nagents; a++) {
        char desc[sizeof out->description];
        host_description(&inv->hosts[a], desc, sizeof desc);
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
                     inv->agents[a].name);
        grp->count++;
    }
    for (size_t g = 0; g < n; g++) {
        tp_host_group *grp = &out[g];
        size_t len = strlen(grp->agents);
        if (grp->count == inv->nagents && grp->count > NAMED)
            snprintf(grp->agents, sizeof grp->agents, "all %zu agents", grp->count);
        else if (grp->count > NAMED)
            snprintf(grp->agents + len, sizeof grp->agents - len, " and %zu more",
                     grp->count - NAMED);
    }
    return n;
}
