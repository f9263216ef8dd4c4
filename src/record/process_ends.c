/* process_ends.c: traced processes that ended, and how (process_ends.h). */
#include "record/process_ends.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

bool tp_zombie_status(int32_t pid, char *out, size_t cap)
{
    char path[48], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold anything but this */
    if (!p || p[1] != ' ' || p[2] != 'Z')
        return false;
    p += 2; /* field 3, the state */
    for (int field = 3; field < 52 && p; field++) {
        p = strchr(p, ' ');
        p = p ? p + 1 : NULL;
    }
    if (!p || *p < '0' || *p > '9')
        return false;
    long code = strtol(p, NULL, 10);
    if (code & 0x7f)
        snprintf(out, cap, "signal %ld", code & 0x7f);
    else
        snprintf(out, cap, "exit %ld", (code >> 8) & 0xff);
    return true;
}

/* The value of the line "name N" in file (absent or unreadable: -1). */
static long long counter_in(const char *file, const char *name)
{
    FILE *f = fopen(file, "re");
    if (!f)
        return -1;
    char line[256];
    long long value = -1;
    size_t len = strlen(name);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, name, len) == 0 && line[len] == ' ') {
            value = strtoll(line + len + 1, NULL, 10);
            break;
        }
    fclose(f);
    return value;
}

/* The kills of the kernel's OOM killer so far: in the recorder's cgroup
 * (v2 memory.events, v1 memory.oom_control; the command's, which it
 * inherited) where the kernel counts them there, else on the host
 * (/proc/vmstat oom_kill, Linux 4.13+); -1 where neither says. */
static long long oom_kills(void)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    char line[512], path[700];
    long long kills = -1;
    while (f && kills < 0 && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *rest = strchr(line, ':');
        char *where = rest ? strchr(rest + 1, ':') : NULL;
        if (!where)
            continue;
        *where++ = '\0';
        if (strcmp(rest + 1, "") == 0 && strncmp(line, "0", 1) == 0) {
            snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.events", where);
            kills = counter_in(path, "oom_kill");
        } else if (strstr(rest + 1, "memory")) {
            snprintf(path, sizeof path, "/sys/fs/cgroup/memory%s/memory.oom_control", where);
            kills = counter_in(path, "oom_kill");
        }
    }
    if (f)
        fclose(f);
    return kills >= 0 ? kills : counter_in("/proc/vmstat", "oom_kill");
}

void tp_process_ends_init(tp_process_ends *e)
{
    memset(e, 0, sizeof *e);
    e->oom_kills = oom_kills();
}

static void write_status(tp_sink *sink, int32_t pid, const char *status)
{
    char key[48];
    snprintf(key, sizeof key, "proc.%d.status", (int)pid);
    tp_sink_meta(sink, key, status);
}

void tp_process_ends_note(tp_process_ends *e, tp_sink *sink, int32_t pid, const char *phase,
                          const char *stack, uint64_t steps)
{
    if (pid <= 0)
        return;
    if (e->written >= TP_ENDS_MAX) {
        e->untold++;
        return;
    }
    e->written++;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    uint64_t start = tp_sink_start_ns(sink);
    char key[48], value[32], status[32];
    snprintf(key, sizeof key, "proc.%d.end_ns", (int)pid);
    snprintf(value, sizeof value, "%llu", (unsigned long long)(now > start ? now - start : 0));
    tp_sink_meta(sink, key, value);
    if (steps) {
        snprintf(key, sizeof key, "proc.%d.step", (int)pid);
        snprintf(value, sizeof value, "%llu", (unsigned long long)steps);
        tp_sink_meta(sink, key, value);
    }
    if (phase && phase[0]) {
        snprintf(key, sizeof key, "proc.%d.phase", (int)pid);
        tp_sink_meta(sink, key, phase);
    }
    if (stack && stack[0]) {
        snprintf(key, sizeof key, "proc.%d.stack", (int)pid);
        tp_sink_meta(sink, key, stack);
    }
    long long kills = oom_kills();
    if (kills > e->oom_kills && e->oom_kills >= 0) { /* the OOM killer struck since */
        snprintf(key, sizeof key, "proc.%d.oom_kills", (int)pid);
        snprintf(value, sizeof value, "%lld", kills - e->oom_kills);
        tp_sink_meta(sink, key, value);
    }
    e->oom_kills = kills;
    if (tp_zombie_status(pid, status, sizeof status))
        write_status(sink, pid, status);
    else if (e->npending < TP_ENDS_PENDING)
        e->pending[e->npending++] = (struct tp_pending_end){pid, TP_END_STATUS_TRIES};
}

void tp_process_ends_check(tp_process_ends *e, tp_sink *sink)
{
    for (size_t i = e->npending; i-- > 0;) {
        char status[32];
        bool found = tp_zombie_status(e->pending[i].pid, status, sizeof status);
        if (found)
            write_status(sink, e->pending[i].pid, status);
        if (found || --e->pending[i].tries <= 0)
            e->pending[i] = e->pending[--e->npending];
    }
}
