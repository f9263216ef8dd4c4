/* session.c: see session.h.
 *
 * The recorder is the parent. It creates the run file first (so a bad -o
 * fails before any training starts), then starts the command, a sampler
 * thread and a writer thread, and waits on a signalfd for the command's end
 * and for signals to pass on. */
#include "record/session.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "clock.h"
#include "collect/collector.h"
#include "collect/host_info.h"
#include "collect/sysroot.h"
#include "live/live_state.h"
#include "record/child.h"
#include "record/closing.h"
#include "record/drain.h"
#include "record/registry.h"
#include "record/run_meta.h"
#include "record/sampler.h"
#include "record/status_line.h"
#include "record/supervise.h"
#include "record/writer_thread.h"
#include "serve/http_server.h"
#include "store/writer.h"
#include "util/log.h"
#include "util/thread.h"
#include "core/run_keys.h"

extern char **environ;

/* The parts of a recording, each NULL (or not started) until it is. */
typedef struct session {
    const tp_record_options *o;
    tp_writer *writer;
    sigset_t old_mask;
    bool masked;
    int sfd;
    tp_clock_anchor anchor;
    tp_sink *sink;
    tp_sysroot root;
    bool root_open;
    tp_collect_env env;
    bool status_line;
    tp_live *live;
    tp_http_server *http;
    tp_writer_thread wt;
    bool wt_started;
    tp_drain *drain;
    tp_sampler sampler;
    pid_t child;
    char command[128]; /* the command line as the closing lines show it */
} session;

/* The threads that record stopped, in the reverse of their start: the
 * sampler, the capture requests, the drain (its last events into the sink). */
static void stop_producers(session *s)
{
    tp_sampler_stop(&s->sampler);
    tp_http_on_capture(s->http, NULL, NULL); /* no POST /capture reaches a drain stopped */
    tp_drain_stop(s->drain);
    s->drain = NULL;
}

/* The sink closed and its writer joined (every batch in the file), then
 * the live views that read it stopped. */
static void stop_writing(session *s)
{
    if (s->wt_started) {
        tp_sink_close(s->sink);
        tp_writer_thread_join(&s->wt);
    }
    tp_http_stop(s->http); /* after the last batch: a final scrape sees the end */
    tp_live_free(s->live);
}

/* What start_file took, given back: the sink, /proc, the signals. */
static void release(session *s)
{
    tp_sink_free(s->sink);
    if (s->root_open)
        tp_sysroot_close(&s->root);
    if (s->sfd >= 0)
        close(s->sfd);
    if (s->masked)
        pthread_sigmask(SIG_SETMASK, &s->old_mask, NULL);
}

/* The one unwind of a recording that could not start: whatever started
 * stops, in the reverse order, and the run file goes (it holds nothing
 * of the command). Returns rc. */
static int unwind(session *s, int rc)
{
    stop_producers(s);
    stop_writing(s);
    if (s->writer) {
        tp_writer_finish(s->writer);
        unlink(s->o->output);
    }
    release(s);
    return rc;
}

/* The run file, the signals (taken through a signalfd: every thread
 * inherits the mask, and the child gets it cleared), the sink, the start's
 * metadata and the host's description. False, said, when one can't be had
 * (*rc: 2 for a bad output path, else 1). */
static bool start_file(session *s, int *rc)
{
    const tp_record_options *o = s->o;
    char err[512];
    s->writer = tp_writer_create(o->output, o->force, o->agent, err, sizeof err);
    if (!s->writer) {
        /* where the name may be another recorder's of the same job, say why */
        bool taken = o->name_hint && o->name_hint[0] && access(o->output, F_OK) == 0;
        tp_error("%s%s%s", err, taken ? "; " : "", taken ? o->name_hint : "");
        /* a bad output path, as every other bad input; out of memory is no input's fault */
        *rc = strstr(err, ": out of memory") ? 1 : 2;
        return false;
    }
    sigset_t mask;
    sigemptyset(&mask);
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(&mask, sigs[i]);
    s->masked = pthread_sigmask(SIG_BLOCK, &mask, &s->old_mask) == 0;
    s->sfd = signalfd(-1, &mask, SFD_CLOEXEC);
    s->anchor = tp_clock_anchor_now();
    s->sink = tp_sink_new(s->anchor.mono_ns);
    *rc = 1;
    if (!s->sink || s->sfd < 0 ||
        !(s->root_open = tp_sysroot_open(&s->root, tp_sysroot_default_path()))) {
        tp_error("record: cannot set up the recorder: %s", strerror(errno));
        return false;
    }
    if (!tp_record_start_meta(s->writer, o, &s->anchor, s->command, sizeof s->command)) {
        tp_error("record: cannot write %s: %s", o->output, tp_writer_error(s->writer));
        return false;
    }
    s->env = (tp_collect_env){&s->root, s->sink, 0};
    tp_host_info_record(&s->env, o->agent);
    return true;
}

/* The live state (for the status line, /metrics and, with stack sampling
 * off, to see stalls begin: a line that can't be drawn costs nothing else),
 * its HTTP endpoint, and the writer thread: without it nothing would be
 * recorded, and the command is better not started than recorded into
 * nothing. False, said, when one can't be had (*rc as tp_record_session_run). */
static bool start_threads(session *s, int *rc)
{
    const tp_record_options *o = s->o;
    s->status_line = !o->quiet && isatty(STDERR_FILENO);
    if (o->serve || s->status_line || o->stacks_hz == 0)
        s->live = tp_live_new(o->interval_s);
    if (s->live)
        tp_live_set_stall_after(s->live, o->stall_after_s);
    if (o->serve) {
        char host[256] = "", err[512];
        gethostname(host, sizeof host - 1);
        s->http = s->live ? tp_http_start(o->serve, s->live, o->agent ? o->agent : host, host, err,
                                          sizeof err)
                          : NULL;
        if (!s->http) {
            tp_error("record: --serve: %s", s->live ? err : "out of memory");
            *rc = 2;
            return false;
        }
        fprintf(stderr, "trainprof: serving metrics at http://%s/metrics\n",
                tp_http_address(s->http));
    }
    s->wt_started = tp_writer_thread_start(&s->wt, s->sink, s->writer, s->live);
    if (!s->wt_started) {
        tp_error("record: cannot start the recorder's writer thread: %s (too little memory? see "
                 "ulimit -v); the command was not started",
                 strerror(errno));
        *rc = 1;
        return false;
    }
    return true;
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

/* The drain (timings: a run without it goes on, said unavailable), the
 * command, its registration for `top` and the sampler. False, said, when
 * the command could not run (*rc: the shell's status for that). */
static bool start_command(session *s, int *rc)
{
    const tp_record_options *o = s->o;
    char err[512];
    tp_ops_options ops;
    tp_ops_options_default(&ops);
    ops.off = o->ops_off == 1;
    ops.steps = (uint32_t)o->ops_steps;
    ops.every_ns = (int64_t)(o->ops_every_s * 1e9);
    ops.on_slow = o->ops_on_slow;
    s->drain = tp_drain_start(s->sink, &ops, (uint64_t)(o->interval_s * 1e9), err, sizeof err);
    if (s->drain)
        tp_http_on_capture(s->http, ask_capture, s->drain);
    else
        tp_sink_unavailable(s->sink, "timings", err);
    char **envp = child_environment(s->drain, o->stacks_hz);
    s->child = envp ? tp_child_spawn(o->command, envp) : -1;
    int spawn_errno = envp ? errno : ENOMEM;
    free_child_environment(envp);
    if (s->child < 0) {
        tp_error("cannot run '%s': %s", o->command[0], strerror(spawn_errno));
        *rc = tp_child_spawn_status(spawn_errno);
        return false;
    }
    /* the command has its own limit: the recorder's descriptors (a
     * connection and /proc files for each process) may outnumber the
     * training's, so its own soft limit goes up to the hard one */
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
        nofile.rlim_cur = nofile.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &nofile);
    }
    char pidbuf[32];
    snprintf(pidbuf, sizeof pidbuf, "%d", (int)s->child);
    tp_sink_meta(s->sink, TP_META_CHILD_PID, pidbuf);
    char why_unlisted[400]; /* lets `trainprof top` find this recording */
    if (!tp_registry_add(o->output, s->drain ? tp_drain_dir(s->drain) : "", why_unlisted,
                         sizeof why_unlisted))
        tp_warn("record: `trainprof top` will not see this recording: %s (the recording goes "
                "on)",
                why_unlisted);
    s->env.target_pid = s->child;
    if (!tp_sampler_start(&s->sampler, &s->env, TP_COLLECT_ALL, (uint64_t)(o->interval_s * 1e9))) {
        snprintf(err, sizeof err, "the recorder could not start its sampling thread: %s",
                 strerror(errno));
        tp_sink_unavailable(s->sink, "system metrics", err);
    }
    return true;
}

/* After the command (and what outlived it) ended: everything stopped in
 * order, the end written (through the sink, seen live, and again straight
 * into the file, where memory that ran out may have lost it), the file
 * closed and its summary and closing lines made. Returns the command's
 * exit status. */
static int finish(session *s, int wstatus, const stop_request *stop, uint64_t duration)
{
    if (s->status_line && s->live)
        tp_status_line_clear(stderr);
    stop_producers(s);
    tp_registry_remove();
    int exit_status = tp_child_exit_status(wstatus);
    tp_meta_rows end;
    tp_record_end_meta(&end, exit_status, wstatus, duration, stop, s->child);
    tp_record_end_losses(&end, s->sink);
    for (size_t i = 0; i < end.n; i++) /* the last batch, seen live too */
        tp_sink_meta(s->sink, end.keys[i], end.values[i]);
    stop_writing(s);
    tp_writer_metas(s->writer, end.keys, end.values, end.n);
    char lost[256];
    tp_record_losses(s->sink, lost, sizeof lost);
    if (lost[0])
        tp_writer_unavailable(s->writer, "recorder memory", lost);
    char behind[256];
    tp_record_behind(s->sink, behind, sizeof behind);
    if (behind[0])
        tp_writer_unavailable(s->writer, "recorder writer", behind);
    bool whole = tp_writer_finish(s->writer);
    release(s);
    tp_record_close(s->o->output,
                    &(tp_record_outcome){.command = s->command,
                                         .exit_status = exit_status,
                                         .duration_ns = duration,
                                         .write_failed = s->wt.failed,
                                         .lost = lost,
                                         .behind = behind,
                                         .wal_kept = !whole},
                    s->o->quiet);
    return exit_status;
}

int tp_record_session_run(const tp_record_options *o)
{
    session s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.sfd = -1;
    int rc = 1;
    (void)tp_threads_share_one_heap_under_address_limit(); /* before any thread starts */
    if (!start_file(&s, &rc) || !start_threads(&s, &rc) || !start_command(&s, &rc))
        return unwind(&s, rc);
    stop_request stop = {0, 0};
    tp_watch w = {.live = s.status_line || o->stacks_hz == 0 || o->serve ? s.live : NULL,
                  .status_line = s.status_line,
                  .ask_stacks = o->stacks_hz == 0,
                  .drain = s.drain,
                  .places.path = s.status_line || o->serve ? o->output : NULL};
    int wstatus = tp_supervise(s.child, s.sfd, &w, s.anchor.mono_ns, &stop);
    /* traced processes that outlived the command (a daemon it started) */
    if (!stop.signo && o->wait_after_exit_s > 0)
        tp_wait_for_outlivers(s.drain, s.sfd, o->wait_after_exit_s, &w, s.anchor.mono_ns, &stop);
    tp_watch_end(&w);
    return finish(&s, wstatus, &stop, tp_clock_mono_ns() - s.anchor.mono_ns);
}
