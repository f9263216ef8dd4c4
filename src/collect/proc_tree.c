/* proc_tree.c: the training command's process tree: CPU, resident memory,
 * storage I/O, processes and threads, the time its processes' main threads
 * waited for a CPU (run-queue delay, /proc/PID/schedstat), and how many of
 * its threads were waiting on storage (state D) when sampled: each thread's
 * /proc/PID/task/TID/stat (a loader's reading threads wait in D while its
 * main thread waits on them in S), up to TASK_READS_MAX a tick; past it, a
 * window of a process's threads that moves on each tick, scaled to all.
 *
 * Each tick lists /proc once, merges the pids (sorted) with the table of the
 * previous tick, and reads /proc/PID/stat only for pids it has not seen
 * before, to learn their parent. A pid whose parent is in the tree joins the
 * tree (DataLoader workers, torchrun ranks, compilers the script starts); all
 * other pids are remembered as foreign and never read again. Members keep
 * their stat, io and schedstat files open and are re-read with pread, up to
 * a budget of an eighth of the recorder's descriptors (at most 512 members):
 * past it, the others' files are opened and closed at each tick, so that thousands
 * of processes, or a low `ulimit -n`, leave the recorder the descriptors
 * its connections to them need (a process waiting to connect kept its
 * files open, and the recorder could take no connection: none ended).
 *
 * RSS is summed over the tree: pages shared between a parent and its forked
 * workers count once per process, as in top and psutil. CPU used by a process
 * in its last interval before it exits is lost with it. */
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/metric_catalog.h"
#include "collect/collector.h"
#include "collect/counter.h"
#include "collect/schedstat.h"
#include "util/text_parse.h"
#include "util/grow.h"

enum { PT_UNKNOWN, PT_MEMBER, PT_FOREIGN };

/* the threads' stat files read a tick, at most: 8-11 us each (an open, a
 * read and a close; the kernel's formatting of the file most of it), about
 * 0.35 ms of the recorder's CPU a tick at the most (docs/benchmarks.md) */
enum { TASK_READS_MAX = 32 };

typedef struct pt_entry {
    int pid;
    int ppid;
    int state;
    int stat_fd, io_fd, sched_fd;
    bool has_prev, has_wait;
    uint64_t starttime;
    uint64_t prev_ticks, prev_read, prev_write, prev_wait_ns;
    int *tids; /* its threads, as last listed (blocked_threads) */
    size_t ntids, tids_cap;
    uint32_t task_cursor; /* the first of its threads the next tick's window reads */
} pt_entry;

typedef struct pt_table {
    pt_entry *items;
    size_t len, cap;
} pt_table;

typedef struct proc_tree_collector {
    tp_collector base;
    tp_sink *sink;
    const tp_sysroot *root;
    int root_pid;
    DIR *proc;
    pt_table cur, next;
    size_t kept, keep_max; /* members whose files stay open, and the budget */
    int *pids;
    size_t npids, pids_cap;
    uint64_t prev_ns;
    double ticks_per_s, page_size;
    uint32_t s_cpu, s_rss, s_read, s_write, s_count, s_threads, s_wait, s_blocked;
} proc_tree_collector;

typedef struct pt_stat {
    int ppid;
    bool blocked; /* its main thread in uninterruptible sleep ('D') */
    uint64_t ticks, threads, starttime, rss_pages;
} pt_stat;

/* Parses /proc/PID/stat. The command name may hold spaces and parentheses,
 * so fields are counted from the last ')'. */
static bool parse_stat(const char *buf, size_t len, pt_stat *out)
{
    const char *end = buf + len, *p = NULL;
    for (const char *q = buf; q < end; q++)
        if (*q == ')')
            p = q;
    if (!p || end - p < 4)
        return false;
    p += 2;                     /* ") " */
    out->blocked = *p++ == 'D'; /* its main thread's state */
    int64_t f[21];              /* fields 4..24 */
    for (int i = 0; i < 21; i++)
        if (!tp_parse_i64(&p, end, &f[i]))
            return false;
    out->ppid = (int)f[0];
    out->ticks = (uint64_t)(f[10] + f[11]); /* utime + stime */
    out->threads = (uint64_t)f[16];
    out->starttime = (uint64_t)f[18];
    out->rss_pages = f[20] > 0 ? (uint64_t)f[20] : 0;
    return true;
}

static bool parse_io(const char *buf, size_t len, uint64_t *read, uint64_t *write)
{
    const char *p = buf, *end = buf + len;
    int found = 0;
    for (; p < end; p = tp_next_line(p, end)) {
        const char *q = p, *w;
        size_t wl;
        if (!tp_parse_word(&q, end, &w, &wl))
            continue;
        if (tp_word_is(w, wl, "read_bytes:") && tp_parse_u64(&q, end, read))
            found |= 1;
        else if (tp_word_is(w, wl, "write_bytes:") && tp_parse_u64(&q, end, write))
            found |= 2;
    }
    return found == 3;
}

static ssize_t pread_all(int fd, char *buf, size_t cap)
{
    ssize_t n = pread(fd, buf, cap - 1, 0);
    if (n >= 0)
        buf[n] = '\0';
    return n;
}

static int open_pid_file(const proc_tree_collector *c, int pid, const char *file)
{
    char rel[64];
    snprintf(rel, sizeof rel, "/proc/%d/%s", pid, file);
    return tp_sysroot_openat(c->root, rel, O_RDONLY);
}

static void entry_close(proc_tree_collector *c, pt_entry *e)
{
    if (e->stat_fd >= 0) {
        close(e->stat_fd);
        c->kept--;
    }
    if (e->io_fd >= 0)
        close(e->io_fd);
    if (e->sched_fd >= 0)
        close(e->sched_fd);
    e->stat_fd = e->io_fd = e->sched_fd = -1;
    free(e->tids);
    e->tids = NULL;
    e->ntids = e->tids_cap = 0;
}

static bool table_reserve(pt_table *t, size_t n)
{
    pt_entry *np = tp_reserve_try(t->items, n, &t->cap, sizeof *np);
    if (np)
        t->items = np;
    return np != NULL;
}

static pt_entry *table_find(pt_table *t, int pid)
{
    size_t lo = 0, hi = t->len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->items[mid].pid == pid)
            return &t->items[mid];
        if (t->items[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Lists the numeric entries of /proc into c->pids, sorted. */
static bool list_pids(proc_tree_collector *c)
{
    rewinddir(c->proc);
    c->npids = 0;
    struct dirent *e;
    bool sorted = true;
    while ((e = readdir(c->proc))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        int pid = atoi(e->d_name);
        int *np = tp_grow_try(c->pids, c->npids, &c->pids_cap, sizeof *np);
        if (!np)
            return false;
        c->pids = np;
        if (c->npids && c->pids[c->npids - 1] > pid)
            sorted = false;
        c->pids[c->npids++] = pid;
    }
    if (!sorted) /* procfs lists pids in order; fixture trees may not */
        qsort(c->pids, c->npids, sizeof *c->pids, cmp_int);
    return true;
}

/* Builds c->next from the pid list and c->cur: known pids carry over, gone
 * pids close their files, new pids are read once for their parent. */
static void merge_pids(proc_tree_collector *c)
{
    c->next.len = 0;
    if (!table_reserve(&c->next, c->npids))
        return;
    size_t j = 0;
    char buf[1024];
    for (size_t i = 0; i < c->npids; i++) {
        int pid = c->pids[i];
        while (j < c->cur.len && c->cur.items[j].pid < pid)
            entry_close(c, &c->cur.items[j++]);
        if (j < c->cur.len && c->cur.items[j].pid == pid && c->cur.items[j].state != PT_UNKNOWN) {
            c->next.items[c->next.len++] = c->cur.items[j++];
            continue;
        }
        if (j < c->cur.len && c->cur.items[j].pid == pid)
            j++; /* a stale member, read again below */
        pt_entry e = {.pid = pid, .state = PT_UNKNOWN, .stat_fd = -1, .io_fd = -1, .sched_fd = -1};
        int fd = open_pid_file(c, pid, "stat");
        pt_stat st;
        ssize_t n = fd >= 0 ? pread_all(fd, buf, sizeof buf) : -1;
        if (fd >= 0)
            close(fd);
        if (n <= 0 || !parse_stat(buf, (size_t)n, &st))
            e.state = PT_FOREIGN; /* already gone, or unreadable */
        else {
            e.ppid = st.ppid;
            e.starttime = st.starttime;
        }
        if (pid == c->root_pid)
            e.state = PT_MEMBER;
        c->next.items[c->next.len++] = e;
    }
    while (j < c->cur.len)
        entry_close(c, &c->cur.items[j++]);
    pt_table tmp = c->cur;
    c->cur = c->next;
    c->next = tmp;
}

/* Decides membership of new pids from their parents, repeating until stable
 * (a child may be listed before its parent is decided). */
static void resolve_members(proc_tree_collector *c)
{
    bool changed = true;
    while (changed) {
        changed = false;
        for (size_t i = 0; i < c->cur.len; i++) {
            pt_entry *e = &c->cur.items[i];
            if (e->state != PT_UNKNOWN)
                continue;
            pt_entry *parent = e->ppid > 0 ? table_find(&c->cur, e->ppid) : NULL;
            if (!parent || parent->state == PT_FOREIGN)
                e->state = PT_FOREIGN;
            else if (parent->state == PT_MEMBER)
                e->state = PT_MEMBER;
            else
                continue;
            changed = true;
        }
    }
    for (size_t i = 0; i < c->cur.len; i++) {
        pt_entry *e = &c->cur.items[i];
        if (e->state == PT_UNKNOWN)
            e->state = PT_FOREIGN;
        if (e->state == PT_MEMBER && e->stat_fd < 0 && c->kept < c->keep_max) {
            e->stat_fd = open_pid_file(c, e->pid, "stat");
            e->io_fd = e->stat_fd >= 0 ? open_pid_file(c, e->pid, "io") : -1;
            e->sched_fd = e->stat_fd >= 0 ? open_pid_file(c, e->pid, "schedstat") : -1;
            c->kept += e->stat_fd >= 0;
        }
    }
}

/* Reads one of member e's files into buf: its kept descriptor, or, past
 * the budget (no kept stat file), the file opened for this read; -1 where
 * it can't be read. */
static ssize_t read_member_file(const proc_tree_collector *c, const pt_entry *e, int kept_fd,
                                const char *file, char *buf, size_t cap)
{
    bool passing = e->stat_fd < 0;
    int fd = passing ? open_pid_file(c, e->pid, file) : kept_fd;
    ssize_t n = fd >= 0 ? pread_all(fd, buf, cap) : -1;
    if (passing && fd >= 0)
        close(fd);
    return n;
}

/* The tree's figures of one tick: sums over its members, and deltas since
 * each member's previous reading. */
typedef struct pt_totals {
    uint64_t count, threads, rss_pages, dticks, dread, dwrite, dwait;
    double blocked;      /* threads in D: a window's count scaled past the budget */
    bool waits;          /* some member's schedstat read (a kernel without it has none) */
    uint64_t task_reads; /* the threads' stat files left to read this tick */
} pt_totals;

/* Whether a stat file's state (the field after the command's last ')') is
 * uninterruptible sleep. */
static bool stat_says_blocked(const char *buf, size_t len)
{
    const char *p = NULL;
    for (const char *q = buf; q < buf + len; q++)
        if (*q == ')')
            p = q;
    return p && buf + len - p >= 3 && p[1] == ' ' && p[2] == 'D';
}

/* Lists member e's threads (/proc/PID/task) into e->tids; false where the
 * folder can't be read or memory runs out (the list is left empty). */
static bool list_tasks(const proc_tree_collector *c, pt_entry *e)
{
    char rel[64];
    snprintf(rel, sizeof rel, "/proc/%d/task", e->pid);
    int fd = tp_sysroot_openat(c->root, rel, O_RDONLY | O_DIRECTORY);
    DIR *tasks = fd >= 0 ? fdopendir(fd) : NULL;
    if (!tasks) {
        if (fd >= 0)
            close(fd);
        return false;
    }
    e->ntids = 0;
    struct dirent *d;
    bool ok = true;
    while (ok && (d = readdir(tasks))) {
        if (d->d_name[0] < '1' || d->d_name[0] > '9')
            continue;
        int *np = tp_grow_try(e->tids, e->ntids, &e->tids_cap, sizeof *np);
        if ((ok = np != NULL)) {
            e->tids = np;
            e->tids[e->ntids++] = atoi(d->d_name);
        }
    }
    closedir(tasks);
    if (!ok)
        e->ntids = 0;
    return ok;
}

/* How many of member e's threads are in state D: their
 * /proc/PID/task/TID/stat files, as many as t's budget still allows; where
 * that is fewer than its threads, a window of them that moves on at each
 * tick (e->task_cursor), its count scaled to all of them. Its threads are
 * listed again only where their number changed or one of them ended. The
 * main thread's state (st) for a process of one thread, one the budget
 * left no read for, or one whose threads can't be listed. */
static double blocked_threads(const proc_tree_collector *c, pt_entry *e, const pt_stat *st,
                              pt_totals *t)
{
    if (st->threads <= 1 || t->task_reads == 0)
        return st->blocked;
    if (e->ntids != st->threads && !list_tasks(c, e))
        return st->blocked;
    size_t n = e->ntids, quota = n < t->task_reads ? n : (size_t)t->task_reads;
    size_t first = n ? e->task_cursor % n : 0, read = 0, blocked = 0;
    bool ended = false;
    for (size_t k = 0; k < quota; k++) {
        char rel[96], buf[256];
        snprintf(rel, sizeof rel, "/proc/%d/task/%d/stat", e->pid, e->tids[(first + k) % n]);
        int fd = tp_sysroot_openat(c->root, rel, O_RDONLY);
        ssize_t got = fd >= 0 ? pread_all(fd, buf, sizeof buf) : -1;
        if (fd >= 0)
            close(fd);
        if (got <= 0) {
            ended = true; /* listed again at the next tick */
            continue;
        }
        read++;
        blocked += stat_says_blocked(buf, (size_t)got);
    }
    t->task_reads -= quota;
    e->task_cursor = n ? (uint32_t)((first + quota) % n) : 0;
    if (ended)
        e->ntids = 0;
    if (read == 0)
        return st->blocked;
    return read == n ? (double)blocked : (double)blocked * (double)n / (double)read;
}

/* Adds member e's figures to t; false where it is gone (exited since the
 * listing, or its pid reused: looked at again at the next listing). */
static bool add_member(proc_tree_collector *c, pt_entry *e, pt_totals *t)
{
    char buf[1024];
    pt_stat st;
    ssize_t n = read_member_file(c, e, e->stat_fd, "stat", buf, sizeof buf);
    if (n <= 0 || !parse_stat(buf, (size_t)n, &st))
        return false;
    if (st.starttime != e->starttime) {
        e->has_prev = false; /* pid reused: its threads are another process's */
        e->starttime = st.starttime;
        e->ntids = 0;
    }
    uint64_t rd = 0, wr = 0, wait_ns = 0, on_cpu_ns = 0;
    n = read_member_file(c, e, e->io_fd, "io", buf, sizeof buf);
    bool have_io = n > 0 && parse_io(buf, (size_t)n, &rd, &wr);
    n = read_member_file(c, e, e->sched_fd, "schedstat", buf, sizeof buf);
    bool have_wait = n > 0 && tp_schedstat_parse(buf, (size_t)n, &on_cpu_ns, &wait_ns);
    t->count++;
    t->blocked += blocked_threads(c, e, &st, t);
    t->threads += st.threads;
    t->rss_pages += st.rss_pages;
    uint64_t d;
    if (e->has_prev) {
        if (tp_counter_delta(e->prev_ticks, st.ticks, &d))
            t->dticks += d;
        if (have_io && tp_counter_delta(e->prev_read, rd, &d))
            t->dread += d;
        if (have_io && tp_counter_delta(e->prev_write, wr, &d))
            t->dwrite += d;
        if (have_wait && e->has_wait && tp_counter_delta(e->prev_wait_ns, wait_ns, &d))
            t->dwait += d, t->waits = true;
    }
    e->has_wait = have_wait;
    e->prev_wait_ns = wait_ns;
    e->prev_ticks = st.ticks;
    if (have_io) {
        e->prev_read = rd;
        e->prev_write = wr;
    }
    e->has_prev = true;
    return true;
}

static void proc_tree_sample(tp_collector *base, uint64_t now_ns)
{
    proc_tree_collector *c = (proc_tree_collector *)base;
    if (!list_pids(c))
        return;
    merge_pids(c);
    resolve_members(c);

    uint64_t dt = c->prev_ns && now_ns > c->prev_ns ? now_ns - c->prev_ns : 0;
    pt_totals t = {.task_reads = TASK_READS_MAX};
    for (size_t i = 0; i < c->cur.len; i++) {
        pt_entry *e = &c->cur.items[i];
        if (e->state == PT_MEMBER && !add_member(c, e, &t)) {
            entry_close(c, e);
            e->state = PT_UNKNOWN;
        }
    }
    if (t.count == 0)
        return; /* the tree has exited */
    tp_sink_sample(c->sink, c->s_count, now_ns, (double)t.count);
    tp_sink_sample(c->sink, c->s_threads, now_ns, (double)t.threads);
    tp_sink_sample(c->sink, c->s_blocked, now_ns, t.blocked);
    tp_sink_sample(c->sink, c->s_rss, now_ns, (double)t.rss_pages * c->page_size);
    if (dt) {
        double secs = (double)dt / 1e9;
        tp_sink_sample(c->sink, c->s_cpu, now_ns, 100.0 * (double)t.dticks / c->ticks_per_s / secs);
        tp_sink_sample(c->sink, c->s_read, now_ns, (double)t.dread / secs);
        tp_sink_sample(c->sink, c->s_write, now_ns, (double)t.dwrite / secs);
        if (t.waits)
            tp_sink_sample(c->sink, c->s_wait, now_ns, 100.0 * (double)t.dwait / (double)dt);
    }
    c->prev_ns = now_ns;
}

static void proc_tree_destroy(tp_collector *base)
{
    proc_tree_collector *c = (proc_tree_collector *)base;
    for (size_t i = 0; i < c->cur.len; i++)
        entry_close(c, &c->cur.items[i]);
    free(c->cur.items);
    free(c->next.items);
    free(c->pids);
    closedir(c->proc);
    free(c);
}

tp_collector *tp_proc_tree_collector_new(const tp_collect_env *env)
{
    if (env->target_pid <= 0)
        return NULL;
    int fd = tp_sysroot_openat(env->root, "/proc", O_RDONLY | O_DIRECTORY);
    DIR *proc = fd >= 0 ? fdopendir(fd) : NULL;
    proc_tree_collector *c = proc ? calloc(1, sizeof *c) : NULL;
    if (!c) {
        char why[160]; /* the cause: out of descriptors (ulimit -n), of memory, a sandbox */
        snprintf(why, sizeof why, "cannot list /proc: %s%s", strerror(errno),
                 errno == EMFILE || errno == ENFILE ? " (raise ulimit -n)" : "");
        if (proc)
            closedir(proc);
        else if (fd >= 0)
            close(fd);
        tp_sink_unavailable(env->sink, "proc", why);
        return NULL;
    }
    c->base.name = "proc";
    c->base.sample = proc_tree_sample;
    c->base.destroy = proc_tree_destroy;
    c->sink = env->sink;
    c->root = env->root;
    c->root_pid = (int)env->target_pid;
    c->proc = proc;
    struct rlimit nofile;
    rlim_t budget = getrlimit(RLIMIT_NOFILE, &nofile) == 0 ? nofile.rlim_cur / 16 : 64;
    budget = budget * 2 / 3; /* three files each: an eighth of the descriptors in all */
    c->keep_max = budget < 512 ? (size_t)budget : 512;
    long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    c->ticks_per_s = tck > 0 ? (double)tck : 100.0;
    c->page_size = page > 0 ? (double)page : 4096.0;
    c->s_cpu = tp_sink_series(env->sink, TP_METRIC_PROC_CPU_PERCENT, "{}");
    c->s_rss = tp_sink_series(env->sink, TP_METRIC_PROC_RSS_BYTES, "{}");
    c->s_read = tp_sink_series(env->sink, TP_METRIC_PROC_READ_BYTES_PER_S, "{}");
    c->s_write = tp_sink_series(env->sink, TP_METRIC_PROC_WRITE_BYTES_PER_S, "{}");
    c->s_count = tp_sink_series(env->sink, TP_METRIC_PROC_COUNT, "{}");
    c->s_threads = tp_sink_series(env->sink, TP_METRIC_PROC_THREADS, "{}");
    c->s_wait = tp_sink_series(env->sink, TP_METRIC_PROC_CPU_WAIT_PERCENT, "{}");
    c->s_blocked = tp_sink_series(env->sink, TP_METRIC_PROC_BLOCKED, "{}");
    return &c->base;
}
