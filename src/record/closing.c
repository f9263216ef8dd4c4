/* closing.c: the closing summary of `record`. */
#include "record/closing.h"

#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/metric_catalog.h"
#include "analyze/summary.h"
#include "analyze/summary_save.h"
#include "render/report.h"
#include "render/units.h"
#include "util/log.h"
#include "util/utf8.h"
#include "core/run_keys.h"

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

/* The first line: "trainprof: recorded 5.2 s of `python train.py` into
 * run.db (exit status 0)", the command on one line, shortened (the report
 * shows it whole). */
static void first_line(FILE *out, const char *path, const tp_record_outcome *outcome)
{
    char dur[32];
    tp_format_duration(dur, sizeof dur, (double)outcome->duration_ns / 1e9);
    const char *command = outcome->command ? outcome->command : "";
    char cmd[64];
    size_t n = 0;
    for (const char *p = command; *p && n + 4 < sizeof cmd; p++)
        cmd[n++] = (*p == '\n' || *p == '\t') ? ' ' : *p;
    if (strlen(command) > n)
        cmd[n++] = '.', cmd[n++] = '.', cmd[n++] = '.';
    cmd[n] = '\0';
    fputs("trainprof: recorded ", out);
    fputs(dur, out);
    fputs(" of `", out);
    tp_text_write_safe(out, cmd);
    fputs("` into ", out);
    tp_text_write_safe(out, path);
    fprintf(out, " (exit status %d)\n", outcome->exit_status);
    if (outcome->lost && outcome->lost[0])
        fprintf(out, "  %s\n", outcome->lost);
    if (outcome->behind && outcome->behind[0])
        fprintf(out, "  %s\n", outcome->behind);
    if (outcome->wal_kept) { /* where writing failed, the line above says why */
        fputs(outcome->write_failed ? "  its last rows are in "
                                    : "  another process had the file open as the recording "
                                      "ended: its last rows are in ",
              out);
        tp_text_write_safe(out, path);
        fputs("-wal beside it; copy the two together\n", out);
    }
}

/* The closing summary from s, the run just stored: its path, the command's
 * duration and exit status, how much the file holds where writing it failed
 * or memory ran out, the headline figures (CPU, memory, each GPU) and how to
 * see the rest. */
static void closing_print(FILE *out, const char *path, const tp_summary *s,
                          const tp_record_outcome *outcome)
{
    const tp_run *run = s->run;
    first_line(out, path, outcome);
    if (outcome->write_failed) {
        char held[32];
        tp_format_duration(held, sizeof held,
                           run->last_t_ns > 0 ? (double)run->last_t_ns / 1e9 : 0);
        if (run->last_t_ns > 0)
            fprintf(out,
                    "  the file holds the first %s only: writing it failed (the warning "
                    "above)\n",
                    held);
        else
            fputs("  the file holds no measurements: writing it failed (the warning above)\n", out);
    }
    if (s->inv.facts.package_unloaded) /* said before the figures */
        tp_report_wrapped(out, "", TP_PACKAGE_UNLOADED_WORDS);
    bool first = true;
    figure(out, s, TP_METRIC_CPU_UTIL_PERCENT, "{}", "cpu", false, &first);
    figure(out, s, TP_METRIC_HOST_MEM_USED_BYTES, "{}", "host memory", true, &first);
    figure(out, s, TP_METRIC_PROC_RSS_BYTES, "{}", "command RSS", true, &first);
    if (!first)
        fputc('\n', out);
    for (size_t g = 0; g < run->ngpus; g++) {
        char labels[32], name[16];
        tp_labels_gpu(labels, sizeof labels, run->gpus[g].index);
        snprintf(name, sizeof name, "gpu%d", run->gpus[g].index);
        first = true;
        figure(out, s, TP_METRIC_GPU_UTIL_PERCENT, labels, name, false, &first);
        figure(out, s, TP_METRIC_GPU_MEM_USED_BYTES, labels, "memory", true, &first);
        figure(out, s, TP_METRIC_GPU_ENERGY_JOULES, labels, "energy", true, &first);
        if (!first)
            fputc('\n', out);
    }
    if (run->nunavailable)
        fprintf(out, "  %zu source%s unavailable (listed by the report)\n", run->nunavailable,
                run->nunavailable == 1 ? "" : "s");
    fprintf(out, "  see: trainprof report %s\n", path);
}

/* In the child: the summary tables, then the closing summary. Exits 0 when
 * the closing summary was printed (or not asked for). */
static _Noreturn void close_in_child(const char *path, const tp_record_outcome *outcome, bool quiet)
{
    char err[512];
    tp_summary s = {0};
    bool have = tp_summary_store_save_keeping(path, quiet ? NULL : &s, err, sizeof err);
    if (!have) { /* the file stays readable row by row: the summary from its rows */
        tp_warn("%s", err);
        have = !quiet && tp_summary_load(path, 0, &s, err, sizeof err);
        if (!have && !quiet)
            tp_warn("%s", err);
    }
    if (!quiet && have)
        closing_print(stderr, path, &s, outcome);
    if (!quiet && have)
        tp_summary_close(&s);
    fflush(stderr);
    _exit(quiet || have ? 0 : 1);
}

void tp_record_close(const char *path, const tp_record_outcome *outcome, bool quiet)
{
    fflush(stderr);
    pid_t child = fork();
    if (child == 0)
        close_in_child(path, outcome, quiet);
    int wstatus = 0;
    while (child > 0 && waitpid(child, &wstatus, 0) < 0 && errno == EINTR)
        ;
    if (child > 0 && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)
        return;
    /* no child (fork failed: no memory), or it died summarizing */
    if (!quiet)
        first_line(stderr, path, outcome);
    char why[64];
    if (child < 0)
        snprintf(why, sizeof why, "no memory left for it");
    else if (WIFSIGNALED(wstatus))
        snprintf(why, sizeof why, "summarizing was killed by signal %d", WTERMSIG(wstatus));
    else
        snprintf(why, sizeof why, "see above");
    fprintf(stderr, "  the run could not be summarized here (%s); `trainprof summarize ", why);
    tp_text_write_safe(stderr, path);
    fputs("` does it later\n", stderr);
}
