/* cmd_merge.c: `trainprof merge`: one run file from the files of several nodes. */
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "analyze/fleet_plots.h"
#include "store/merge.h"
#include "util/atomic_file.h"
#include "util/options.h"
#include "util/log.h"

static const char usage[] =
    "usage: trainprof merge -o OUT RUN_FILE RUN_FILE... [--summary] [--force] [-q]\n"
    "\n"
    "Joins the run files of the nodes of one job (record -o runs/run-%h.db) into one:\n"
    "each file becomes an agent, times are aligned through the wall-clock anchors\n"
    "recorded at each start. Files of different commands or jobs are refused.\n"
    "\n"
    "With --summary, OUT holds only what `report`, `html` and `compare` read (the\n"
    "summaries and plots each recorder stored), to keep or send: for 8 node-days,\n"
    "30 MB in under a second instead of 6.7 GB in 90 s. Past 16 files it keeps the\n"
    "metrics' envelopes across the nodes (lowest, median, highest), not each node's\n"
    "points, and each rank's steps in at most 60 groups: 1,024 one-hour nodes in\n"
    "81 MB. `export` (trace, CSV) and `summarize --force` need the node files.\n";

/* The progress of a merge of many node files (minutes for many node-days):
 * on a terminal one line, rewritten after each input, with the files done,
 * the rate and the time left; elsewhere (a log) a line at each tenth. */
typedef struct merge_progress {
    struct timespec t0;
    bool tty;
    size_t said; /* tenths said (not on a terminal) */
} merge_progress;

static void print_progress(void *ctx, size_t done, size_t n, const char *input, bool all_rows)
{
    (void)all_rows, (void)input;
    merge_progress *p = ctx;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double s = (double)(now.tv_sec - p->t0.tv_sec) + (double)(now.tv_nsec - p->t0.tv_nsec) / 1e9;
    double rate = s > 0 ? (double)done / s : 0, left = rate > 0 ? (double)(n - done) / rate : 0;
    if (p->tty) {
        fprintf(stderr,
                "\rtrainprof: merge: %zu of %zu files, %.1f files/s, %.0f s so far, about %.0f s "
                "left\033[K%s",
                done, n, rate, s, left, done == n ? "\n" : "");
        return;
    }
    size_t tenth = n ? done * 10 / n : 10;
    if (tenth > p->said || done == n) {
        p->said = tenth;
        char rest[48] = "";
        if (done != n)
            snprintf(rest, sizeof rest, ", about %.0f s left", left);
        fprintf(stderr, "trainprof: merge: %zu of %zu files, %.1f files/s, %.1f s so far%s\n", done,
                n, rate, s, rest);
    }
}

int cmd_merge(int argc, char **argv)
{
    const char *output = NULL;
    bool force = false, quiet = false, summary = false;
    const tp_option options[] = {
        TP_STRING('o', "output", "OUT", "the merged run file (must not exist unless --force)",
                  &output),
        TP_FLAG(0, "summary", "summaries and plots only (each input must hold its own)", &summary),
        TP_FLAG(0, "force", "overwrite OUT, and merge files that don't seem to belong together",
                &force),
        TP_FLAG('q', "quiet", "no progress lines, only errors", &quiet),
    };
    const tp_command cmd = {
        .name = "merge", .usage = usage, TP_OPTION_TABLE(options), .max_operands = -1};
    int first;
    int parsed = tp_options_parse(&cmd, argc, argv, &first);
    if (parsed != TP_OPTIONS_OK)
        return parsed;
    if (!output || argc - first < 2) {
        tp_error("merge: give -o OUT and two or more run files (see trainprof merge --help)");
        return 2;
    }
    int refused = tp_output_refused("merge", output, force, (const char *const *)argv + first,
                                    (size_t)(argc - first));
    if (refused)
        return refused;
    char err[1024];
    merge_progress progress = {.tty = isatty(STDERR_FILENO)};
    clock_gettime(CLOCK_MONOTONIC, &progress.t0);
    size_t n = (size_t)(argc - first);
    bool envelopes = summary && n > TP_FLEET_PLOTS_MAX; /* not every node's points */
    tp_merge_options opt = {.force = force,
                            .durable = true,
                            .summary_only = summary,
                            .plots = summary && !envelopes,
                            .rows_refused = summary,
                            .step_groups_max = envelopes ? TP_FLEET_STEP_GROUPS : 0,
                            .progress = quiet ? NULL : print_progress,
                            .progress_ctx = &progress};
    if (!tp_merge_runs(output, (const char *const *)argv + first, (size_t)(argc - first), &opt, err,
                       sizeof err)) {
        tp_error("%s", err);
        return 2;
    }
    if (envelopes && !quiet)
        fprintf(stderr, "trainprof: merge: the metrics' envelopes across the %zu nodes...\n", n);
    if (envelopes &&
        !tp_fleet_plots_store(output, (const char *const *)argv + first, n, err, sizeof err)) {
        unlink(output); /* half a fleet summary: none */
        tp_error("merge: %s", err);
        return 1;
    }
    if (!quiet)
        fprintf(stderr, "trainprof: merged %d run files into %s%s\n", argc - first, output,
                !summary    ? ""
                : envelopes ? " (summaries, and the metrics' envelopes across the nodes)"
                            : " (summaries and plots only)");
    return 0;
}
