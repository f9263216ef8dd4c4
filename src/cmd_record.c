/* cmd_record.c: `trainprof record`: run a command and record it.
 *
 * The recorder is the parent. It creates the run file first (so a bad -o
 * fails before any training starts), then starts the command, a sampler
 * thread and a writer thread, and waits on a signalfd for the command's end
 * and for signals to pass on. It exits with the command's status. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "collect/host_info.h"
#include "commands.h"
#include "record/child.h"
#include "record/drain.h"
#include "record/output_name.h"
#include "record/registry.h"
#include "record/closing.h"
#include "record/sampler.h"
#include "record/status_line.h"
#include "record/supervise.h"
#include "record/writer_thread.h"
#include "serve/http_server.h"
#include "live/live_state.h"
#include "store/schema.h"
#include "trainprof_version.h"
#include "util/json_writer.h"
#include "util/options.h"
#include "util/log.h"
#include "util/utf8.h"
#include "core/run_keys.h"

extern char **environ;

#define TP_STACKS_HZ_DEFAULT 100
#define TP_STACKS_HZ_MAX     1000

typedef struct record_options {
    const char *output;
    const char *agent;
    const char *serve; /* HOST:PORT of the Prometheus endpoint, or NULL */
    double interval_s;
    double stacks_hz;     /* Python stack samples a second per thread; 0: off */
    double stall_after_s; /* a rank without progress this long has stalled; 0: by its steps */
    double
        wait_after_exit_s; /* how long traced processes that outlive the command are waited for */
    bool force;
    bool quiet;
    char **command;
    int ops_off;        /* --ops: 0 on, 1 off */
    long ops_steps;     /* steps a capture window covers */
    double ops_every_s; /* the schedule's period after the first window; 0 none */
    double ops_on_slow; /* a step this many times the median triggers one; 0 never */
} record_options;

static const char usage[] =
    "usage: trainprof record [options] [--] COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND, samples the machine while it runs, and writes everything into\n"
    "one SQLite run file. Exits with COMMAND's exit status (128+N if it died of\n"
    "signal N, 127 if it could not be started).\n";

static const char epilogue[] = "example:\n"
                               "  trainprof record -o run.db -- python train.py --epochs 3\n"
                               "  trainprof report run.db\n";

/* Returns 0 to go on, or an exit status (help: 0 via *done, errors: 2). */
static int parse_options(int argc, char **argv, record_options *o, bool *done)
{
    *o = (record_options){NULL, NULL, NULL, 0.5, TP_STACKS_HZ_DEFAULT, 0, 10, false, false, NULL,
                          0,    5,    1800, 3};
    static const char *const on_off[] = {"on", "off", NULL};
    *done = false;
    const char *env_stacks = getenv("TRAINPROF_STACKS");
    if (env_stacks && *env_stacks) {
        char *end;
        double hz = strtod(env_stacks, &end);
        if (*end || !(hz >= 0 && hz <= TP_STACKS_HZ_MAX)) {
            tp_error("record: TRAINPROF_STACKS=%s: a rate of 0 (off) to %d samples a second",
                     env_stacks, TP_STACKS_HZ_MAX);
            return 2;
        }
        o->stacks_hz = hz;
    }
    const tp_option options[] = {
        TP_STRING('o', "output", "FILE",
                  "run file to write (default: trainprof-DATE-TIME.db);\n"
                  "%h is the host name, %r the node rank (SLURM_NODEID,\n"
                  "NODE_RANK or GROUP_RANK; else 0), %p the pid",
                  &o->output),
        TP_FLAG('f', "force", "overwrite FILE if it exists", &o->force),
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
    if (o->output && !*o->output) {
        tp_error("record: --output must not be empty");
        return 2;
    }
    if (o->ops_on_slow > 0 && o->ops_on_slow < 1.5) {
        tp_error("record: --ops-on-slow %g: 0 (never) or 1.5 to 1000 times the median step",
                 o->ops_on_slow);
        return 2;
    }
    o->command = argv + first;
    return 0;
}

/* Appends arg to buf quoted for a POSIX shell when it needs quoting. */
static void shell_quote(FILE *out, const char *arg)
{
    bool plain = *arg != '\0';
    for (const char *p = arg; *p && plain; p++)
        plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%",
                       *p) != NULL;
    if (plain) {
        fputs(arg, out);
        return;
    }
    fputc('\'', out);
    for (const char *p = arg; *p; p++) {
        if (*p == '\'')
            fputs("'\\''", out);
        else
            fputc(*p, out);
    }
    fputc('\'', out);
}

/* Metadata rows made on the stack, written in one transaction straight into
 * the run file: the run's start and end must not depend on memory that may
 * have run out. Texts longer than a buffer are the caller's. */
typedef struct meta_list {
    const char *keys[16];
    const char *values[16];
    char buf[16][64];
    size_t n;
} meta_list;

static void meta_add(meta_list *m, const char *key, const char *value)
{
    if (m->n < sizeof m->keys / sizeof m->keys[0] && value)
        m->keys[m->n] = key, m->values[m->n] = value, m->n++;
}

static void meta_addf(meta_list *m, const char *key, const char *fmt, ...) TP_PRINTF(3, 4);
static void meta_addf(meta_list *m, const char *key, const char *fmt, ...)
{
    if (m->n >= sizeof m->keys / sizeof m->keys[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->buf[m->n], sizeof m->buf[m->n], fmt, ap);
    va_end(ap);
    meta_add(m, key, m->buf[m->n]);
}

/* The command as text: shell-quoted words ("command"), or a JSON array
 * ("argv"); NULL when memory ran out. The caller frees it. */
static char *command_text(char **command, bool json)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem)
        return NULL;
    json_writer w;
    if (json) {
        json_init(&w, mem);
        json_array_begin(&w);
    }
    for (char **p = command; *p; p++) {
        if (json) {
            json_string(&w, *p);
            continue;
        }
        if (p != command)
            fputc(' ', mem);
        shell_quote(mem, *p);
    }
    if (json)
        json_array_end(&w);
    if (fclose(mem) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* Writes what is known before the command starts into the run file; the
 * command line, as the closing summary shows it, goes in command (cap
 * bytes). False when the file would not take it. */
static bool record_start_meta(tp_writer *writer, const record_options *o, const tp_clock_anchor *a,
                              char *command, size_t cap)
{
    char *words = command_text(o->command, false), *argv = command_text(o->command, true);
    tp_utf8_clean(command, cap, words ? words : o->command[0]);
    meta_list m = {.n = 0};
    meta_add(&m, TP_META_COMMAND, words ? words : command);
    meta_add(&m, "argv", argv);
    meta_add(&m, "trainprof_version", TRAINPROF_VERSION);
    meta_add(&m, "status", "recording");
    meta_addf(&m, TP_META_START_WALL_NS, "%lld", (long long)a->wall_ns);
    meta_addf(&m, "start_mono_ns", "%llu", (unsigned long long)a->mono_ns);
    meta_addf(&m, "clock_uncertainty_ns", "%llu", (unsigned long long)a->uncertainty_ns);
    time_t secs = (time_t)(a->wall_ns / 1000000000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    meta_add(&m, "start_wall", when);
    meta_addf(&m, TP_META_INTERVAL_S, "%g", o->interval_s);
    meta_addf(&m, "stacks_hz", "%g", o->stacks_hz);
    meta_addf(&m, "ops", "%s", o->ops_off ? "off" : "on");
    meta_addf(&m, "ops_steps", "%ld", o->ops_steps);
    meta_addf(&m, "ops_every_s", "%g", o->ops_every_s);
    meta_addf(&m, "ops_on_slow", "%g", o->ops_on_slow);
    if (o->stall_after_s > 0)
        meta_addf(&m, TP_META_STALL_AFTER_S, "%g", o->stall_after_s);
    meta_addf(&m, "recorder_pid", "%d", (int)getpid());
    bool ok = tp_writer_metas(writer, m.keys, m.values, m.n);
    free(words);
    free(argv);
    return ok;
}

/* The run's end as metadata: exit status, the signal that ended the
 * command (if one did), the signal that asked it to stop (if one did),
 * duration, and status "finished". */
static void end_meta_make(meta_list *m, int exit_status, int wstatus, uint64_t duration_ns,
                          const stop_request *stop, pid_t child)
{
    m->n = 0;
    meta_addf(m, TP_META_EXIT_STATUS, "%d", exit_status);
    /* the command's own end as the drain writes every traced process's
     * (record/process_ends.h): record reaped it, so its zombie told nobody */
    char key[48];
    snprintf(key, sizeof key, "proc.%d.status", (int)child);
    if (WIFSIGNALED(wstatus))
        meta_addf(m, key, "signal %d", WTERMSIG(wstatus));
    else
        meta_addf(m, key, "exit %d", WEXITSTATUS(wstatus));
    if (stop->signo) {
        const char *name = sigabbrev_np(stop->signo);
        meta_addf(m, "stop_signal", "SIG%s", name ? name : "?");
        meta_addf(m, "stop_signal_ns", "%llu", (unsigned long long)stop->t_ns);
    }
    if (WIFSIGNALED(wstatus)) {
        const char *name = sigabbrev_np(WTERMSIG(wstatus));
        meta_addf(m, "exit_signal", "SIG%s", name ? name : "?");
    }
    meta_addf(m, "duration_ns", "%llu", (unsigned long long)duration_ns);
    meta_add(m, "status", "finished");
}

/* What memory ran out for, in words ("" for nothing), from the sink's
 * counts. */
static void describe_losses(tp_sink *sink, char *out, size_t cap)
{
    uint64_t lost[TP_LOST_KINDS];
    tp_sink_losses(sink, lost);
    static const char *const what[TP_LOST_KINDS] = {"samples", "timing events", "threads",
                                                    "series, names or descriptions"};
    out[0] = '\0';
    size_t n = 0;
    for (int k = 0; k < TP_LOST_KINDS && n < cap; k++)
        if (lost[k])
            n += (size_t)snprintf(out + n, cap - n, "%s%llu %s",
                                  n ? ", " : "memory ran out: ", (unsigned long long)lost[k],
                                  what[k]);
    if (n && n < cap)
        snprintf(out + n, cap - n, " were not recorded");
}

static void ask_capture(void *drain) { tp_drain_ask_capture(drain); }

/* The command's environment: ours, with TRAINPROF_SOCKET naming the drain's
 * socket when timings are collected and TRAINPROF_STACKS the stack sampling
 * rate (each replacing an inherited one). */
static char **child_environment(const tp_drain *drain, double stacks_hz)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **envp = calloc(n + 3, sizeof *envp);
    if (!envp)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "TRAINPROF_SOCKET=", 17) != 0 &&
            strncmp(environ[i], "TRAINPROF_STACKS=", 17) != 0)
            envp[k++] = environ[i];
    if (drain && asprintf(&envp[k], "TRAINPROF_SOCKET=%s", tp_drain_socket_path(drain)) > 0)
        k++;
    if (asprintf(&envp[k], "TRAINPROF_STACKS=%g", stacks_hz) > 0)
        k++;
    envp[k] = NULL;
    return envp;
}

static void free_child_environment(char **envp)
{
    if (!envp)
        return;
    for (char **p = envp; *p; p++)
        if (strncmp(*p, "TRAINPROF_SOCKET=", 17) == 0 || strncmp(*p, "TRAINPROF_STACKS=", 17) == 0)
            free(*p); /* the entries this process allocated */
    free(envp);
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
    record_options o;
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
    tp_writer *writer = tp_writer_create(o.output, o.force, o.agent, err, sizeof err);
    if (!writer) {
        /* where the name may be another recorder's of the same job, say why */
        bool taken = hint[0] && access(o.output, F_OK) == 0;
        tp_error("%s%s%s", err, taken ? "; " : "", taken ? hint : "");
        /* a bad output path, as every other bad input; out of memory is no input's fault */
        return strstr(err, ": out of memory") ? 1 : 2;
    }

    /* Signals are taken through a signalfd; every thread inherits the mask,
     * and the child gets it cleared. */
    sigset_t mask;
    sigemptyset(&mask);
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(&mask, sigs[i]);
    sigset_t old;
    pthread_sigmask(SIG_BLOCK, &mask, &old);
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC);

    tp_clock_anchor anchor = tp_clock_anchor_now();
    tp_sink *sink = tp_sink_new(anchor.mono_ns);
    tp_sysroot root;
    if (!sink || sfd < 0 || !tp_sysroot_open(&root, tp_sysroot_default_path())) {
        tp_error("record: cannot set up the recorder: %s", strerror(errno));
        tp_writer_finish(writer);
        unlink(o.output);
        return 1;
    }
    char command[128];
    if (!record_start_meta(writer, &o, &anchor, command, sizeof command)) {
        tp_error("record: cannot write %s: %s", o.output, tp_writer_error(writer));
        tp_writer_finish(writer);
        unlink(o.output);
        tp_sink_free(sink);
        return 1;
    }
    tp_collect_env env = {&root, sink, 0};
    tp_host_info_record(&env, o.agent);

    /* the live state, for the status line, /metrics and, with stack
     * sampling off, to see stalls begin: a line that can't be drawn costs
     * nothing else */
    bool status_line = !o.quiet && isatty(STDERR_FILENO);
    tp_live *live = o.serve || status_line || o.stacks_hz == 0 ? tp_live_new(o.interval_s) : NULL;
    if (live)
        tp_live_set_stall_after(live, o.stall_after_s);
    tp_http_server *http = NULL;
    if (o.serve) {
        char host[256] = "";
        gethostname(host, sizeof host - 1);
        http = live ? tp_http_start(o.serve, live, o.agent ? o.agent : host, host, err, sizeof err)
                    : NULL;
        if (!http) {
            tp_error("record: --serve: %s", live ? err : "out of memory");
            tp_live_free(live);
            tp_writer_finish(writer);
            unlink(o.output);
            tp_sink_free(sink);
            return 2;
        }
        fprintf(stderr, "trainprof: serving metrics at http://%s/metrics\n", tp_http_address(http));
    }

    /* the writer first: without it nothing would be recorded, and the
     * command is better not started than recorded into nothing */
    tp_writer_thread wt;
    if (!tp_writer_thread_start(&wt, sink, writer, live)) {
        tp_error("record: cannot start the recorder's writer thread: %s (too little memory? see "
                 "ulimit -v); the command was not started",
                 strerror(errno));
        tp_http_stop(http);
        tp_live_free(live);
        tp_writer_finish(writer);
        unlink(o.output);
        tp_sink_free(sink);
        return 1;
    }

    tp_ops_options ops;
    tp_ops_options_default(&ops);
    ops.off = o.ops_off == 1;
    ops.steps = (uint32_t)o.ops_steps;
    ops.every_ns = (int64_t)(o.ops_every_s * 1e9);
    ops.on_slow = o.ops_on_slow;
    tp_drain *drain = tp_drain_start(sink, &ops, err, sizeof err);
    if (drain)
        tp_http_on_capture(http, ask_capture, drain);
    if (!drain)
        tp_sink_unavailable(sink, "timings", err);
    char **envp = child_environment(drain, o.stacks_hz);
    pid_t child = envp ? tp_child_spawn(o.command, envp) : -1;
    int spawn_errno = envp ? errno : ENOMEM;
    free_child_environment(envp);
    if (child < 0) {
        tp_error("cannot run '%s': %s", o.command[0], strerror(spawn_errno));
        tp_http_on_capture(http, NULL, NULL);
        tp_drain_stop(drain);
        tp_sink_close(sink);
        tp_writer_thread_join(&wt);
        tp_http_stop(http);
        tp_live_free(live);
        tp_writer_finish(writer);
        unlink(o.output);
        tp_sink_free(sink);
        return tp_child_spawn_status(spawn_errno);
    }
    char pidbuf[32];
    snprintf(pidbuf, sizeof pidbuf, "%d", (int)child);
    tp_sink_meta(sink, "child_pid", pidbuf);

    char why_unlisted[400]; /* lets `trainprof top` find this recording */
    if (!tp_registry_add(o.output, drain ? tp_drain_dir(drain) : "", why_unlisted,
                         sizeof why_unlisted))
        tp_warn("record: `trainprof top` will not see this recording: %s (the recording goes "
                "on)",
                why_unlisted);
    env.target_pid = child;
    tp_sampler sampler;
    if (!tp_sampler_start(&sampler, &env, TP_COLLECT_ALL, (uint64_t)(o.interval_s * 1e9))) {
        snprintf(err, sizeof err, "the recorder could not start its sampling thread: %s",
                 strerror(errno));
        tp_sink_unavailable(sink, "system metrics", err);
    }

    stop_request stop = {0, 0};
    tp_watch w = {status_line ? live : NULL, o.stacks_hz == 0 ? live : NULL, drain, false};
    int wstatus = tp_supervise(child, sfd, &w, anchor.mono_ns, &stop);
    /* traced processes that outlived the command (a daemon it started) */
    if (!stop.signo && o.wait_after_exit_s > 0)
        tp_wait_for_outlivers(drain, sfd, o.wait_after_exit_s, &w, anchor.mono_ns, &stop);
    uint64_t duration = tp_clock_mono_ns() - anchor.mono_ns;
    if (status_line && live)
        tp_status_line_clear(stderr);

    tp_sampler_stop(&sampler);
    tp_http_on_capture(http, NULL, NULL); /* no POST /capture reaches a drain stopped */
    tp_drain_stop(drain);
    tp_registry_remove();
    int exit_status = tp_child_exit_status(wstatus);
    meta_list end;
    end_meta_make(&end, exit_status, wstatus, duration, &stop, child);
    for (size_t i = 0; i < end.n; i++) /* the last batch, seen live too */
        tp_sink_meta(sink, end.keys[i], end.values[i]);
    tp_sink_close(sink);
    tp_writer_thread_join(&wt);
    tp_http_stop(http); /* after the last batch: a final scrape sees the end */
    tp_live_free(live);
    /* the end again, and what memory ran out for, straight into the file:
     * where memory ran out the sink may have lost them */
    tp_writer_metas(writer, end.keys, end.values, end.n);
    char lost[256];
    describe_losses(sink, lost, sizeof lost);
    if (lost[0])
        tp_writer_unavailable(writer, "recorder memory", lost);
    tp_writer_finish(writer);
    tp_sink_free(sink);
    tp_sysroot_close(&root);
    close(sfd);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    tp_record_close(o.output,
                    &(tp_record_outcome){.command = command,
                                         .exit_status = exit_status,
                                         .duration_ns = duration,
                                         .write_failed = wt.failed,
                                         .lost = lost},
                    o.quiet);
    return exit_status;
}
