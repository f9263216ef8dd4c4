/* test_collectors_real.c: the collectors against this machine's real /proc
 * and /sys: a process tree of its own that burns CPU, and every collector at
 * once. Each judges what the kernel said, whatever else the machine does. */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collect/collectors.h"
#include "core/metric_catalog.h"
#include "record/step_waits.h"
#include "harness.h"
#include "trainprof.h"

/* The burners' process group, killed by the teardown whatever the test did
 * (a failed assertion leaves the test at once: burners left behind would
 * load the machine for every test after it). */
static pid_t burners;

/* Burns CPU in a child and a grandchild until killed, or until their parent
 * dies; *grandchild gets the grandchild's pid. */
static pid_t spawn_tree(pid_t *grandchild)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0); /* so the test can kill the whole tree */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        pid_t g = fork();
        if (g == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            for (volatile unsigned long i = 0;; i++)
                ;
        }
        if (write(fds[1], &g, sizeof g) != (ssize_t)sizeof g)
            _exit(1);
        for (volatile unsigned long i = 0;; i++)
            ;
    }
    close(fds[1]);
    burners = pid;
    assert_int_equal(read(fds[0], grandchild, sizeof *grandchild), (ssize_t)sizeof *grandchild);
    close(fds[0]);
    return pid;
}

/* pid's /proc/PID/stat read into buf (the oracle), past its name: from the
 * state field on. */
static const char *stat_fields(pid_t pid, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the name may hold spaces */
    assert_non_null(p);
    return p + 2;
}

/* utime + stime of pid in clock ticks, from its /proc/PID/stat (the oracle). */
static double cpu_ticks(pid_t pid)
{
    char buf[1024];
    const char *p = stat_fields(pid, buf, sizeof buf);
    unsigned long long utime = 0, stime = 0;
    assert_int_equal(
        sscanf(p, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime), 2);
    return (double)(utime + stime);
}

/* thread tid's waiting nanoseconds, from /proc/PID/task/TID/schedstat (the
 * oracle; tid pid: the main thread's, as /proc/PID/schedstat says it); -1
 * where the kernel has no schedstat. */
static double thread_wait_ns(pid_t pid, pid_t tid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
    FILE *f = fopen(path, "r");
    unsigned long long on_cpu = 0, waited = 0;
    int n = f ? fscanf(f, "%llu %llu", &on_cpu, &waited) : 0;
    if (f)
        fclose(f);
    return n == 2 ? (double)waited : -1;
}

/* The collector's CPU share of the tree between its two samples lies between
 * what /proc said of the two processes over a span just inside its interval
 * and one just outside it (a tick of slack for each reading), however busy
 * the machine is: the test judges the arithmetic, not the load. So does the
 * time the two waited for a CPU (nanoseconds: no slack). */
static void test_proc_tree_real(void **state)
{
    (void)state;
    pid_t grandchild;
    pid_t child = spawn_tree(&grandchild);
    test_env t;
    test_env_open(&t, "/", child);
    tp_collector *c = tp_proc_tree_collector_new(&t.env);
    assert_non_null(c);
    usleep(100000);
    double outer0 = cpu_ticks(child) + cpu_ticks(grandchild);
    double wait_outer0 = thread_wait_ns(child, child) + thread_wait_ns(grandchild, grandchild);
    uint64_t t1 = tp_clock_now_ns();
    c->sample(c, t1);
    double inner0 = cpu_ticks(child) + cpu_ticks(grandchild);
    double wait_inner0 = thread_wait_ns(child, child) + thread_wait_ns(grandchild, grandchild);
    usleep(300000);
    double wait_inner1 = thread_wait_ns(child, child) + thread_wait_ns(grandchild, grandchild);
    double inner1 = cpu_ticks(child) + cpu_ticks(grandchild);
    uint64_t t2 = tp_clock_now_ns();
    c->sample(c, t2);
    double outer1 = cpu_ticks(child) + cpu_ticks(grandchild);
    double wait_outer1 = thread_wait_ns(child, child) + thread_wait_ns(grandchild, grandchild);
    tp_batch b = {0};
    cap_take(t.sink, &b);
    double v[2];
    assert_int_equal(cap_values(&b, "proc_count", "{}", v, 2), 2);
    assert_true(v[1] == 2.0); /* child and grandchild, not this test */
    assert_int_equal(cap_values(&b, "proc_cpu_percent", "{}", v, 2), 1);
    double ticks = v[0] / 100.0 * (double)(t2 - t1) / 1e9 * (double)sysconf(_SC_CLK_TCK);
    assert_true(ticks >= inner1 - inner0 - 2.0 - 1e-6);
    assert_true(ticks <= outer1 - outer0 + 2.0 + 1e-6);
    assert_int_equal(cap_values(&b, "proc_rss_bytes", "{}", v, 2), 2);
    assert_true(v[1] > 0);
    if (wait_outer0 >= 0) { /* the kernel keeps schedstat */
        assert_int_equal(cap_values(&b, "proc_cpu_wait_percent", "{}", v, 2), 1);
        double waited = v[0] / 100.0 * (double)(t2 - t1);
        assert_true(waited >= wait_inner1 - wait_inner0 - 1.0);
        assert_true(waited <= wait_outer1 - wait_outer0 + 1.0);
    }
    c->destroy(c);
    tp_batch_free(&b);
    test_env_close(&t);
}

/* The step thread's wait, as the recorder's drain reads it: of the thread
 * that marked the most steps, between two readings of the same thread, to
 * the nanosecond against its schedstat read around them; a thread that is
 * not the process's own gives nothing. */
static void test_step_thread_wait_real(void **state)
{
    (void)state;
    pid_t grandchild;
    pid_t child = spawn_tree(&grandchild);
    cpu_set_t one; /* the two burners share a CPU: each waits for it half the time */
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
    assert_int_equal(sched_setaffinity(child, sizeof one, &one), 0);
    assert_int_equal(sched_setaffinity(grandchild, sizeof one, &one), 0);
    test_env t;
    test_env_open(&t, "/", child);
    tp_step_waits *w = tp_step_waits_new(2, 1);
    assert_non_null(w);
    double outer[2], inner[2];
    uint64_t at[2];
    for (int i = 0; i < 2; i++) {
        if (i)
            usleep(300000);
        outer[i] = thread_wait_ns(child, child);
        at[i] = tp_clock_now_ns();
        tp_step_waits_offer(w, 0, grandchild, 3); /* not the child's: never read */
        tp_step_waits_offer(w, 0, child, 9);
        tp_step_waits_offer(w, 1, getpid(), 5); /* slot 1: "process" child, a foreign tid */
        tp_step_waits_read(w, t.sink, 0, child, at[i]);
        tp_step_waits_read(w, t.sink, 1, child, at[i]);
        inner[i] = thread_wait_ns(child, child);
    }
    tp_batch b = {0};
    cap_take(t.sink, &b);
    double v[2];
    char labels[32];
    snprintf(labels, sizeof labels, "{\"pid\":\"%d\"}", (int)child);
    if (outer[0] >= 0) { /* the kernel keeps schedstat */
        assert_int_equal(cap_values(&b, TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT, labels, v, 2), 1);
        double waited = v[0] / 100.0 * (double)(at[1] - at[0]);
        assert_true(v[0] > 10); /* it did wait, and the figure is its own thread's */
        assert_true(waited >= outer[1] - inner[0] - 1.0);
        assert_true(waited <= inner[1] - outer[0] + 1.0);
        assert_int_equal(cap_series_count(&b, TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT), 1);
    }
    tp_step_waits_free(w);
    tp_batch_free(&b);
    test_env_close(&t);
}

/* The vforked child's body: it waits until killed, its parent meanwhile
 * in uninterruptible sleep (a vfork parent's wait shows as 'D'). */
static int wait_forever(void *arg)
{
    (void)arg;
    for (;;)
        syscall(SYS_pause);
    return 0;
}

static int kill_burners(void **state)
{
    (void)state;
    if (burners > 0) {
        kill(-burners, SIGKILL);
        waitpid(burners, NULL, 0);
        burners = 0;
    }
    return 0;
}

/* Writes the calling thread's id to the pipe *arg, then holds the thread in
 * state D: a vfork child that never execs nor exits. */
static void *block_in_vfork(void *arg)
{
    pid_t tid = (pid_t)syscall(SYS_gettid);
    if (write(*(int *)arg, &tid, sizeof tid) != (ssize_t)sizeof tid)
        _exit(1);
    static char stack[64 * 1024];
    clone(wait_forever, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
    return NULL;
}

/* Whether /proc says thread tid of pid is in state D. */
static bool thread_in_d(pid_t pid, pid_t tid)
{
    char path[96], buf[512];
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] == 'D';
}

static void *pause_forever(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

/* A child, in its own process group, one of whose threads is held in state
 * D by a vfork child: its main thread where in_thread is false, else a
 * second thread while the main one waits in pause (S), beside `sleepers`
 * more threads in pause; returns once /proc says that thread is in D. */
static pid_t spawn_blocked(bool in_thread, int sleepers)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        pthread_t thread;
        for (int i = 0; i < sleepers; i++)
            if (pthread_create(&thread, NULL, pause_forever, NULL) != 0)
                _exit(1);
        if (!in_thread)
            block_in_vfork(&fds[1]);
        else if (pthread_create(&thread, NULL, block_in_vfork, &fds[1]) == 0)
            for (;;)
                pause();
        _exit(1);
    }
    close(fds[1]);
    burners = pid;
    pid_t tid;
    assert_int_equal(read(fds[0], &tid, sizeof tid), (ssize_t)sizeof tid);
    close(fds[0]);
    for (int tries = 0; tries < 1000; tries++) { /* 10 s at most */
        if (thread_in_d(pid, tid))
            return pid;
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    fail_msg("the vfork parent never showed state D");
    return pid;
}

/* proc_blocked counts the tree's threads in state D, and no other: a vfork
 * parent (D) and its child, which waits in pause (S); then a process whose
 * second thread is the vfork parent, its main thread in pause (a loader's
 * reading threads, its main thread waiting on them). */
static void test_proc_blocked_real(void **state)
{
    (void)state;
    for (int in_thread = 0; in_thread <= 1; in_thread++) {
        pid_t child = spawn_blocked(in_thread, 0);
        test_env t;
        test_env_open(&t, "/", child);
        tp_collector *c = tp_proc_tree_collector_new(&t.env);
        assert_non_null(c);
        c->sample(c, tp_clock_now_ns());
        tp_batch b = {0};
        cap_take(t.sink, &b);
        double v[1];
        assert_int_equal(cap_values(&b, "proc_count", "{}", v, 1), 1);
        assert_true(v[0] == 2.0);
        assert_int_equal(cap_values(&b, TP_METRIC_PROC_BLOCKED, "{}", v, 1), 1);
        assert_true(v[0] == 1.0);
        c->destroy(c);
        tp_batch_free(&b);
        test_env_close(&t);
        kill_burners(NULL);
    }
}

/* pid's threads, from its /proc/PID/stat (the oracle). */
static size_t proc_threads(pid_t pid)
{
    char buf[1024];
    const char *p = stat_fields(pid, buf, sizeof buf);
    long threads = 0;
    assert_int_equal(sscanf(p,
                            "%*c"
                            "%*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
                            "%*d %*d %ld",
                            &threads),
                     1);
    return (size_t)threads;
}

static size_t gcd(size_t a, size_t b) { return b ? gcd(b, a % b) : a; }

/* Past a tick's budget of thread files (32), a window of a process's
 * threads moving on each tick, scaled to all of them: one blocked thread of
 * about 200 (n: 200, and a sanitizer's own thread where it runs one; the
 * vfork child apart) is seen as n/32 in some ticks and 0 in the others,
 * 1.0 on average over the n / gcd(n, 32) ticks the windows take to cover
 * every thread as often (200: seen in 4 of 25 ticks). */
static void test_proc_blocked_window_real(void **state)
{
    (void)state;
    pid_t child = spawn_blocked(true, 198);
    size_t n = proc_threads(child), ticks = n / gcd(n, 32);
    assert_true(n >= 200 && ticks <= 512);
    test_env t;
    test_env_open(&t, "/", child);
    tp_collector *c = tp_proc_tree_collector_new(&t.env);
    assert_non_null(c);
    for (size_t i = 0; i < ticks; i++)
        c->sample(c, tp_clock_now_ns() + (uint64_t)i);
    tp_batch b = {0};
    cap_take(t.sink, &b);
    static double v[512];
    double sum = 0;
    assert_int_equal(cap_values(&b, TP_METRIC_PROC_BLOCKED, "{}", v, ticks), ticks);
    size_t seen = 0;
    for (size_t i = 0; i < ticks; i++) {
        sum += v[i];
        seen += v[i] > 0;
        assert_true(v[i] == 0 || v[i] == (double)n / 32); /* n/32: exact in binary */
    }
    assert_int_equal(seen, 32 * ticks / n);
    assert_true(fabs(sum / (double)ticks - 1.0) < 1e-9);
    c->destroy(c);
    tp_batch_free(&b);
    test_env_close(&t);
}

static void test_real_host_all_collectors(void **state)
{
    (void)state;
    test_env t;
    test_env_open(&t, "/", getpid());
    tp_collector_set set;
    tp_collectors_open(&set, &t.env, TP_COLLECT_ALL);
    assert_true(set.len >= 5);
    tp_collectors_sample(&set, tp_clock_now_ns());
    usleep(200000);
    tp_collectors_sample(&set, tp_clock_now_ns());
    tp_batch b = {0};
    cap_take(t.sink, &b);
    double v[2];
    assert_int_equal(cap_values(&b, "cpu_util_percent", "{}", v, 2), 1);
    assert_true(v[0] >= 0 && v[0] <= 100);
    assert_int_equal(cap_values(&b, "host_mem_used_bytes", "{}", v, 2), 2);
    assert_true(v[0] > 0);
    for (size_t i = 0; i < b.series.len; i++) /* every name is in the catalogue */
        assert_non_null(tp_metric_find(b.series.items[i].metric));
    for (size_t i = 0; i < b.samples.len; i++)
        assert_true(b.samples.items[i].value >= 0);
    tp_collectors_close(&set);
    tp_batch_free(&b);
    test_env_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_proc_tree_real, kill_burners),
        cmocka_unit_test_teardown(test_step_thread_wait_real, kill_burners),
        cmocka_unit_test_teardown(test_proc_blocked_real, kill_burners),
        cmocka_unit_test_teardown(test_proc_blocked_window_real, kill_burners),
        cmocka_unit_test(test_real_host_all_collectors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
