/* record_summary.c: the closing summary of `record`. */
#include "record/record_summary.h"

#include <string.h>

#include "analyze/summary.h"
#include "render/report.h"
#include "render/units.h"
#include "util/log.h"

/* Prints " label <stat> (unit)" for one series when it exists. */
static void figure(FILE *out, const tp_summary *s, const char *metric, const char *labels,
                   const char *what, bool use_max, bool *first)
{
    const tp_series_summary *m = tp_summary_find(s, 1, metric, labels);
    if (!m)
        return;
    char v[32];
    tp_format_value(v, sizeof v, m->series->unit, use_max ? m->stats.max : m->stats.mean);
    fprintf(out, "%s%s %s %s", *first ? "  " : ", ", what, v, use_max ? "max" : "mean");
    *first = false;
}

void tp_record_summary_print(FILE *out, const char *path, const tp_record_outcome *outcome)
{
    char err[512];
    tp_summary s;
    if (!tp_summary_load(path, &s, err, sizeof err)) {
        tp_warn("%s", err);
        return;
    }
    const tp_run *run = s.run;
    tp_run_facts f;
    tp_run_facts_get(run, &f);
    char dur[32];
    tp_format_duration(dur, sizeof dur, (double)outcome->duration_ns / 1e9);
    /* The command on one line, shortened: the report shows it whole. */
    char cmd[64];
    size_t n = 0;
    for (const char *p = f.command; *p && n + 4 < sizeof cmd; p++)
        cmd[n++] = (*p == '\n' || *p == '\t') ? ' ' : *p;
    if (strlen(f.command) > n)
        cmd[n++] = '.', cmd[n++] = '.', cmd[n++] = '.';
    cmd[n] = '\0';
    fprintf(out, "trainprof: recorded %s of `%s` into %s (exit status %d)\n", dur, cmd, path,
            outcome->exit_status);
    if (outcome->write_failed) {
        char held[32];
        tp_format_duration(held, sizeof held,
                           run->last_t_ns > 0 ? (double)run->last_t_ns / 1e9 : 0);
        fprintf(out, "  the file holds the first %s only: writing it failed (the warning above)\n",
                held);
    }
    bool first = true;
    figure(out, &s, "cpu_util_percent", "{}", "cpu", false, &first);
    figure(out, &s, "host_mem_used_bytes", "{}", "host memory", true, &first);
    figure(out, &s, "proc_rss_bytes", "{}", "command RSS", true, &first);
    if (!first)
        fputc('\n', out);
    for (size_t g = 0; g < run->ngpus; g++) {
        char labels[32], name[16];
        snprintf(labels, sizeof labels, "{\"gpu\":\"%d\"}", run->gpus[g].index);
        snprintf(name, sizeof name, "gpu%d", run->gpus[g].index);
        first = true;
        figure(out, &s, "gpu_util_percent", labels, name, false, &first);
        figure(out, &s, "gpu_mem_used_bytes", labels, "memory", true, &first);
        figure(out, &s, "gpu_energy_joules", labels, "energy", true, &first);
        if (!first)
            fputc('\n', out);
    }
    if (run->nunavailable)
        fprintf(out, "  %zu source%s unavailable (listed by the report)\n", run->nunavailable,
                run->nunavailable == 1 ? "" : "s");
    fprintf(out, "  see: trainprof report %s\n", path);
    tp_summary_close(&s);
}
