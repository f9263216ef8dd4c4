/* cmd_bottleneck.c: `trainprof bottleneck`: the training's actual sample rate
 * against its two limits, measured by running it three times under `record`
 * (as is; with its DataLoader's first batch replayed; with the loader alone;
 * see python/trainprof/runtime/bottleneck.py for the inside). */
#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/metric_catalog.h"
#include "analyze/bottleneck_facts.h"
#include "util/package_python.h"
#include "analyze/summary.h"
#include "analyze/verdicts.h"
#include "commands.h"
#include "render/bottleneck_words.h"
#include "render/verdict_words.h"
#include "store/model_facts_file.h"
#include "record/child.h"
#include "util/json_writer.h"
#include "util/options.h"
#include "util/log.h"
#include "trainprof.h"

extern char **environ;

static const char usage[] =
    "usage: trainprof bottleneck [--steps N] [--warmup N] [--json] [-o PREFIX] -- COMMAND...\n"
    "\n"
    "Runs a PyTorch training command three times under `trainprof record`, each for N steps\n"
    "after a warm-up, then stops it:\n"
    "  1. as it is: the actual sample rate;\n"
    "  2. with the DataLoader's first batch replayed from memory: the training limit;\n"
    "  3. with the loader alone, batches fetched and discarded: the input limit.\n"
    "Prints the three rates, which limit binds and what to do next. The run files are\n"
    "kept as PREFIX-asis.db, PREFIX-replay.db and PREFIX-loader.db.\n";

enum {
    ASIS = TP_BOTTLENECK_ASIS,
    REPLAY = TP_BOTTLENECK_REPLAY,
    LOADER = TP_BOTTLENECK_LOADER,
    MODES = TP_BOTTLENECK_MODES
};

/* The runs are short: system metrics are sampled more often than record's
 * default so that the measured steps hold several samples. */
#define SAMPLE_INTERVAL "0.1"
static const char *const mode_names[MODES] = {"asis", "replay", "loader"};

/* Where each run went and how it ended (its figures: tp_bottleneck_run). */
typedef struct mode_run {
    char path[4200];
    char facts_path[4200]; /* the model the replay run reports
                              (python/trainprof/runtime/bottleneck.py) */
    int exit_status;
} mode_run;

/* Runs `trainprof record` on the command in one mode; returns its status. */
static int run_mode(const char *self, int mode, const mode_run *r, long steps, long warmup,
                    char **command)
{
    size_t nenv = 0, ncmd = 0;
    while (environ[nenv])
        nenv++;
    while (command[ncmd])
        ncmd++;
    char **envp = calloc(nenv + 5, sizeof *envp);
    char **argv = calloc(ncmd + 10, sizeof *argv);
    size_t k = 0;
    for (size_t i = 0; i < nenv; i++)
        if (strncmp(environ[i], "TRAINPROF_BOTTLENECK", 20) != 0)
            envp[k++] = environ[i];
    char e1[64], e2[64], e3[64], e4[4300];
    snprintf(e1, sizeof e1, "TRAINPROF_BOTTLENECK=%s", mode_names[mode]);
    snprintf(e2, sizeof e2, "TRAINPROF_BOTTLENECK_STEPS=%ld", steps);
    snprintf(e3, sizeof e3, "TRAINPROF_BOTTLENECK_WARMUP=%ld", warmup);
    snprintf(e4, sizeof e4, "TRAINPROF_BOTTLENECK_FACTS=%s", r->facts_path);
    envp[k++] = e1, envp[k++] = e2, envp[k++] = e3, envp[k++] = e4;
    size_t a = 0;
    argv[a++] = (char *)self, argv[a++] = "record", argv[a++] = "-q", argv[a++] = "--force";
    argv[a++] = "--interval", argv[a++] = (char *)SAMPLE_INTERVAL;
    argv[a++] = "-o", argv[a++] = (char *)r->path, argv[a++] = "--";
    for (size_t i = 0; i < ncmd; i++)
        argv[a++] = command[i];
    pid_t pid;
    /* the training's own output goes to our stderr: stdout is the verdict
     * alone (with --json, one parseable document) */
    posix_spawn_file_actions_t io;
    posix_spawn_file_actions_init(&io);
    posix_spawn_file_actions_adddup2(&io, STDERR_FILENO, STDOUT_FILENO);
    int rc = posix_spawn(&pid, self, &io, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&io);
    free(envp);
    free(argv);
    if (rc != 0)
        return 127;
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return tp_child_exit_status(status);
}

/* The kinds of the verdicts `trainprof report` gives the run file at path,
 * each once, into kinds (room for TP_VERDICT_KINDS); how many, -1 when the
 * file can't be read. */
#define TP_VERDICT_KINDS 16
static int report_kinds(const char *path, const char *kinds[TP_VERDICT_KINDS])
{
    char err[1024];
    tp_summary s;
    if (!tp_summary_load(path, TP_PARTS_ALL, &s, err, sizeof err))
        return -1;
    tp_verdicts v;
    tp_verdicts_build(&s, &v);
    int n = 0;
    for (size_t i = 0; i < v.n; i++) {
        const char *kind = tp_verdict_kind_name(v.items[i].kind);
        bool seen = false; /* a verdict per rank or agent: each kind once */
        for (int k = 0; k < n; k++)
            seen |= strcmp(kinds[k], kind) == 0;
        if (!seen && n < TP_VERDICT_KINDS)
            kinds[n++] = kind;
    }
    tp_verdicts_free(&v);
    tp_summary_close(&s);
    return n;
}

/* The as-is run had no DataLoader: only it was made. */
static void no_loader_text(FILE *out, const mode_run *runs, const tp_bottleneck_run *r,
                           bool samples)
{
    if (r[ASIS].steps > 0)
        fprintf(out,
                "no DataLoader found: only the as-is run was made: %.1f %s over %ld steps "
                "(%s, exit status %d). bottleneck splits input from training at the "
                "training DataLoader's fetches; `trainprof report %s` splits this run's "
                "steps by phase.\n",
                r[ASIS].rate, samples ? "samples/s" : "steps/s", (long)r[ASIS].steps,
                runs[ASIS].path, runs[ASIS].exit_status, runs[ASIS].path);
    else
        fprintf(out,
                "no DataLoader found, and no steps: only the as-is run was made (%s, exit "
                "status %d)\n",
                runs[ASIS].path, runs[ASIS].exit_status);
}

/* --json: the verdict's kind and its words (message: the paragraph the
 * text says, NULL where none was judged), the report's kinds, each run, the
 * loader and model. */
static void json_answer(FILE *out, const mode_run *runs, const tp_bottleneck_run *r, bool samples,
                        const char *kind, const char *message, const char *const *report_said,
                        int nsaid, bool judged)
{
    json_writer w;
    json_init(&w, out);
    json_object_begin(&w);
    json_key(&w, "verdict");
    json_string(&w, kind);
    json_key(&w, "message");
    if (message)
        json_string(&w, message);
    else
        json_null(&w);
    json_key(&w, "unit");
    json_string(&w, samples ? "samples_per_s" : "steps_per_s");
    if (nsaid >= 0) { /* the kinds `report` finds in the as-is run */
        json_key(&w, "report_verdicts");
        json_array_begin(&w);
        for (int k = 0; k < nsaid; k++)
            json_string(&w, report_said[k]);
        json_array_end(&w);
    }
    json_key(&w, "runs");
    json_array_begin(&w);
    for (int m = 0; m < MODES && (m == ASIS || r[ASIS].found_loader); m++) {
        json_object_begin(&w);
        json_key(&w, "mode");
        json_string(&w, mode_names[m]);
        json_key(&w, "rate");
        json_double(&w, r[m].rate);
        json_key(&w, "steps");
        json_int(&w, r[m].steps);
        json_key(&w, "exit_status");
        json_int(&w, runs[m].exit_status);
        json_key(&w, "run_file");
        json_string(&w, runs[m].path);
        json_object_end(&w);
    }
    json_array_end(&w);
    tp_bottleneck_json_details(&w, r, judged);
    json_object_end(&w);
    fputc('\n', out);
}

/* What the runs found, printed: the rates and the limit that binds (or
 * why there is none), and the kinds `report` finds in the as-is run; with
 * json, one JSON object. 1 where a run failed, else 0. */
static int answer(const mode_run *runs, const tp_bottleneck_run *r, bool samples, bool json)
{
    FILE *out = stdout;
    const char *kind = "none";
    const char *report_said[TP_VERDICT_KINDS];
    int nsaid = -1; /* the kinds `report` finds in the as-is run; -1: not read */
    if (!r[ASIS].found_loader) {
        if (!json)
            no_loader_text(out, runs, r, samples);
        kind = "no_dataloader";
    }
    bool crashed = false;
    for (int m = 0; m < MODES; m++)
        if (runs[m].exit_status != 0 && (m == ASIS || r[ASIS].found_loader)) {
            crashed = true;
            if (!json)
                fprintf(out, "the %s run failed with exit status %d (see %s)\n", mode_names[m],
                        runs[m].exit_status, runs[m].path);
        }
    bool judged = r[ASIS].found_loader && !crashed;
    char *message = NULL; /* --json: the verdict's paragraph */
    size_t message_len = 0;
    if (judged) {
        tp_limit limit = tp_bottleneck_limit(r[REPLAY].rate, r[LOADER].rate);
        kind = tp_limit_name(limit);
        FILE *words = json ? open_memstream(&message, &message_len) : NULL;
        if (words) {
            tp_bottleneck_verdict_text(words, r, samples, limit);
            fclose(words);
            if (message_len && message[message_len - 1] == '\n')
                message[message_len - 1] = '\0';
        }
        nsaid = report_kinds(runs[ASIS].path, report_said);
        if (!json) {
            const char *what[MODES] = {"as is", "training limit (batch replayed)",
                                       "input limit (loader alone)"};
            for (int m = 0; m < MODES; m++)
                fprintf(out, "  %-34s %10.1f %s   %s\n", what[m], r[m].rate,
                        samples ? "samples/s" : "steps/s", runs[m].path);
            tp_bottleneck_verdict_text(out, r, samples, limit);
            if (nsaid >= 0) {
                fprintf(out, "`trainprof report` of the as-is run: %s", nsaid ? "" : "none");
                for (int k = 0; k < nsaid; k++)
                    fprintf(out, "%s%s", k ? ", " : "", report_said[k]);
                fputc('\n', out);
            }
        }
    } else if (crashed) {
        kind = "run_failed";
    }
    if (json)
        json_answer(out, runs, r, samples, kind, message, report_said, nsaid, judged);
    free(message);
    return crashed ? 1 : 0;
}

int cmd_bottleneck(int argc, char **argv)
{
    long steps = 200, warmup = 20;
    const char *prefix = NULL;
    bool json = false;
    const tp_option options[] = {
        TP_INTEGER(0, "steps", "N", "steps measured in each run (default 200)", &steps, 2, 1000000,
                   NULL),
        TP_INTEGER(0, "warmup", "N", "steps run first and not measured (default 20)", &warmup, 0,
                   1000000, NULL),
        TP_STRING('o', "output", "PREFIX",
                  "run file prefix (default trainprof-bottleneck-DATE-TIME)", &prefix),
        TP_FLAG(0, "json", "one JSON object instead of text", &json),
    };
    const tp_command cmd = {.name = "bottleneck",
                            .usage = usage,
                            TP_OPTION_TABLE(options),
                            .min_operands = 1,
                            .max_operands = -1,
                            .operands = "a command to run",
                            .stop_at_operand = true};
    int first;
    int parsed = tp_options_parse(&cmd, argc, argv, &first);
    if (parsed != TP_OPTIONS_OK)
        return parsed;
    char self[4096], def[64];
    if (!tp_self_path(self, sizeof self)) {
        tp_error("bottleneck: cannot find the trainprof program itself");
        return 1;
    }
    if (!prefix) {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        strftime(def, sizeof def, "trainprof-bottleneck-%Y%m%d-%H%M%S", &tm);
        prefix = def;
    }
    mode_run runs[MODES];
    tp_bottleneck_run r[MODES];
    memset(runs, 0, sizeof runs);
    memset(r, 0, sizeof r);
    bool samples = false;
    for (int m = 0; m < MODES; m++) {
        snprintf(runs[m].path, sizeof runs[m].path, "%s-%s.db", prefix, mode_names[m]);
        if (!json)
            fprintf(stderr, "trainprof bottleneck: run %d of 3 (%s)...\n", m + 1, mode_names[m]);
        snprintf(runs[m].facts_path, sizeof runs[m].facts_path, "%s-%s.model", prefix,
                 mode_names[m]);
        unlink(runs[m].facts_path);
        runs[m].exit_status = run_mode(self, m, &runs[m], steps, warmup, argv + first);
        tp_bottleneck_run_measure(runs[m].path, warmup, &r[m]);
        r[m].has_facts = tp_model_facts_read(runs[m].facts_path, &r[m].facts);
        unlink(runs[m].facts_path); /* its content is in the verdict and --json */
        samples |= r[m].samples_seen;
        if (m == ASIS && !r[m].found_loader)
            break;
    }
    return answer(runs, r, samples, json);
}
