/* deaths.h: the traced processes that died before the command ended, and
 * the run's stop when a signal asked for it.
 *
 * From what the recorder wrote of each process's end (meta proc.PID.*,
 * record/process_ends.h, lib/facts.h's process facts; each node's in a
 * merged run): a process died when
 *   - an uncaught Python exception ended it (its type, message, frames);
 *   - a signal killed it ("signal N" from its zombie), the kernel's OOM
 *     killer where it killed at that end (oom_kills) and the signal was
 *     SIGKILL or unknown;
 *   - a rank's process (not a DataLoader worker) exited with a non-zero
 *     status, or (a Python process, whose stacks were sampled) ended without
 *     Python's shutdown and without a status (a crash, a signal whose zombie
 *     its parent reaped at once) inside a region or at least
 *     TP_DEATH_EARLY_S before the recording ended (a script's os._exit after
 *     its training is none).
 * A process that ended after record was asked to stop (a SIGTERM, SIGINT,
 * SIGHUP or SIGQUIT it passed on) is part of the stop, not a death. Each death's step is its rank's
 * (tp_course); its phase and last stack are the recorder's, written as it
 * ended (record/process_ends.h), so a merged summary says the same. No
 * words: render/ says them. */
#ifndef TP_ANALYZE_DEATHS_H
#define TP_ANALYZE_DEATHS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/rank_course.h"
#include "store/reader.h"

#define TP_DEATH_EARLY_S 2.0
/* how late the recorder may see a process's end on a busy machine */
#define TP_DEATH_SEEN_LATE_S 0.05
/* the same for a death of its own (deaths.c: earliest): a process killed
 * under load closed its connection 70 ms after its peer raised */
#define TP_DEATH_OWN_LATE_S 1.0

typedef enum {
    TP_DEATH_EXCEPTION, /* an uncaught Python exception */
    TP_DEATH_OOM,       /* the kernel's OOM killer */
    TP_DEATH_SIGNAL,    /* another signal */
    TP_DEATH_EXIT,      /* a non-zero exit status */
    TP_DEATH_VANISHED,  /* no Python shutdown, no status */
} tp_death_how;

typedef struct tp_death {
    int64_t agent_id, pid;
    int rank;    /* -1 none */
    bool worker; /* a DataLoader worker */
    tp_death_how how;
    int signal;      /* 0 none known */
    int exit_status; /* -1 none known */
    double end_s;    /* when its connection closed, since the run's start */
    double died_s;   /* when it died: its exception's time where it told one (a
                      later one is no earlier), else end_s */
    double alive_s;  /* its latest event's time (it died since), NaN unknown */
    size_t step;     /* its rank's step then (1 for the first), 0 unknown */
    /* a signal (the OOM killer's among them) ended it after its interpreter
     * had begun to shut down (its atexit handlers had run: the script was
     * over, its training with it): a library's teardown, its threads or
     * destructors, not the training's code; its step, phase and last stack
     * are from before */
    bool after_script;
    /* the run's texts (NULL none): the innermost region its training thread
     * had open as it ended, its sampler's last stack inside a region
     * ("function (file:line) < ...", innermost first), the exception */
    const char *phase, *stack;
    const char *exception_type, *exception_message, *exception_where;
    double rss_bytes; /* the training's processes' memory a second before, NaN unknown */
    /* a GPU out-of-memory's (PyTorch's message): the allocation it tried,
     * and what the device had free then; NaN where it told none */
    double oom_tried_bytes, oom_free_bytes;
} tp_death;

typedef struct tp_deaths {
    /* in the order they happened: by died_s where an exception tells its
     * time; else by the earliest the death can have been, the later of
     * alive_s and end_s less TP_DEATH_SEEN_LATE_S (the recorder sees a
     * connection close once it runs: a peer whose collective failed at
     * the death can raise before it does); TP_DEATH_OWN_LATE_S rather
     * than that for a death of its own (deaths.c: earliest) */
    tp_death *v;
    size_t n;
    /* the signal that asked the run to stop (record's stop_signal), NULL none */
    const char *stop_signal;
    double stop_s;
    size_t stop_step; /* the first rank's step then, 0 unknown */
} tp_deaths;

/* False (reason in err) when the file can't be read; tp_deaths_free in
 * every case. run_s: the recording's length. */
bool tp_deaths_build(tp_run *run, const tp_course *course, double run_s, tp_deaths *out, char *err,
                     size_t cap);
void tp_deaths_free(tp_deaths *d);

/* The step rank was in at t_s (1 for its first), 0 when its course is
 * unknown or it had begun none. */
size_t tp_course_step_at(const tp_course *course, int rank, double t_s);

#endif
