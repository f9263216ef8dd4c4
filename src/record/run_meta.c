/* run_meta.c: see run_meta.h. */
#include "record/run_meta.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/run_keys.h"
#include "trainprof_version.h"
#include "util/json_writer.h"
#include "util/log.h"
#include "util/utf8.h"

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

/* Appends value under key (when value is not NULL and room is left). */
static void meta_add(tp_meta_rows *m, const char *key, const char *value)
{
    if (m->n < sizeof m->keys / sizeof m->keys[0] && value)
        m->keys[m->n] = key, m->values[m->n] = value, m->n++;
}

static void meta_addf(tp_meta_rows *m, const char *key, const char *fmt, ...) TP_PRINTF(3, 4);
static void meta_addf(tp_meta_rows *m, const char *key, const char *fmt, ...)
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

/* TRAINPROF_DEVICE_TIMES=N's N where it is a whole 2 to 255 (the rule of
 * trainprof/patches/device.py's _period, which the command reads), else 1. */
static int device_times_every(const char *value)
{
    if (!value || !*value || strspn(value, "0123456789") != strlen(value))
        return 1;
    value += strspn(value, "0"); /* "0008" is 8, as int() reads it */
    if (strlen(value) > 3)
        return 1;
    int n = atoi(value);
    return n >= 2 && n <= 255 ? n : 1;
}

bool tp_record_start_meta(tp_writer *writer, const tp_record_options *o, const tp_clock_anchor *a,
                          char *command, size_t cap)
{
    char *words = command_text(o->command, false), *argv = command_text(o->command, true);
    tp_utf8_clean(command, cap, words ? words : o->command[0]);
    tp_meta_rows m = {.n = 0};
    meta_add(&m, TP_META_COMMAND, words ? words : command);
    meta_add(&m, TP_META_ARGV, argv);
    meta_add(&m, TP_META_VERSION, TRAINPROF_VERSION);
    meta_add(&m, TP_META_STATUS, "recording");
    meta_addf(&m, TP_META_START_WALL_NS, "%lld", (long long)a->wall_ns);
    meta_addf(&m, TP_META_START_MONO_NS, "%llu", (unsigned long long)a->mono_ns);
    meta_addf(&m, TP_META_CLOCK_UNCERTAINTY_NS, "%llu", (unsigned long long)a->uncertainty_ns);
    time_t secs = (time_t)(a->wall_ns / 1000000000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    meta_add(&m, TP_META_START_WALL, when);
    meta_addf(&m, TP_META_INTERVAL_S, "%g", o->interval_s);
    meta_addf(&m, TP_META_STACKS_HZ, "%g", o->stacks_hz);
    meta_addf(&m, TP_META_OPS, "%s", o->ops_off ? "off" : "on");
    meta_addf(&m, TP_META_OPS_STEPS, "%ld", o->ops_steps);
    meta_addf(&m, TP_META_OPS_EVERY_S, "%g", o->ops_every_s);
    meta_addf(&m, TP_META_OPS_ON_SLOW, "%g", o->ops_on_slow);
    if (o->stall_after_s > 0)
        meta_addf(&m, TP_META_STALL_AFTER_S, "%g", o->stall_after_s);
    int every = device_times_every(getenv("TRAINPROF_DEVICE_TIMES"));
    if (every > 1)
        meta_addf(&m, TP_META_DEVICE_TIMES_EVERY, "%d", every);
    meta_addf(&m, TP_META_RECORDER_PID, "%d", (int)getpid());
    bool ok = tp_writer_metas(writer, m.keys, m.values, m.n);
    free(words);
    free(argv);
    return ok;
}

void tp_record_end_meta(tp_meta_rows *m, int exit_status, int wstatus, uint64_t duration_ns,
                        const stop_request *stop, pid_t child)
{
    m->n = 0;
    meta_addf(m, TP_META_EXIT_STATUS, "%d", exit_status);
    /* the command's own end as the drain writes every traced process's
     * (record/process_ends.h): record reaped it, so its zombie told nobody */
    snprintf(m->child_key, sizeof m->child_key, "proc.%d." TP_META_PROC_STATUS, (int)child);
    if (WIFSIGNALED(wstatus))
        meta_addf(m, m->child_key, "signal %d", WTERMSIG(wstatus));
    else
        meta_addf(m, m->child_key, "exit %d", WEXITSTATUS(wstatus));
    if (stop->signo) {
        const char *name = sigabbrev_np(stop->signo);
        meta_addf(m, TP_META_STOP_SIGNAL, "SIG%s", name ? name : "?");
        meta_addf(m, TP_META_STOP_SIGNAL_NS, "%llu", (unsigned long long)stop->t_ns);
    }
    if (WIFSIGNALED(wstatus)) {
        const char *name = sigabbrev_np(WTERMSIG(wstatus));
        meta_addf(m, TP_META_EXIT_SIGNAL, "SIG%s", name ? name : "?");
    }
    meta_addf(m, TP_META_DURATION_NS, "%llu", (unsigned long long)duration_ns);
    meta_add(m, TP_META_STATUS, "finished");
}

void tp_record_end_losses(tp_meta_rows *m, tp_sink *sink)
{
    uint64_t events = tp_sink_events_not_kept(sink);
    if (events)
        meta_addf(m, TP_META_EVENTS_NOT_RECORDED, "%llu", (unsigned long long)events);
}

void tp_record_losses(tp_sink *sink, char *out, size_t cap)
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

void tp_record_behind(tp_sink *sink, char *out, size_t cap)
{
    uint64_t behind = tp_sink_behind(sink);
    out[0] = '\0';
    if (behind)
        snprintf(out, cap,
                 "%llu timing events were not recorded: they came faster than the run file could "
                 "take them (at most %u wait to be written)",
                 (unsigned long long)behind, TP_SINK_PENDING_EVENTS_MAX);
}
