/* cmd_top.c: `trainprof top`: a live terminal view of this machine, and of
 * the newest running `trainprof record` (its step rate and where step time
 * goes right now). ncurses draws; the same collectors as `record` measure. */
#include <curses.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analyze/pace_now.h"
#include "core/metric_catalog.h"
#include "core/step_rules.h"
#include "clock.h"
#include "collect/collectors.h"
#include "commands.h"
#include "live/live_state.h"
#include "record/registry.h"
#include "record/stall_where.h"
#include "render/report.h"
#include "render/units.h"
#include "store/reader_live.h"
#include "top_host.h"
#include "util/options.h"
#include "util/utf8.h"
#include "util/labels.h"
#include "util/log.h"
#include "core/run_keys.h"

#define HISTORY   64
#define MAX_GPUS  16
#define MAX_CORES 1024

static const char usage[] =
    "usage: trainprof top [--interval SECONDS]\n"
    "\n"
    "A live view of this machine while training runs: per-GPU utilization, memory, power\n"
    "and temperature with short history; CPU per core, memory, disk and network rates,\n"
    "the busiest disk (share of time busy) and the most used link (share of its speed);\n"
    "and, while a `trainprof record` runs, its step rate and where step time goes now\n"
    "(with each phase's GPU time beside it where CUDA regions report device times), and\n"
    "the training's own CPU: its cores, and how long it waited for a CPU.\n"
    "Keys: q quits.\n";

typedef struct history {
    double v[HISTORY];
    int len;
} history;

typedef struct top_state {
    tp_sink *sink;
    tp_live *machine; /* this machine, from top's own collectors */
    history cpu, gpu[MAX_GPUS];
    char run_path[4096];
    pid_t run_pid;
    tp_run *run;
    tp_live *recording; /* the recording followed, from its file's new rows */
    tp_run_tail tail;
    tp_batch rows;
    /* the recording's pace regime by regime, from its step marks read so
     * far (past pace_rowid, of the step thread pace_thread) */
    tp_pace_now pace;
    int64_t pace_rowid, pace_thread;
    tp_stall_places places; /* where the stalled ranks were last seen (its run: run) */
} top_state;

static void push(history *h, double v)
{
    if (h->len == HISTORY) {
        memmove(h->v, h->v + 1, (HISTORY - 1) * sizeof *h->v);
        h->len--;
    }
    h->v[h->len++] = v;
}

/* The last `width` values as characters, low to high: " .:-=+*#%@". */
static void spark(const history *h, int width, char *out)
{
    static const char levels[] = " .:-=+*#%@";
    int n = h->len < width ? h->len : width;
    for (int i = 0; i < n; i++) {
        double v = h->v[h->len - n + i];
        int k = (int)(v / 100.0 * 9.0 + 0.5);
        out[i] = levels[k < 0 ? 0 : k > 9 ? 9 : k];
    }
    out[n] = '\0';
}

static bool latest(top_state *t, const char *metric, const char *labels, double *v)
{
    return tp_live_latest(t->machine, metric, labels, v);
}

static void draw_cpu(top_state *t, int cols, int *row)
{
    double v;
    char hist[HISTORY + 1] = "";
    move((*row)++, 0);
    printw("CPU  ");
    if (latest(t, TP_METRIC_CPU_UTIL_PERCENT, "{}", &v)) {
        double steal; /* a virtual machine's host taking its CPUs: said where it does */
        bool stolen = latest(t, TP_METRIC_CPU_STEAL_PERCENT, "{}", &steal) && steal >= 0.5;
        int width = cols - 40 - (stolen ? 12 : 0);
        tp_top_bar(20, v);
        spark(&t->cpu, width > 0 ? (width < HISTORY ? width : HISTORY) : 0, hist);
        printw(" %5.1f%%", v);
        if (stolen)
            printw(" steal %3.0f%%", steal);
        printw("  %s", hist);
    }
    int per_row = cols >= 100 ? 4 : cols >= 60 ? 3 : 2, col = 0;
    for (int c = 0; c < MAX_CORES; c++) {
        char labels[32];
        snprintf(labels, sizeof labels, "{\"cpu\":\"%d\"}", c);
        if (!latest(t, TP_METRIC_CPU_UTIL_PERCENT, labels, &v))
            break;
        if (col == 0)
            move((*row)++, 0);
        printw(" cpu%-3d", c);
        tp_top_bar(8, v);
        printw("%4.0f%% ", v);
        col = (col + 1) % per_row;
        if (*row >= LINES - 8)
            break;
    }
}

static void draw_gpus(top_state *t, int cols, int *row)
{
    for (int g = 0; g < MAX_GPUS && *row < LINES - 2; g++) {
        char labels[32], a[32], b[32], hist[HISTORY + 1] = "";
        tp_labels_gpu(labels, sizeof labels, g);
        double util, used, free_b, power, temp;
        if (!latest(t, TP_METRIC_GPU_UTIL_PERCENT, labels, &util))
            break;
        move((*row)++, 0);
        printw("GPU%-2d", g);
        tp_top_bar(20, util);
        printw(" %5.1f%%", util);
        if (latest(t, TP_METRIC_GPU_MEM_USED_BYTES, labels, &used) &&
            latest(t, TP_METRIC_GPU_MEM_FREE_BYTES, labels, &free_b)) {
            tp_format_value(a, sizeof a, "bytes", used);
            tp_format_value(b, sizeof b, "bytes", used + free_b);
            printw("  mem %s/%s", a, b);
        }
        if (latest(t, TP_METRIC_GPU_POWER_WATTS, labels, &power))
            printw("  %.0f W", power);
        if (latest(t, TP_METRIC_GPU_TEMP_CELSIUS, labels, &temp))
            printw("  %.0f C", temp);
        int x = getcurx(stdscr), room = cols - x - 2;
        if (room > 4) {
            spark(&t->gpu[g], room < HISTORY ? room : HISTORY, hist);
            printw("  %s", hist);
        }
    }
}

static void forget_recording(top_state *t)
{
    tp_run_close(t->run);
    t->run = NULL;
    t->run_pid = 0;
    tp_live_free(t->recording);
    t->recording = NULL;
    tp_pace_now_init(&t->pace, 0);
    t->pace_rowid = t->pace_thread = 0;
    memset(&t->tail, 0, sizeof t->tail);
    tp_stall_places_close(&t->places);
}

/* A new live state of the recording: its stall threshold, and each rank's
 * last steps, so that a rank stopped before top looked is seen stalled. */
static tp_live *join_recording(tp_run *run)
{
    tp_live *l = tp_live_new(0);
    if (!l)
        return NULL;
    tp_live_set_stall_after(l, run->settings.stall_after_s);
    tp_run_mark *m;
    size_t n;
    if (!tp_run_recent_steps(run, TP_LIVE_RECENT_STEPS + 1, &m, &n))
        return l;
    for (size_t lo = 0; lo < n;) {
        size_t hi = lo;
        uint64_t t[TP_LIVE_RECENT_STEPS + 1];
        uint32_t kinds[TP_LIVE_RECENT_STEPS + 1];
        while (hi < n && m[hi].rank == m[lo].rank && hi - lo < TP_LIVE_RECENT_STEPS + 1) {
            t[hi - lo] = m[hi].t_ns > 0 ? (uint64_t)m[hi].t_ns : 0;
            kinds[hi - lo] = (uint32_t)m[hi].kind;
            hi++;
        }
        tp_live_seed_steps(l, m[lo].rank, t, kinds, hi - lo);
        while (hi < n && m[hi].rank == m[lo].rank)
            hi++;
        lo = hi;
    }
    free(m);
    return l;
}

/* Takes in the rows the recording added since the last refresh (those of
 * the window only, on the first) and gives its last seconds. */
static void follow_recording(top_state *t, uint64_t now, tp_live_window *out)
{
    if (!t->recording)
        t->recording = join_recording(t->run);
    uint64_t since = (uint64_t)(TP_LIVE_WINDOW + 1) * 1000000000u;
    since = now > since ? now - since : 0;
    if (t->recording) {
        tp_run_read_tail(t->run, &t->tail, since, &t->rows);
        tp_live_apply(t->recording, &t->rows);
        tp_live_window_at(t->recording, now, out);
    } else {
        memset(out, 0, sizeof *out);
    }
    tp_batch_clear(&t->rows);
}

/* The pace now (the last seconds) against the run's one regime so far, or
 * where the steps changed pace, the current regime against the first:
 * "pace: 40 ms a step since step 2001 (12.0 min in), 22 ms in steps
 * 11-2000 (+82%)"; where they grew steadily, at no one step (the report's
 * drift), the last quarter of their span against the first, the change
 * first (a narrow screen cuts the steps): "pace: growing steadily (+183%):
 * 27 ms a step in steps 507-599, 9.5 ms in 11-256". */
static void draw_pace(top_state *t, const tp_live_window *live, int *row)
{
    if (!t->pace.begun) { /* the recording's own threshold, before its first step */
        tp_pace_now_init(&t->pace, t->run->settings.stall_after_s);
    }
    int64_t begins[4096];
    for (int reads = 0; reads < 256; reads++) { /* a bounded catch-up per refresh */
        size_t n = tp_run_step_begins_after(t->run, &t->pace_rowid, &t->pace_thread, begins,
                                            sizeof begins / sizeof *begins);
        for (size_t i = 0; i < n; i++)
            tp_pace_now_step(&t->pace, begins[i]);
        if (n < sizeof begins / sizeof *begins)
            break;
    }
    tp_pace_regime first, now;
    size_t regimes = tp_pace_now_regimes(&t->pace, &first, &now);
    if (!regimes || !(live->steps_per_s > 0))
        return;
    char now_s[32], first_s[32], since_s[32], in[32];
    tp_format_duration(now_s, sizeof now_s, 1 / live->steps_per_s);
    tp_format_duration(first_s, sizeof first_s, first.typical_s);
    move((*row)++, 0);
    tp_pace_regime early, late;
    if (tp_pace_now_drift(&t->pace, &early, &late)) {
        tp_format_duration(since_s, sizeof since_s, late.typical_s);
        tp_format_duration(first_s, sizeof first_s, early.typical_s);
        printw("  pace: %s steadily (%+.0f%%): %s a step in steps %zu-%zu, %s in %zu-%zu",
               late.typical_s > early.typical_s ? "growing" : "getting faster",
               100 * (late.typical_s / early.typical_s - 1), since_s, late.first_step,
               late.last_step, first_s, early.first_step, early.last_step);
        return;
    }
    if (regimes == 1) {
        printw("  pace: %s a step now, %s since step %zu (%+.0f%%)", now_s, first_s,
               first.first_step, 100 * (1 / live->steps_per_s / first.typical_s - 1));
        return;
    }
    tp_format_duration(since_s, sizeof since_s, now.typical_s);
    tp_format_duration(in, sizeof in, now.t0_s); /* the run's clock: since its start */
    printw("  pace: %s a step since step %zu (%s in), %s in steps %zu-%zu (%+.0f%%)", since_s,
           now.first_step, in, first_s, first.first_step, first.last_step,
           100 * (now.typical_s / first.typical_s - 1));
}

/* The training's own CPU over the live window, from its recording's
 * samples: "the training: 0.6 cores, its step thread waiting for a CPU 48%
 * of the time" (its step thread's run-queue delay; with several processes
 * the most held one's: "4 step threads waiting for a CPU up to 48%"; a
 * recording without it, its processes' main threads': "waiting for a CPU"),
 * in bold from TP_CPU_WAIT_PERCENT on, where other work holds the CPUs it
 * needs. */
static void draw_training_cpu(top_state *t, uint64_t now, int *row)
{
    int64_t t1 = (int64_t)now, t0 = t1 - (int64_t)TP_LIVE_WINDOW * 1000000000;
    double cores, held;
    int threads = 0;
    if (!tp_run_live_mean(t->run, TP_METRIC_PROC_CPU_PERCENT, t0, t1, &cores))
        return;
    move((*row)++, 0);
    printw("  the training: %.1f cores", cores / 100);
    char whose[64] = "";
    if (tp_run_live_max_mean(t->run, TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT, t0, t1, &held,
                             &threads))
        snprintf(whose, sizeof whose, threads > 1 ? "%d step threads " : "its step thread ",
                 threads);
    else if (!tp_run_live_mean(t->run, TP_METRIC_PROC_CPU_WAIT_PERCENT, t0, t1, &held))
        return;
    bool waits = held >= TP_CPU_WAIT_PERCENT;
    if (waits)
        attron(A_BOLD);
    /* within 80 columns: "  the training: 1.9 cores, 12 step threads waiting for a CPU up
     * to 100% of the time" would not be */
    if (threads > 1)
        printw(", %swaiting for a CPU up to %.0f%%", whose, held);
    else
        printw(", %swaiting for a CPU %.0f%% of the time", whose, held);
    if (waits)
        attroff(A_BOLD);
}

/* The training's threads waiting on storage over the live window
 * (proc_blocked's mean, state D), from 5 % of the time on: "  its threads
 * waiting on storage 35% of the time (state D, all of them together)", or
 * from one thread at a time on "  its threads waiting on storage: 3.3 at a
 * time on average (state D)", the words the report's causes use. */
static void draw_training_storage(top_state *t, uint64_t now, int *row)
{
    int64_t t1 = (int64_t)now, t0 = t1 - (int64_t)TP_LIVE_WINDOW * 1000000000;
    double blocked;
    if (!tp_run_live_mean(t->run, TP_METRIC_PROC_BLOCKED, t0, t1, &blocked) || blocked < 0.05)
        return;
    move((*row)++, 0);
    if (blocked < 1)
        printw("  its threads waiting on storage %.0f%% of the time (state D, all of them "
               "together)",
               100 * blocked);
    else
        printw("  its threads waiting on storage: %.1f at a time on average (state D)", blocked);
}

/* The registry's newest recording: its pid (0 when none), path, and why none
 * can be seen where its directory can't be trusted. */
typedef struct {
    pid_t pid;
    char path[4096], why[400];
} newest_recording;

/* Fills n from the registry; whether it is another recording than the one t
 * shows (its command ended, another began, or none was shown). */
static bool look_at_registry(const top_state *t, newest_recording *n)
{
    n->pid = 0;
    n->why[0] = 0;
    if (!tp_registry_newest(n->path, sizeof n->path, &n->pid, n->why, sizeof n->why))
        n->pid = 0;
    return n->pid != t->run_pid || (n->pid && strcmp(n->path, t->run_path) != 0);
}

/* The other stalled ranks, a line for each place (the ranks there in
 * one), up to TOP_STALL_GROUPS of them, then how many places more. */
#define TOP_STALL_GROUPS 4
static void draw_other_stalls(top_state *t, int32_t worst, int cols, int *row)
{
    char group[1200], line[1300];
    size_t from = 0, shown = 0, more = 0;
    while (tp_stall_places_group(&t->places, worst, &from, group, sizeof group)) {
        if (shown == TOP_STALL_GROUPS || *row >= LINES - 1) {
            more++;
            continue;
        }
        snprintf(line, sizeof line, "also stalled: %s", group);
        tp_utf8_cut(line, (size_t)(cols > 4 ? cols - 3 : 1));
        move((*row)++, 0);
        printw("  %s", line);
        shown++;
    }
    if (more && *row < LINES - 1) {
        move((*row)++, 0);
        printw("  and %zu place%s more", more, more == 1 ? "" : "s");
    }
}

/* The worst stalled rank's line, "STALLED: rank 1 no progress for 45 s", how
 * many are stalled where more than one ("STALLED (3 ranks): ..."), and
 * where it was last seen on the line below, within the screen (a path is
 * long), then the others; nothing while no rank is stalled. */
static void draw_stall(top_state *t, uint64_t now, int cols, int *row)
{
    int32_t stalled_rank;
    double stalled_s;
    char where[900] = "";
    bool stalled =
        t->recording && tp_live_worst_stall(t->recording, now, &stalled_rank, &stalled_s);
    t->places.run = t->run;
    if (t->recording)
        tp_stall_places_refresh(&t->places, t->recording, now, stalled ? stalled_rank : INT32_MIN,
                                where, sizeof where);
    if (!stalled)
        return;
    move((*row)++, 0);
    attron(A_BOLD);
    size_t count = tp_live_stalled_ranks(t->recording, now, NULL, 0);
    printw("  STALLED");
    if (count > 1)
        printw(" (%zu ranks)", count);
    if (stalled_rank >= 0)
        printw(": rank %d no progress for %.0f s", (int)stalled_rank, stalled_s);
    else
        printw(": no progress for %.0f s", stalled_s);
    attroff(A_BOLD);
    if (where[0] && *row < LINES - 1) {
        char *words = where + 2; /* "last seen in ...": its comma dropped */
        tp_utf8_cut(words, (size_t)(cols > 4 ? cols - 3 : 1));
        move((*row)++, 0);
        printw("  %s", words);
    }
    draw_other_stalls(t, stalled_rank, cols, row);
}

static void draw_record(top_state *t, int cols, int *row)
{
    newest_recording n;
    bool other = look_at_registry(t, &n);
    if (n.pid && other) {
        char err[512];
        forget_recording(t);
        t->run = tp_run_open(n.path, err, sizeof err);
        t->run_pid = n.pid;
        snprintf(t->run_path, sizeof t->run_path, "%s", n.path);
    } else if (!n.pid && t->run) {
        forget_recording(t);
    }
    (*row)++;
    move((*row)++, 0);
    if (!t->run) {
        const char *prefix = "the recordings' directory ";
        if (n.why[0]) /* the recordings' directory can't be trusted: say so */
            printw("no record can be seen: its directory %.*s", cols > 40 ? cols - 38 : 8,
                   strncmp(n.why, prefix, strlen(prefix)) == 0 ? n.why + strlen(prefix) : n.why);
        else
            printw("no trainprof record running");
        return;
    }
    uint64_t now;
    if (!tp_run_live_now(t->run, &now)) {
        /* opened before the recorder's first commit: open it again next time */
        printw("RECORD pid %d  %s  starting", (int)t->run_pid, t->run_path);
        forget_recording(t);
        return;
    }
    tp_live_window live;
    follow_recording(t, now, &live);
    char dur[32];
    tp_format_duration(dur, sizeof dur, (double)now / 1e9);
    /* the path's end says most: the file name */
    int room = cols > 60 ? cols - 40 : 20;
    size_t len = strlen(t->run_path);
    const char *shown = len > (size_t)room ? t->run_path + len - (size_t)(room - 3) : t->run_path;
    printw("RECORD pid %d  %s%s  %s", (int)t->run_pid, shown == t->run_path ? "" : "...", shown,
           dur);
    move((*row)++, 0);
    printw("  %.1f steps/s", live.steps_per_s);
    if (live.samples_per_s > 0)
        printw("   %.0f samples/s", live.samples_per_s);
    if (live.batches_per_step > 1.05) /* gradient accumulation */
        printw("   %.1f micro-batches/step", live.batches_per_step);
    printw("   (last %d s)", TP_LIVE_WINDOW);
    draw_pace(t, &live, row);
    draw_training_cpu(t, now, row);
    draw_training_storage(t, now, row);
    draw_stall(t, now, cols, row);
    for (size_t i = 0; i < live.nphases && *row < LINES - 1; i++) {
        move((*row)++, 0);
        printw("  %-20.20s", live.phases[i].name);
        tp_top_bar(cols > 60 ? 30 : 15, 100 * live.phases[i].share);
        printw(" %5.1f%%", 100 * live.phases[i].share);
        if (live.phases[i].has_device) /* its CUDA event time, beside the host's */
            printw("  GPU %5.1f%%", 100 * live.phases[i].device_share);
    }
}

static void draw(top_state *t)
{
    erase();
    int cols = COLS, row = 0;
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char clock_text[16];
    strftime(clock_text, sizeof clock_text, "%H:%M:%S", &tm);
    attron(A_BOLD);
    mvprintw(row++, 0, "trainprof top  %s  %s  (q quits)", host, clock_text);
    attroff(A_BOLD);
    draw_cpu(t, cols, &row);
    tp_top_draw_host(t->machine, &row);
    draw_gpus(t, cols, &row);
    draw_record(t, cols, &row);
    refresh();
}

/* One measurement: sample every collector, keep history, drop the rest. */
static void measure(top_state *t, tp_collector_set *set, tp_batch *scratch)
{
    tp_collectors_sample(set, tp_clock_mono_ns());
    tp_sink_take(t->sink, scratch);
    tp_live_apply(t->machine, scratch);
    tp_batch_clear(scratch);
    double v;
    if (latest(t, TP_METRIC_CPU_UTIL_PERCENT, "{}", &v))
        push(&t->cpu, v);
    for (int g = 0; g < MAX_GPUS; g++) {
        char labels[32];
        tp_labels_gpu(labels, sizeof labels, g);
        if (!latest(t, TP_METRIC_GPU_UTIL_PERCENT, labels, &v))
            break;
        push(&t->gpu[g], v);
    }
}

int cmd_top(int argc, char **argv)
{
    double interval = 1.0;
    const tp_option options[] = {
        TP_NUMBER('i', "interval", "SECS", "refresh period, 0.2 to 60 (default: 1)", &interval, 0.2,
                  60, "seconds"),
    };
    const tp_command cmd = {
        .name = "top", .usage = usage, TP_OPTION_TABLE(options), .max_operands = 0};
    int first;
    int parsed = tp_options_parse(&cmd, argc, argv, &first);
    if (parsed != TP_OPTIONS_OK)
        return parsed;
    if (!isatty(STDOUT_FILENO)) {
        tp_error("top: standard output is not a terminal");
        return 2;
    }
    tp_sysroot root;
    if (!tp_sysroot_open(&root, tp_sysroot_default_path())) {
        tp_error("top: cannot open %s: %s", tp_sysroot_default_path(), strerror(errno));
        return 1;
    }
    top_state t;
    memset(&t, 0, sizeof t);
    tp_pace_now_init(&t.pace, 0);
    t.sink = tp_sink_new(tp_clock_mono_ns());
    t.machine = tp_live_new(interval);
    if (!t.sink || !t.machine) {
        tp_error("top: out of memory");
        return 1;
    }
    tp_collect_env env = {&root, t.sink, 0};
    tp_collector_set set;
    tp_collectors_open(&set, &env, TP_COLLECT_ALL);
    tp_batch scratch = {0};
    measure(&t, &set, &scratch);
    struct timespec first_gap = {0, 250000000}; /* so the first screen has rates */
    nanosleep(&first_gap, NULL);
    initscr();
    cbreak();
    noecho();
    curs_set(0);
    keypad(stdscr, TRUE);
    /* the registry is looked at twice a second between refreshes: a new
     * recording is shown at once, and one that left it is let go at once,
     * since its recorder can't make its file whole while another
     * connection holds it (it waits up to TP_WRITER_LET_GO_WAIT_MS) */
    double poll = interval < 0.5 ? interval : 0.5;
    timeout((int)(poll * 1000));
    double next_s = 0;
    int key = ERR;
    newest_recording seen;
    for (;;) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double now_s = (double)now.tv_sec + (double)now.tv_nsec / 1e9;
        /* a key (a resize) or another recording: drawn again at once */
        if (now_s >= next_s || key != ERR || look_at_registry(&t, &seen)) {
            measure(&t, &set, &scratch);
            draw(&t);
            next_s = now_s + interval;
        }
        key = getch();
        if (key == 'q' || key == 'Q')
            break;
    }
    endwin();
    forget_recording(&t);
    tp_batch_free(&t.rows);
    tp_live_free(t.machine);
    tp_batch_free(&scratch);
    tp_collectors_close(&set);
    tp_sink_free(t.sink);
    tp_sysroot_close(&root);
    return 0;
}
