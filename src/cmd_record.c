/* cmd_record.c: `trainprof record`: run a command and record it. The
 * command line parsed here; the recording itself is record/session.c's. It
 * exits with the command's status. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "record/output_name.h"
#include "record/sampler.h"
#include "record/session.h"
#include "record/trackers.h"
#include "util/log.h"
#include "util/options.h"

#define TP_STACKS_HZ_DEFAULT 100
#define TP_STACKS_HZ_MAX     1000

static const char usage[] =
    "usage: trainprof record [options] [--] COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND, samples the machine while it runs, and writes everything into\n"
    "one SQLite run file. Exits with COMMAND's exit status (128+N if it died of\n"
    "signal N, 127 if it could not be started).\n";

static const char epilogue[] = "example:\n"
                               "  trainprof record -o run.db -- python train.py --epochs 3\n"
                               "  trainprof report run.db\n";

static const tp_record_options defaults = {.interval_s = 0.5,
                                           .stacks_hz = TP_STACKS_HZ_DEFAULT,
                                           .wait_after_exit_s = 10,
                                           .ops_steps = 5,
                                           .ops_every_s = 1800,
                                           .ops_on_slow = 3};

/* The stack sampling rate TRAINPROF_STACKS sets (--stacks overrides it);
 * false, said, when it is no rate. */
static bool stacks_from_environment(tp_record_options *o)
{
    const char *env_stacks = getenv("TRAINPROF_STACKS");
    if (!env_stacks || !*env_stacks)
        return true;
    char *end;
    double hz = strtod(env_stacks, &end);
    if (*end || !(hz >= 0 && hz <= TP_STACKS_HZ_MAX)) {
        tp_error("record: TRAINPROF_STACKS=%s: a rate of 0 (off) to %d samples a second",
                 env_stacks, TP_STACKS_HZ_MAX);
        return false;
    }
    o->stacks_hz = hz;
    return true;
}

/* What the options' own ranges can't say; false, said, when one is wrong. */
static bool options_checked(const tp_record_options *o)
{
    if (o->output && !*o->output) {
        tp_error("record: --output must not be empty");
        return false;
    }
    char why[160];
    if (o->log_to && !tp_trackers_check(o->log_to, why, sizeof why)) {
        tp_error("record: %s", *o->log_to ? why : "--log-to names no tracker");
        return false;
    }
    if (o->ops_on_slow > 0 && o->ops_on_slow < 1.5) {
        tp_error("record: --ops-on-slow %g: 0 (never) or 1.5 to 1000 times the median step",
                 o->ops_on_slow);
        return false;
    }
    return true;
}

/* Returns 0 to go on, or an exit status (help: 0 via *done, errors: 2). */
static int parse_options(int argc, char **argv, tp_record_options *o, bool *done)
{
    *o = defaults;
    static const char *const on_off[] = {"on", "off", NULL};
    *done = false;
    if (!stacks_from_environment(o))
        return 2;
    const tp_option options[] = {
        TP_STRING('o', "output", "FILE",
                  "run file to write (default: trainprof-DATE-TIME.db);\n"
                  "%h is the host name, %r the node rank (SLURM_NODEID,\n"
                  "NODE_RANK or GROUP_RANK; else 0), %p the pid",
                  &o->output),
        TP_FLAG(0, "force", "overwrite FILE if it exists", &o->force),
        TP_NUMBER('i', "interval", "SECS", "sampling interval, 0.05 to 60 (default: 0.5)",
                  &o->interval_s, TP_INTERVAL_MIN, TP_INTERVAL_MAX, "seconds"),
        TP_STRING(0, "agent", "NAME", "name of this machine in the run (default: host name)",
                  &o->agent),
        TP_STRING(0, "serve", "ADDR:PORT",
                  "serve live metrics for Prometheus at http://ADDR:PORT/metrics\n"
                  "(e.g. 127.0.0.1:9464; 0.0.0.0:9464 for every interface)",
                  &o->serve),
        TP_NUMBER(0, "stacks", "HZ",
                  "sample every Python thread's stack HZ times a second,\n"
                  "0 (or TRAINPROF_STACKS=0) for none (default: 100)",
                  &o->stacks_hz, 0, TP_STACKS_HZ_MAX, "samples a second"),
        TP_NUMBER(0, "stall-after", "SECS",
                  "a rank whose step makes no progress this long has stalled,\n"
                  "1 to 86400 (default: 10 median steps and at least 30 s;\n"
                  "10 minutes before its first step)",
                  &o->stall_after_s, 1, 86400, "seconds"),
        TP_NUMBER(0, "wait-after-exit", "SECS",
                  "once COMMAND has ended, wait this long for the traced\n"
                  "processes it left running (a daemon it started) to end,\n"
                  "0 to 3600 (default: 10)",
                  &o->wait_after_exit_s, 0, 3600, "seconds"),
        TP_CHOICE(0, "ops", "on|off",
                  "capture windows: PyTorch's profiler over a few steps,\n"
                  "after the warm-up, on a schedule, on demand (trainprof\n"
                  "capture) and after a slow step (default: on)",
                  &o->ops_off, on_off),
        TP_INTEGER(0, "ops-steps", "N", "steps a capture window covers, 1 to 100 (default: 5)",
                   &o->ops_steps, 1, 100, "steps"),
        TP_NUMBER(0, "ops-every", "SECS",
                  "a capture window every SECS of training after the first,\n"
                  "0 for the first only, up to 604800 (default: 1800)",
                  &o->ops_every_s, 0, 604800, "seconds"),
        TP_NUMBER(0, "ops-on-slow", "X",
                  "a step X times slower than the running median starts a\n"
                  "window (at most one in 10 minutes); 0 for never, else\n"
                  "1.5 to 1000 (default: 3)",
                  &o->ops_on_slow, 0, 1000, "times"),
        TP_STRING(0, "log-to", "LIST",
                  "once the training ended, log trainprof's figures by step,\n"
                  "its answer and its html page into each tracker of LIST\n"
                  "(mlflow, wandb, tensorboard; comma-separated): into the\n"
                  "run the script opened, else one named after the command",
                  &o->log_to),
        TP_FLAG('q', "quiet", "no status line and no summary", &o->quiet),
    };
    const tp_command cmd = {.name = "record",
                            .usage = usage,
                            .epilogue = epilogue,
                            TP_OPTION_TABLE(options),
                            .min_operands = 1,
                            .max_operands = -1,
                            .operands = "a command to run",
                            .stop_at_operand = true};
    int first;
    int parsed = tp_options_parse(&cmd, argc, argv, &first);
    if (parsed != TP_OPTIONS_OK) {
        *done = parsed == TP_OPTIONS_HELP;
        return parsed;
    }
    o->command = argv + first;
    return options_checked(o) ? 0 : 2;
}

/* Makes the default output name, trainprof-YYYYmmdd-HHMMSS.db. */
static void default_output(char *buf, size_t cap)
{
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(buf, cap, "trainprof-%Y%m%d-%H%M%S.db", &tm);
}

int cmd_record(int argc, char **argv)
{
    tp_record_options o;
    bool done;
    int rc = parse_options(argc, argv, &o, &done);
    if (rc || done)
        return rc;
    char default_name[64], expanded[4096];
    char err[512], hint[256] = "";
    if (!o.output) {
        default_output(default_name, sizeof default_name);
        o.output = default_name;
    } else if (tp_output_name_expand(o.output, expanded, sizeof expanded, err, sizeof err, hint,
                                     sizeof hint)) {
        o.output = expanded;
    } else {
        tp_error("record: %s", err);
        return 2;
    }
    o.name_hint = hint;
    if (o.log_to && setenv("TRAINPROF_LOG_TO", o.log_to, 1) != 0) { /* the runs to follow */
        tp_error("record: --log-to: cannot set TRAINPROF_LOG_TO");
        return 2;
    }
    rc = tp_record_session_run(&o);
    if (o.log_to && access(o.output, R_OK) == 0)
        tp_trackers_log(o.output, o.log_to, o.quiet);
    return rc;
}
