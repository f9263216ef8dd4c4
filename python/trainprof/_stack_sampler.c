/* _stack_sampler.c: see _stack_sampler.h. */
#include "_stack_sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "_stacks.h"
#include "facts.h"
#include "self_read.h"
#include "stacks.h"
#include "trainprof.h"

static tp_stack_walker *snapshot_walker; /* the GIL guards it */

typedef struct snapshot {
    const tp_stack_walker *w;
    PyObject *threads; /* list */
    bool failed;
} snapshot;

static void add_thread(void *ctx, const tp_stack_thread *t, const tp_stack_frame *frames)
{
    snapshot *s = ctx;
    if (s->failed)
        return;
    PyObject *list = PyList_New((Py_ssize_t)t->nframes);
    for (size_t i = 0; list && i < t->nframes; i++) {
        PyObject *f = Py_BuildValue("(ssi)", tp_stack_code_function(s->w, frames[i].code),
                                    tp_stack_code_file(s->w, frames[i].code), frames[i].line);
        if (!f) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, f);
    }
    PyObject *row = list ? Py_BuildValue("(kiON)", t->thread_id, (int)t->native_tid,
                                         t->truncated ? Py_True : Py_False, list)
                         : NULL;
    if (!row || PyList_Append(s->threads, row) != 0)
        s->failed = true;
    Py_XDECREF(row);
}

PyObject *tp_py_stack_snapshot(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    if (!snapshot_walker && !(snapshot_walker = tp_stack_walker_new(PyInterpreterState_Get())))
        return PyErr_NoMemory();
    snapshot s = {snapshot_walker, PyList_New(0), false};
    if (!s.threads)
        return NULL;
    if (tp_stack_walk(snapshot_walker, NULL, add_thread, &s) < 0 || s.failed) {
        Py_DECREF(s.threads);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "the interpreter's threads could not be read");
        return NULL;
    }
    return s.threads;
}

/* ---- the sampler thread ---- */

#define STAT_FDS 64 /* threads whose /proc stat file stays open */

typedef struct sampler {
    pthread_t thread;
    bool running;
    atomic_bool stop;
    uint64_t period_ns;
    /* stacks off: a sample of every thread only when the recorder asks
     * (tp_threads_stacks_wanted), looked for once a second */
    bool standby;
    uint32_t served; /* the last request answered */
    tp_stack_walker *walker;
    uint32_t generation; /* the walker's code table the map below is of */
    uint32_t *frame_of;  /* code id -> frame id sent through the ring; 0: not yet */
    size_t cap;
    uint32_t next_frame; /* the last frame id given */
    tp_stack_ref refs[TP_STACK_FRAMES_MAX];
    uint64_t t_ns; /* this round's time */
    int32_t tid;   /* the thread being read, and its open region (before_thread) */
    uint32_t phase;
    bool own; /* it ran trainprof's own work in C (tp_own_work) */
    /* when each thread is read (see due): by kernel thread id */
    struct paced {
        int32_t tid;          /* 0: a free slot */
        uint32_t seen;        /* the list refresh that last listed it */
        uint64_t cpu_ns;      /* its CPU time at its last look */
        uint64_t last_round;  /* the round of its last look */
        uint64_t next_round;  /* the round it is looked at again */
        uint32_t backoff;     /* rounds between looks while it is idle */
        uint64_t idle_rounds; /* rounds it has stayed idle, in a row */
        uint64_t patience;    /* idle rounds before it is looked at less often (0: not set) */
        bool sampled;         /* its last sample reached the ring */
        bool idle;            /* ... and the kernel had it waiting */
    } * paced, *spare;        /* PACED_SLOTS each: the table, and room to rebuild it */
    uint64_t round;           /* rounds sampled */
    _Atomic uint64_t rounds, reads, repeats; /* for the tests: rounds, stacks read, repeats */
    uint32_t refreshes;                      /* list refreshes */
    uint64_t next_refresh;                   /* the round of the next one */
    uint32_t sleep_rounds;                   /* rounds the next sleep lasts (1 but idle) */
    uint32_t max_backoff;                    /* a second's rounds */
    tp_self_reader rings;                    /* reads the threads' rings (their open regions) */
    tp_self_read_guard guard;                /* whether this thread may read the process's memory */
    int32_t stat_tid[STAT_FDS];              /* threads whose stat file is open (0: a free slot) */
    int stat_fd[STAT_FDS];
    unsigned stat_next;
} sampler;

static sampler the_sampler;

/* The frame id of a code for this ring, sending its text the first time;
 * 0 when it could not be sent (the ring was full: tried again next time). */
static uint32_t frame_of_code(sampler *s, uint32_t code)
{
    if (tp_stack_code_generation(s->walker) != s->generation) {
        s->generation = tp_stack_code_generation(s->walker);
        if (s->frame_of)
            memset(s->frame_of, 0, s->cap * sizeof *s->frame_of);
    }
    if (code >= s->cap) {
        size_t cap = s->cap ? s->cap : 1024;
        while (cap <= code)
            cap *= 2;
        uint32_t *p = realloc(s->frame_of, cap * sizeof *p);
        if (!p)
            return 0;
        memset(p + s->cap, 0, (cap - s->cap) * sizeof *p);
        s->frame_of = p, s->cap = cap;
    }
    if (s->frame_of[code])
        return s->frame_of[code];
    char text[TP_FRAME_TEXT_MAX + 1];
    int n = snprintf(text, sizeof text, "%s\n%s", tp_stack_code_function(s->walker, code),
                     tp_stack_code_file(s->walker, code));
    uint32_t id = s->next_frame + 1;
    if (id > TP_FRAMES_MAX ||
        !tp_frame_send(id, text, (size_t)(n < (int)sizeof text ? n : (int)sizeof text - 1)))
        return 0;
    s->next_frame = id;
    return s->frame_of[code] = id;
}

/* The open /proc/self/task/TID/stat of thread tid, kept between rounds
 * (one pread a sample instead of open, read, close); -1 when it can't be
 * opened. A slot whose thread is gone is taken again. */
static int stat_fd(sampler *s, int32_t tid)
{
    size_t free_slot = STAT_FDS;
    for (size_t i = 0; i < STAT_FDS; i++) {
        if (s->stat_tid[i] == tid)
            return s->stat_fd[i];
        if (s->stat_tid[i] == 0 && free_slot == STAT_FDS)
            free_slot = i;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (free_slot == STAT_FDS) { /* all taken: the next in turn goes */
        free_slot = s->stat_next++ % STAT_FDS;
        close(s->stat_fd[free_slot]);
    }
    s->stat_tid[free_slot] = tid;
    s->stat_fd[free_slot] = fd;
    return fd;
}

static void forget_stat_fd(sampler *s, int32_t tid)
{
    for (size_t i = 0; i < STAT_FDS; i++)
        if (s->stat_tid[i] == tid) {
            close(s->stat_fd[i]);
            s->stat_tid[i] = 0;
        }
}

/* The kernel's state of thread tid (its stat file's third field: 'R'
 * running or runnable, 'S' asleep, 'D' in uninterruptible sleep, ...); 0
 * unknown. */
static char thread_state(sampler *s, int32_t tid)
{
    char buf[512];
    int fd = stat_fd(s, tid);
    ssize_t n = fd >= 0 ? pread(fd, buf, sizeof buf - 1, 0) : -1;
    if (n <= 0) { /* the thread is gone (ESRCH), or a tid reused: open it anew next time */
        forget_stat_fd(s, tid);
        return 0;
    }
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')'); /* the name may hold anything */
    return paren && paren[1] == ' ' ? paren[2] : 0;
}

/* ---- pacing: idle threads cost almost nothing ---- */

#define PACED_SLOTS     8192 /* twice the walker's THREADS_MAX: a power of two */
#define REFRESH_SECONDS 10   /* the whole list read again at least this often */
/* a thread idle for a tenth of a second (of its rounds) is looked at less
 * often from then on; each time it then works again while put off, four
 * times as long, up to 30 s: a thread that works in bursts (a DataLoader
 * worker) soon stays looked at every round, its bursts sampled */
#define IDLE_BEFORE_BACKOFF      10
#define PATIENCE_MAX_S           30
#define TRAINING_BACKOFF_DIVISOR 10 /* a training thread: put off a tenth as long */

/* Thread tid's CPU time (ns) from its per-thread CPU clock, the kernel's
 * MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED); UINT64_MAX when it can't be
 * read (the thread is gone). One system call, no file. */
static uint64_t thread_cpu_ns(int32_t tid)
{
    clockid_t clock = (clockid_t)((~(uint32_t)tid << 3) | 6u);
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0)
        return UINT64_MAX;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Thread tid's slot in table (made where it had none); NULL when full. */
static struct paced *slot_in(struct paced *table, int32_t tid)
{
    size_t mask = PACED_SLOTS - 1, i = ((uint32_t)tid * 2654435761u) & mask;
    for (size_t probes = 0; probes < PACED_SLOTS; probes++, i = (i + 1) & mask) {
        if (table[i].tid == tid)
            return &table[i];
        if (table[i].tid == 0) {
            table[i] = (struct paced){.tid = tid, .backoff = 1};
            return &table[i];
        }
    }
    return NULL;
}

static struct paced *paced_of(sampler *s, int32_t tid) { return slot_in(s->paced, tid); }

/* After a refresh: the slots of threads it no longer listed are emptied
 * (the table rebuilt, in the spare one, from those it did). */
static void forget_gone(sampler *s)
{
    memset(s->spare, 0, PACED_SLOTS * sizeof *s->spare);
    for (size_t i = 0; i < PACED_SLOTS; i++)
        if (s->paced[i].tid && s->paced[i].seen == s->refreshes) {
            struct paced *p = slot_in(s->spare, s->paced[i].tid);
            if (p)
                *p = s->paced[i];
        }
    struct paced *old = s->paced;
    s->paced = s->spare;
    s->spare = old;
}

/* The longest a training thread is put off: a tenth of a second's rounds. */
static uint32_t training_backoff(const sampler *s)
{
    return s->max_backoff / TRAINING_BACKOFF_DIVISOR ? s->max_backoff / TRAINING_BACKOFF_DIVISOR
                                                     : 1;
}

/* Whether thread t is read this round (tp_stack_due_fn). A thread the
 * kernel had waiting at its last sample whose CPU time has not moved since
 * cannot have moved its stack: its last sample stands again for the rounds
 * since (a TP_STACK_REPEAT event, no read). Once it has stayed so for a
 * tenth of a second it is looked at after twice as many rounds each time,
 * up to a second's (a tenth of a second's for a training thread, one with
 * a ring): a pool of idle threads costs a clock read a second each. A thread found to have worked
 * while put off waits four times as long before the next time (up to 30 s idle): one that works in
 * bursts (a DataLoader worker between batches) is soon looked at every round. One that ran is read,
 * its skipped rounds given to its last sample first (a burst after a long wait is seen up to a
 * second late). Threads without a kernel id (Python before 3.11) are read every round. */
static uint32_t due(void *ctx, const tp_stack_thread *t)
{
    sampler *s = ctx;
    struct paced *p = t->native_tid > 0 ? paced_of(s, t->native_tid) : NULL;
    if (!p)
        return 0;
    p->seen = s->refreshes;
    if (p->next_round > s->round) /* listed again by a refresh before its time */
        return (uint32_t)(p->next_round - s->round);
    uint64_t cpu = thread_cpu_ns(p->tid), rounds = s->round - p->last_round;
    uint32_t count = rounds > UINT32_MAX ? UINT32_MAX : (uint32_t)rounds;
    p->last_round = s->round;
    if (p->sampled && p->idle && cpu != UINT64_MAX && cpu == p->cpu_ns) {
        if (!tp_stack_repeat_send(s->t_ns, p->tid, count))
            p->sampled = false; /* a ring full: read it next time */
        atomic_fetch_add_explicit(&s->repeats, 1, memory_order_relaxed);
        p->idle_rounds += count;
        if (!p->patience)
            p->patience = s->max_backoff / IDLE_BEFORE_BACKOFF + 1;
        if (p->idle_rounds >= p->patience) {
            /* a training thread (one with a ring) waits a tenth of the others'
             * longest: its work after a long wait (the first batch, a barrier)
             * is seen within 0.1 s, not a second (a short training's whole) */
            uint32_t most = tp_thread_has_ring(p->tid) ? training_backoff(s) : s->max_backoff;
            p->backoff = p->backoff * 2 < most ? p->backoff * 2 : most;
        }
        /* on a multiple of its backoff: idle threads come due together, and
         * where all are idle the sampler sleeps through the rounds between */
        p->next_round = (s->round / p->backoff + 1) * p->backoff;
        return (uint32_t)(p->next_round - s->round);
    }
    if (p->sampled && count > 1)
        tp_stack_repeat_send(s->t_ns, p->tid, count - 1);
    if (p->backoff > 1) /* it worked while put off: more patience before the next time */
        p->patience = p->patience * 4 < (uint64_t)s->max_backoff * PATIENCE_MAX_S
                          ? p->patience * 4
                          : (uint64_t)s->max_backoff * PATIENCE_MAX_S;
    p->cpu_ns = cpu;
    p->backoff = 1;
    p->idle_rounds = 0;
    p->next_round = s->round + 1;
    return 0;
}

/* The thread's kernel id, and the region it has open, read just before its
 * state (its innermost frame's pointer with it): the phase of the moment
 * that frame is, or earlier (sample_thread reads it again after). */
static void before_thread(void *ctx, const tp_stack_thread *t)
{
    sampler *s = ctx;
    s->tid = t->native_tid ? t->native_tid : tp_thread_tid_of(t->thread_id);
    s->own = false;
    s->phase = s->tid > 0 ? tp_thread_open_region(&s->rings, s->tid, &s->own) : 0;
}

static void sample_thread(void *ctx, const tp_stack_thread *t, const tp_stack_frame *frames)
{
    sampler *s = ctx;
    int32_t tid = s->tid;
    uint64_t flags = (t->truncated ? TP_STACK_TRUNCATED : 0) | (s->own ? TP_STACK_OWN : 0);
    char state = tid > 0 ? thread_state(s, tid) : 0;
    if (state)
        flags |= TP_STACK_STATE | (state == 'R' ? TP_STACK_ON_CPU : 0) |
                 (state == 'D' ? TP_STACK_BLOCKED : 0);
    for (size_t i = 0; i < t->nframes; i++)
        s->refs[i] = (tp_stack_ref){frame_of_code(s, frames[i].code), frames[i].line};
    /* the region open now, against the one read before the frames: a thread
     * that changed regions between the two (the sampler put off between
     * its reads, on a busy machine) would pair its stack with another
     * phase's (beside two CPU burners the module's line outweighed the
     * hot function of "load"): that sample is not sent */
    bool own_after = false;
    bool same = tid <= 0 || (tp_thread_open_region(&s->rings, tid, &own_after) == s->phase &&
                             own_after == s->own); /* nor one that went in or out of our own work */
    bool sent = same && tp_stack_send(s->t_ns, tid, s->phase, flags, s->refs, (uint32_t)t->nframes);
    atomic_fetch_add_explicit(&s->reads, 1, memory_order_relaxed);
    struct paced *p = tid > 0 && s->paced && !s->standby ? paced_of(s, tid) : NULL;
    if (p) {
        p->sampled = sent;
        p->idle = state && state != 'R'; /* known, and waiting */
    }
}

/* Tells the recorder, once per process, that no stack could be read, and
 * why (lib/facts.h: it keeps one row for all the processes). */
static void say_unavailable(const char *why)
{
    char text[TP_FACT_TEXT_MAX + 1];
    int n = snprintf(text, sizeof text, TP_FACT_STACKS_UNAVAILABLE "=%s", why ? why : "unknown");
    if (n > 0 && tp_active())
        tp_fact_send(text, (size_t)n < sizeof text ? (size_t)n : sizeof text - 1);
}

static void *sample_loop(void *arg)
{
    sampler *s = arg; /* born with every signal blocked (tp_py_start_stacks) */
    pthread_setname_np(pthread_self(), TP_SAMPLER_THREAD_NAME);
    /* no recorder takes this thread's ring: nothing to sample for (standing
     * by, the ring is made at the first request only) */
    if (!s->standby && !tp_active())
        return NULL;
    tp_self_read_guard_init(&s->guard); /* its status file: this thread's */
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!atomic_load(&s->stop)) {
        uint64_t at = (uint64_t)next.tv_sec * 1000000000u + (uint64_t)next.tv_nsec +
                      s->period_ns * (s->sleep_rounds ? s->sleep_rounds : 1);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        uint64_t now_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
        if (at + s->period_ns < now_ns) /* fell behind (suspended, overloaded): no catch-up burst */
            at = now_ns;
        next.tv_sec = (time_t)(at / 1000000000u), next.tv_nsec = (long)(at % 1000000000u);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
            ;
        if (atomic_load(&s->stop))
            break;
        /* before any read: a seccomp filter that kills process_vm_readv
         * (and one added since the last round) is found by a probe, not by
         * the training's death */
        if (tp_self_read_check(&s->guard) == TP_SELF_READ_NONE) {
            say_unavailable(s->guard.why);
            break; /* a filter is never lifted */
        }
        if (s->standby) {
            uint32_t wanted = tp_threads_stacks_wanted(&s->rings);
            if (wanted == s->served)
                continue;
            s->served = wanted;
            if (!tp_active())
                break;
        }
        s->t_ns = tp_clock_now_ns();
        if (s->standby) { /* one sample of every thread, asked for */
            if (tp_stack_walk(s->walker, before_thread, sample_thread, s) < 0)
                break; /* the interpreter is gone */
            continue;
        }
        /* the list of threads read again every REFRESH_SECONDS (and when a
         * thread started); in between, only the threads due are visited */
        bool refresh = s->round >= s->next_refresh;
        if (refresh)
            s->next_refresh = s->round + (uint64_t)s->max_backoff * REFRESH_SECONDS;
        s->refreshes += refresh;
        if (tp_stack_walk_due(s->walker, refresh, due, before_thread, sample_thread, s) < 0)
            break; /* the interpreter is gone */
        if (refresh)
            forget_gone(s);
        s->round++;
        /* every thread put off (a process idle, a DataLoader worker waiting
         * for its next batch): sleep through the rounds none is due for, up
         * to the next refresh; a thread started meanwhile is seen at the wake */
        uint64_t idle = tp_stack_walker_idle_walks(s->walker);
        if (idle > s->next_refresh - s->round)
            idle = s->next_refresh - s->round;
        tp_stack_walker_skip(s->walker, (uint32_t)idle);
        s->round += idle;
        s->sleep_rounds = (uint32_t)idle + 1;
        atomic_store_explicit(&s->rounds, s->round, memory_order_relaxed);
    }
    tp_self_read_guard_close(&s->guard);
    return NULL;
}

PyObject *tp_py_start_stacks(PyObject *self, PyObject *arg)
{
    (void)self;
    double hz = PyFloat_AsDouble(arg);
    if (hz == -1.0 && PyErr_Occurred())
        return NULL;
    if (!(hz >= 0 && hz <= 1000)) {
        PyErr_SetString(PyExc_ValueError, "stack sampling rate: 0 <= hz <= 1000 (0: on request)");
        return NULL;
    }
    sampler *s = &the_sampler;
    if (s->running && s->walker && tp_stack_walker_owned(s->walker))
        Py_RETURN_FALSE; /* already sampling this process */
    /* a forked child: the parent's thread is not here; its state is stale,
     * and its open stat files name the parent's threads */
    tp_stack_walker_free(s->walker);
    free(s->frame_of);
    free(s->paced);
    free(s->spare);
    for (size_t i = 0; i < STAT_FDS; i++)
        if (s->stat_tid[i])
            close(s->stat_fd[i]);
    tp_self_reader_close(&s->rings);
    memset(s, 0, sizeof *s);
    tp_self_reader_init(&s->rings);
    s->walker = tp_stack_walker_new(PyInterpreterState_Get());
    if (!s->walker)
        return PyErr_NoMemory();
    s->standby = hz == 0;
    s->period_ns = s->standby ? 1000000000u : (uint64_t)(1e9 / hz);
    s->max_backoff = hz >= 1 ? (uint32_t)hz : 1;
    s->paced = s->standby ? NULL : calloc(PACED_SLOTS, sizeof *s->paced);
    s->spare = s->standby ? NULL : calloc(PACED_SLOTS, sizeof *s->spare);
    if (!s->standby && (!s->paced || !s->spare)) {
        free(s->paced);
        free(s->spare);
        s->paced = s->spare = NULL;
        tp_stack_walker_free(s->walker);
        s->walker = NULL;
        return PyErr_NoMemory();
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    /* signals are the training's: the thread inherits a mask that blocks
     * them all, so none is ever delivered to it. Blocked only once it ran,
     * a SIGTERM sent in between could land on it, and the training's
     * Python handler waited for its main thread to wake (a 60 s sleep:
     * 3 runs in 100 beside CPU burners) */
    sigset_t all, was;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &was);
    int started = pthread_create(&s->thread, &attr, sample_loop, s);
    pthread_sigmask(SIG_SETMASK, &was, NULL);
    pthread_attr_destroy(&attr);
    if (started != 0) {
        tp_stack_walker_free(s->walker);
        s->walker = NULL;
        Py_RETURN_FALSE;
    }
    s->running = true;
    Py_RETURN_TRUE;
}

PyObject *tp_py_stop_stacks(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    sampler *s = &the_sampler;
    if (!s->running || !tp_stack_walker_owned(s->walker))
        Py_RETURN_NONE;
    atomic_store(&s->stop, true);
    Py_BEGIN_ALLOW_THREADS pthread_join(s->thread, NULL);
    Py_END_ALLOW_THREADS s->running = false;
    Py_RETURN_NONE;
}

PyObject *tp_py_stack_sampler_counts(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    sampler *s = &the_sampler;
    return Py_BuildValue("(KKK)", (unsigned long long)atomic_load(&s->rounds),
                         (unsigned long long)atomic_load(&s->reads),
                         (unsigned long long)atomic_load(&s->repeats));
}
