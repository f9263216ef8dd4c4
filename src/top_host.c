/* top_host.c: `trainprof top`'s lines on the host beyond its CPUs: memory,
 * disks and network (top_host.h). */
#include "top_host.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "core/metric_catalog.h"
#include "render/units.h"
#include "util/labels.h"

void tp_top_bar(int width, double percent)
{
    int fill = (int)(percent / 100.0 * width + 0.5);
    if (fill > width)
        fill = width;
    addch('[');
    for (int i = 0; i < width; i++)
        addch(i < fill ? '|' : ' ');
    addch(']');
}

/* Prints text where it fits on the current line, else nothing (curses would
 * wrap it onto the next). */
static void print_if_room(const char *text)
{
    if (getcurx(stdscr) + (int)strlen(text) < COLS)
        addstr(text);
}

/* The series of a metric with the highest latest value. */
typedef struct highest {
    char labels[TP_LABELS_MAX];
    double value;
    bool found;
} highest;

static void keep_highest(void *ctx, const char *labels, double value)
{
    highest *h = ctx;
    if (!h->found || value > h->value) {
        snprintf(h->labels, sizeof h->labels, "%s", labels);
        h->value = value;
        h->found = true;
    }
}

/* "nvme0n1" of {"device":"nvme0n1"}: a device's name as a person reads it. */
static void device_name(const char *labels, char *out, size_t cap)
{
    char shown[TP_LABELS_MAX];
    tp_labels_display(labels, shown, sizeof shown);
    const char *eq = strchr(shown, '=');
    snprintf(out, cap, "%.24s", eq ? eq + 1 : shown);
}

/* Starts a new line: title, then the agent totals of two byte rates
 * ("read 1.2 MB/s write 300 kB/s") where both are known. */
static void totals_line(tp_live *machine, int *row, const char *title, const char *name_a,
                        const char *metric_a, const char *name_b, const char *metric_b)
{
    double v, w;
    char a[32], b[32];
    move((*row)++, 0);
    addstr(title);
    if (tp_live_latest(machine, metric_a, "{}", &v) &&
        tp_live_latest(machine, metric_b, "{}", &w)) {
        tp_format_value(a, sizeof a, "bytes_per_s", v);
        tp_format_value(b, sizeof b, "bytes_per_s", w);
        printw("%s %-11s %s %-11s", name_a, a, name_b, b);
    }
}

/* Totals, IOPS, and the busiest disk (its share of time busy): a disk near
 * 100 % is saturated whatever its MB/s. */
static void draw_disk(tp_live *machine, int *row)
{
    double v, w;
    totals_line(machine, row, "DISK ", "read", TP_METRIC_DISK_READ_BYTES_PER_S, "write",
                TP_METRIC_DISK_WRITE_BYTES_PER_S);
    char text[96];
    if (tp_live_latest(machine, TP_METRIC_DISK_READ_IOPS, "{}", &v) &&
        tp_live_latest(machine, TP_METRIC_DISK_WRITE_IOPS, "{}", &w)) {
        snprintf(text, sizeof text, " %6.0f IOPS", v + w);
        print_if_room(text);
    }
    highest busy = {0};
    tp_live_latest_each(machine, TP_METRIC_DISK_BUSY_PERCENT, keep_highest, &busy);
    if (busy.found) {
        char name[32];
        device_name(busy.labels, name, sizeof name);
        snprintf(text, sizeof text, "  busiest %s %.0f%%", name, busy.value);
        print_if_room(text);
    }
}

/* Each link's speed, kept to find the most used one. */
typedef struct links {
    char labels[16][TP_LABELS_MAX];
    double speed[16];
    int n;
} links;

static void keep_link(void *ctx, const char *labels, double speed)
{
    links *l = ctx;
    if (l->n < 16 && speed > 0) {
        snprintf(l->labels[l->n], sizeof l->labels[l->n], "%s", labels);
        l->speed[l->n++] = speed;
    }
}

/* Totals, and the link most used against its speed (in either direction:
 * links are full duplex), where the system reports link speeds. */
static void draw_net(tp_live *machine, int *row)
{
    char a[32];
    totals_line(machine, row, "NET  ", "recv", TP_METRIC_NET_RECV_BYTES_PER_S, "sent",
                TP_METRIC_NET_SENT_BYTES_PER_S);
    links l = {.n = 0};
    tp_live_latest_each(machine, TP_METRIC_NET_LINK_SPEED_BYTES_PER_S, keep_link, &l);
    int best = -1;
    double best_use = 0;
    for (int i = 0; i < l.n; i++) {
        double recv = 0, sent = 0;
        tp_live_latest(machine, TP_METRIC_NET_RECV_BYTES_PER_S, l.labels[i], &recv);
        tp_live_latest(machine, TP_METRIC_NET_SENT_BYTES_PER_S, l.labels[i], &sent);
        double use = 100 * (recv > sent ? recv : sent) / l.speed[i];
        if (best < 0 || use > best_use) {
            best = i;
            best_use = use;
        }
    }
    if (best >= 0) {
        char name[32];
        device_name(l.labels[best], name, sizeof name);
        tp_format_value(a, sizeof a, "bytes_per_s", l.speed[best]);
        char text[96];
        snprintf(text, sizeof text, " busiest link %s %.0f%% of %s", name, best_use, a);
        print_if_room(text);
    }
}

void tp_top_draw_host(tp_live *machine, int *row)
{
    double used, avail, swap;
    char a[32], b[32];
    move((*row)++, 0);
    printw("MEM  ");
    if (tp_live_latest(machine, TP_METRIC_HOST_MEM_USED_BYTES, "{}", &used) &&
        tp_live_latest(machine, TP_METRIC_HOST_MEM_AVAILABLE_BYTES, "{}", &avail)) {
        tp_top_bar(20, 100.0 * used / (used + avail));
        tp_format_value(a, sizeof a, "bytes", used);
        tp_format_value(b, sizeof b, "bytes", used + avail);
        printw(" %s / %s", a, b);
        if (tp_live_latest(machine, TP_METRIC_SWAP_USED_BYTES, "{}", &swap)) {
            tp_format_value(a, sizeof a, "bytes", swap);
            printw("   swap %s", a);
        }
    }
    draw_disk(machine, row);
    draw_net(machine, row);
}
