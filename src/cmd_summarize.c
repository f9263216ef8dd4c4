/* cmd_summarize.c: `trainprof summarize`: store the summary a run file lacks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analyze/summary_save.h"
#include "store/summary_tables.h"
#include "commands.h"
#include "store/reader.h"
#include "store/schema.h"
#include "util/options.h"
#include "util/log.h"
#include "core/run_keys.h"

static const char usage[] =
    "usage: trainprof summarize [--force] RUN_FILE...\n"
    "\n"
    "Stores in each run file the summary that `record` stores when the command\n"
    "ends (the summary_* tables), where it is missing: a recording whose\n"
    "recorder was killed, a merge of nodes whose processes had no distinct\n"
    "ranks. `report` then reads a few hundred rows instead of every sample,\n"
    "region and mark, and several node files report without a full merge.\n"
    "The figures are the same either way. A file still being recorded is left\n"
    "alone. A schema 3 file (trainprof before shares counted only time inside\n"
    "steps) is brought to schema 4.\n";

static const char epilogue[] =
    "exit status: 0 when every file holds its summary, 2 for bad arguments or a\n"
    "file that can't be summarized (each named on its own line).\n";

/* Whether process pid is a live (not zombie) trainprof, from /proc/PID/stat:
 * "PID (COMM) STATE ...". A reused pid of another program doesn't count. */
static bool live_trainprof(long pid)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    const char *open = got ? strchr(line, '(') : NULL;
    const char *close = got ? strrchr(line, ')') : NULL;
    if (!open || !close || close < open || close[1] != ' ')
        return false;
    bool named = (size_t)(close - open - 1) == strlen("trainprof") &&
                 strncmp(open + 1, "trainprof", strlen("trainprof")) == 0;
    return named && close[2] != 'Z' && close[2] != 'X';
}

/* Whether run is being written right now by a recorder on this host: its
 * status is still "recording" and the recorder it names is alive. A killed
 * recorder leaves the status but not the process. */
static bool being_recorded(const tp_run *run, long *pid)
{
    const char *status = tp_run_meta_get(run, TP_META_STATUS);
    const char *rec = tp_run_meta_get(run, TP_META_RECORDER_PID);
    const char *host = tp_run_meta_get(run, TP_META_HOST);
    char here[256] = "";
    gethostname(here, sizeof here - 1);
    if (!status || strcmp(status, "recording") != 0 || !rec || !host || strcmp(host, here) != 0)
        return false;
    *pid = strtol(rec, NULL, 10);
    return *pid > 0 && live_trainprof(*pid);
}

/* Summarizes one file; false with the reason printed. */
static bool summarize(const char *path, bool force, bool quiet)
{
    char err[1024];
    tp_run *run = tp_run_open(path, err, sizeof err);
    if (!run) {
        tp_error("summarize: %s", err);
        return false;
    }
    long pid = 0;
    bool started = tp_run_meta_get(run, TP_META_START_WALL_NS) != NULL;
    bool live = being_recorded(run, &pid);
    bool stored = tp_summary_stored(run);
    bool summary_only = tp_run_summary_only(run);
    int version = run->schema_version;
    tp_run_close(run);
    if (!started) {
        tp_error("summarize: %s has no start time yet (a recording in its first second, or "
                 "one killed at once)",
                 path);
        return false;
    }
    if (live) {
        tp_error("summarize: %s is still being recorded (recorder pid %ld); its summary is "
                 "stored when the command ends",
                 path, pid);
        return false;
    }
    if (version < 3) {
        tp_error("summarize: %s has schema %d, which has no summary tables (its report reads "
                 "the rows)",
                 path, version);
        return false;
    }
    if (summary_only && force) {
        tp_error("summarize: %s holds summaries only (merge --summary): recompute them in the "
                 "node files it was merged from, then merge again",
                 path);
        return false;
    }
    if (stored && !force) {
        if (!quiet)
            fprintf(stderr, "trainprof: %s already holds its summary (--force recomputes it)\n",
                    path);
        return true;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!tp_summary_store_save(path, err, sizeof err)) {
        tp_error("summarize: %s", err);
        return false;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (!quiet) {
        char upgraded[64] = "";
        if (version < TP_SCHEMA_VERSION)
            snprintf(upgraded, sizeof upgraded, " (schema %d, now %d)", version, TP_SCHEMA_VERSION);
        fprintf(stderr, "trainprof: summarized %s in %.1f s%s\n", path,
                (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
                upgraded);
    }
    return true;
}

int cmd_summarize(int argc, char **argv)
{
    bool force = false, quiet = false;
    const tp_option options[] = {
        TP_FLAG(0, "force", "compute and store the summary again where there is one", &force),
        TP_FLAG('q', "quiet", "no line per file, only errors", &quiet),
    };
    const tp_command cmd = {.name = "summarize",
                            .usage = usage,
                            TP_OPTION_TABLE(options),
                            .min_operands = 1,
                            .max_operands = -1,
                            .operands = "one or more run files",
                            .epilogue = epilogue};
    int first;
    int parsed = tp_options_parse(&cmd, argc, argv, &first);
    if (parsed != TP_OPTIONS_OK)
        return parsed;
    bool ok = true;
    for (int i = first; i < argc; i++)
        ok = summarize(argv[i], force, quiet) && ok;
    return ok ? 0 : 2;
}
