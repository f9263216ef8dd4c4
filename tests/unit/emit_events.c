/* emit_events.c: a small instrumented program for test_timings: it emits
 * one scenario's events through libtrainprof and exits 0 when what it saw
 * itself (active, dropped) is as expected.
 * usage: emit_events
 * nested|spans|threads|overflow|fork|slow_epochs|device|late_rank|many_names|fork_many|flood [S]|
 * fork_while_attaching|stacks|facts|blocked [S]|hold_d [S]|none */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "facts.h"
#include "sanitized.h"
#include "stacks.h"
#include "trainprof.h"

static void *thread_body(void *arg)
{
    static tp_site site = TP_SITE("threaded");
    int n = *(int *)arg;
    for (int i = 0; i < n; i++) {
        tp_region_begin(&site);
        tp_region_end(&site);
    }
    return NULL;
}

static int nested_regions(void)
{
    static tp_site outer = TP_SITE("outer");
    tp_epoch(0);
    for (int i = 0; i < 10; i++) {
        tp_step();
        tp_region_begin(&outer);
        {
            TP_SCOPE("inner");
            usleep(100);
        }
        tp_region_end(&outer);
    }
    tp_epoch(1);
    tp_step();
    return tp_active() && tp_dropped() == 0 ? 0 : 1;
}

/* Spans measured after the fact: one inside an open region, one reversed
 * (ignored), one at top level, 1000 ns to 3000 ns after a fixed start; and a
 * step learnt late at 1000 ns, ended (none begun) at 3000 ns. */
static int spans(void)
{
    static tp_site outer = TP_SITE("span_outer");
    uint32_t comm = tp_name_intern("comm");
    uint64_t t0 = tp_clock_now_ns();
    tp_region_begin(&outer);
    tp_span(comm, t0 + 1000, t0 + 3000);
    tp_span(comm, t0 + 5000, t0 + 4000);
    tp_region_end(&outer);
    tp_span(comm, t0 + 1000, t0 + 3000);
    tp_step_at(t0 + 1000);
    tp_step_end_at(t0 + 3000);
    tp_epoch_at(7, t0 + 500);
    return tp_active() && tp_dropped() == 0 ? 0 : 1;
}

/* Device times reported after the regions closed, as CUDA events resolve:
 * three "kernel" regions, device times 1, 2 and 3 ms, the third for a name
 * this thread sends no region of (its text goes with the device time). */
static int device_times(void)
{
    static tp_site kernel = TP_SITE("kernel");
    uint64_t starts[2];
    for (int i = 0; i < 2; i++) {
        starts[i] = tp_clock_now_ns();
        tp_region_begin(&kernel);
        tp_region_end(&kernel);
    }
    for (int i = 0; i < 2; i++)
        tp_device_time(kernel.id, starts[i], (uint64_t)(i + 1) * 1000000u);
    tp_device_time(tp_name_intern("copy"), starts[1], 3000000u);
    return tp_active() && tp_dropped() == 0 ? 0 : 1;
}

static int two_threads(void)
{
    pthread_t t[2];
    int n = 500;
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, thread_body, &n);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    return 0;
}

/* Two threads send events with no rank in the environment, then the process
 * learns its rank (as from torch.distributed), then a third thread starts. */
static int late_rank(void)
{
    static tp_site before = TP_SITE("before_rank");
    tp_region_begin(&before);
    tp_region_end(&before);
    int n = 3;
    pthread_t t;
    pthread_create(&t, NULL, thread_body, &n);
    pthread_join(t, NULL);
    usleep(50000); /* the exited thread's ring is let go before the rank comes */
    tp_set_rank(5, 1, 8);
    pthread_create(&t, NULL, thread_body, &n);
    pthread_join(t, NULL);
    return 0;
}

static int overflow(void)
{
    static tp_site site = TP_SITE("tight");
    for (int i = 0; i < 200000; i++) {
        tp_region_begin(&site);
        tp_region_end(&site);
    }
    return tp_dropped() > 0 ? 0 : 1;
}

static int forking(void)
{
    static tp_site parent = TP_SITE("parent_work");
    static tp_site child = TP_SITE("child_work");
    tp_region_begin(&parent);
    pid_t pid = fork();
    if (pid == 0) {
        tp_region_begin(&child);
        tp_region_end(&child);
        _exit(tp_active() ? 0 : 1);
    }
    int status;
    waitpid(pid, &status, 0);
    tp_region_end(&parent);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}

/* 200 children at once, each with 10 regions, holding their connection to
 * the recorder for 0.3 s: more than a recorder under `ulimit -n 64` can
 * accept at a time. */
static int forking_many(void)
{
    static tp_site child = TP_SITE("many_children");
    pid_t pids[200];
    for (int i = 0; i < 200; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            for (int k = 0; k < 10; k++) {
                tp_region_begin(&child);
                tp_region_end(&child);
            }
            usleep(300000);
            _exit(tp_active() ? 0 : 1);
        }
    }
    int failed = 0;
    for (int i = 0; i < 200; i++) {
        int status;
        waitpid(pids[i], &status, 0);
        failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    return failed ? 1 : 0;
}

static void *attach_once(void *arg)
{
    (void)arg;
    static tp_site site = TP_SITE("attaching");
    tp_region_begin(&site);
    tp_region_end(&site);
    return NULL;
}

/* The daemon pattern that once hung: a child forks again while a thread of
 * its own makes the child's first connection (holding the channel lock);
 * the grandchild's one region must not wait on that lock. 200 rounds, the
 * fork put off by 0 to 95 us so that it falls across the attach; a
 * grandchild that hangs is ended by its alarm. */
static int fork_while_attaching(void)
{
#if TP_TEST_SANITIZED
    return 77; /* the sanitizers' runtimes hang here on locks of their own a fork copied held */
#endif
    static tp_site site = TP_SITE("grandchild_work");
    int failed = 0;
    for (int round = 0; round < 1000 && !failed; round++) {
        pid_t child = fork();
        if (child == 0) {
            pthread_t t;
            if (pthread_create(&t, NULL, attach_once, NULL) != 0)
                _exit(3);
            for (volatile int spin = 0; spin < (round % 100) * 300; spin++)
                ;
            pid_t grandchild = fork();
            if (grandchild == 0) {
                alarm(10);
                tp_region_begin(&site);
                tp_region_end(&site);
                _exit(tp_active() ? 0 : 4);
            }
            int status = 0;
            waitpid(grandchild, &status, 0);
            pthread_join(t, NULL);
            _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status));
        }
        int status = 0;
        waitpid(child, &status, 0);
        failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        if (failed)
            fprintf(stderr, "fork_while_attaching: round %d: child status %#x\n", round, status);
    }
    return failed;
}

static int without_recorder(void)
{
    unsetenv("TRAINPROF_SOCKET");
    static tp_site site = TP_SITE("nobody_listens");
    for (int i = 0; i < 1000; i++) {
        tp_region_begin(&site);
        tp_region_end(&site);
    }
    tp_step();
    return !tp_active() && tp_dropped() == 0 ? 0 : 1;
}

/* Two epochs of six 100 ms steps of 32 samples: long enough for energy.
 * Each step launches a "kernel" region whose device time, 40 ms plus a
 * microsecond per step, is reported at the next step, as CUDA events would. */
static int slow_epochs(void)
{
    static tp_site kernel = TP_SITE("kernel");
    uint64_t launched = 0;
    for (int e = 0; e < 2; e++) {
        tp_epoch(e);
        for (int i = 0; i < 6; i++) {
            tp_step();
            tp_samples(32);
            if (launched)
                tp_device_time(kernel.id, launched, 40000000u + (uint64_t)(e * 6 + i) * 1000u);
            launched = tp_clock_now_ns();
            tp_region_begin(&kernel);
            tp_region_end(&kernel);
            usleep(100000);
        }
    }
    tp_step();
    return 0;
}

/* 70,000 distinct region names, one region each, slowly enough for the
 * ring: the first 65,535 keep their names, the rest are "(other)". */
static int many_names(void)
{
    char name[32];
    for (int i = 0; i < 70000; i++) {
        snprintf(name, sizeof name, "name %d", i);
        uint32_t id = tp_name_intern(name);
        tp_begin(id);
        tp_end(id);
        if (i % 1000 == 999)
            usleep(20000);
    }
    return tp_active() && tp_dropped() == 0 ? 0 : 1;
}

/* Regions as fast as the thread can make them, for seconds (1.5 unless
 * told): more than the recorder can write as they come (a recorder short of
 * memory, or whose writer is too far behind, loses some, and says how many). */
static int flood(double seconds)
{
    static tp_site site = TP_SITE("flood");
    uint64_t end = tp_clock_now_ns() + (uint64_t)(seconds * 1e9);
    while (tp_clock_now_ns() < end)
        for (int i = 0; i < 1000; i++) {
            tp_region_begin(&site);
            tp_region_end(&site);
        }
    return tp_active() ? 0 : 1;
}

/* This thread's CPU time, ns. */
static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Steps of about 1 ms of this thread's CPU time for seconds, each with 100
 * regions C code opened around a part of it: their cost, 100 pairs of tens
 * of ns, is half of trainprof's 1 % budget (a binding's 200 ns would be
 * twice it). */
static int c_steps(double seconds)
{
    static tp_site site = TP_SITE("part");
    uint64_t end = tp_clock_now_ns() + (uint64_t)(seconds * 1e9);
    volatile uint64_t sink = 0;
    while (tp_clock_now_ns() < end) {
        tp_step();
        uint64_t until = cpu_ns() + 1000000;
        for (int i = 0; i < 100; i++) {
            tp_region_begin(&site);
            for (int k = 0; k < 1000; k++)
                sink = sink + (uint64_t)k;
            tp_region_end(&site);
        }
        while (cpu_ns() < until)
            sink = sink + 1;
    }
    return tp_active() ? 0 : 1;
}

/* What a stack sampler sends (lib/stacks.h), without Python: three frames
 * defined once, and 20 samples of this thread inside region "phase", the
 * last one's two outer frames dropped. */
static int stacks(void)
{
    static tp_site site = TP_SITE("phase");
    tp_region_begin(&site);
    static const char *const texts[] = {"main\nemit.py", "load\nemit.py", "decode\nio.py"};
    for (uint32_t f = 0; f < 3; f++)
        if (!tp_frame_send(f + 1, texts[f], strlen(texts[f])))
            return 1;
    int32_t tid = (int32_t)gettid();
    tp_self_reader rings;
    tp_self_reader_init(&rings);
    for (int i = 0; i < 20; i++) {
        /* innermost first; its line changes every 5 samples: runs of 5, 5, 5, 4;
         * the last 5 in trainprof's own work */
        tp_stack_ref refs[3] = {{3, 12 + i / 5 % 2}, {2, 40}, {1, 7}};
        uint32_t n = i == 19 ? 1 : 3;
        if (i == 15 && tp_own_work(1) != 0)
            return 1;
        bool own;
        uint32_t phase = tp_thread_open_region(&rings, tid, &own);
        if (!tp_stack_send(tp_clock_now_ns(), tid, phase,
                           TP_STACK_STATE | TP_STACK_ON_CPU | (i == 19 ? TP_STACK_TRUNCATED : 0) |
                               (own ? TP_STACK_OWN : 0),
                           refs, n))
            return 1;
    }
    if (tp_own_work(0) != 1)
        return 1;
    tp_self_reader_close(&rings);
    tp_region_end(&site);
    return 0;
}

static double blocked_seconds;

static int sleep_then_exit(void *arg)
{
    (void)arg;
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* ends with the thread that waits for it */
    struct timespec ts = {(time_t)blocked_seconds,
                          (long)((blocked_seconds - (time_t)blocked_seconds) * 1e9)};
    nanosleep(&ts, NULL);
    _exit(0);
}

/* Held in state D for blocked_seconds: the parent of a vfork child that
 * sleeps that long (a reading thread's wait on storage, as /proc shows it). */
static void *block_a_while(void *arg)
{
    (void)arg;
    static char stack[64 * 1024];
    pid_t child =
        clone(sleep_then_exit, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
    if (child > 0)
        waitpid(child, NULL, 0);
    return NULL;
}

/* Steps every 10 ms on the main thread for `seconds` while a second thread
 * is held in state D as long: the training's threads waiting on storage,
 * its main thread not. */
static int blocked_thread(double seconds)
{
    blocked_seconds = seconds;
    pthread_t thread;
    if (pthread_create(&thread, NULL, block_a_while, NULL) != 0)
        return 1;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        tp_step();
        usleep(10000);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
    pthread_join(thread, NULL);
    return 0;
}

/* A thread held in state D for `seconds`, and nothing sent to the recorder:
 * a helper of a training stuck on storage (its process in the tree, no
 * progress of its own); it and its vfork child end with its parent. */
static int hold_d(double seconds)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* ends with the training that started it */
    blocked_seconds = seconds;
    pthread_t thread;
    if (pthread_create(&thread, NULL, block_a_while, NULL) != 0)
        return 1;
    pthread_join(thread, NULL);
    return 0;
}

/* Facts as the Python side sends them, then one the sender refuses. */
static int facts(void)
{
    static const char *const good[] = {"model.device=cpu", "loader.num_workers=3"};
    for (size_t i = 0; i < 2; i++)
        if (!tp_fact_send(good[i], strlen(good[i])))
            return 1;
    return tp_fact_send("Bad Key=x", 9) ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    /* the GPU this process drives, as a CUDA runtime names it (its UUID) */
    const char *device = getenv("EMIT_CUDA_DEVICE");
    char fact[TP_FACT_TEXT_MAX + 1];
    if (device && snprintf(fact, sizeof fact, "%s=%s", TP_FACT_DEVICE, device) < (int)sizeof fact)
        tp_fact_send(fact, strlen(fact));
    if (strcmp(mode, "nested") == 0)
        return nested_regions();
    if (strcmp(mode, "spans") == 0)
        return spans();
    if (strcmp(mode, "threads") == 0)
        return two_threads();
    if (strcmp(mode, "overflow") == 0)
        return overflow();
    if (strcmp(mode, "fork") == 0)
        return forking();
    if (strcmp(mode, "device") == 0)
        return device_times();
    if (strcmp(mode, "slow_epochs") == 0)
        return slow_epochs();
    if (strcmp(mode, "late_rank") == 0)
        return late_rank();
    if (strcmp(mode, "fork_many") == 0)
        return forking_many();
    if (strcmp(mode, "fork_while_attaching") == 0)
        return fork_while_attaching();
    if (strcmp(mode, "many_names") == 0)
        return many_names();
    if (strcmp(mode, "flood") == 0)
        return flood(argc > 2 ? atof(argv[2]) : 1.5);
    if (strcmp(mode, "c_steps") == 0)
        return c_steps(argc > 2 ? atof(argv[2]) : 2);
    if (strcmp(mode, "stacks") == 0)
        return stacks();
    if (strcmp(mode, "facts") == 0)
        return facts();
    if (strcmp(mode, "blocked") == 0)
        return blocked_thread(argc > 2 ? atof(argv[2]) : 2);
    if (strcmp(mode, "hold_d") == 0)
        return hold_d(argc > 2 ? atof(argv[2]) : 2);
    if (strcmp(mode, "none") == 0)
        return without_recorder();
    return 64;
}
