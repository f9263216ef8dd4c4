/* process_ends.c: traced processes that ended, and how (process_ends.h). */
#include "record/process_ends.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/run_keys.h"

tp_zombie tp_zombie_status(int32_t pid, char *out, size_t cap)
{
    char path[48], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return TP_ZOMBIE_GONE; /* reaped: nobody will say */
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return TP_ZOMBIE_GONE;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold anything but this */
    if (!p || p[1] != ' ')
        return TP_ZOMBIE_GONE;
    if (p[2] != 'Z')
        return TP_ZOMBIE_NOT_YET; /* still on its way out */
    p += 2;                       /* field 3, the state */
    for (int field = 3; field < 52 && p; field++) {
        p = strchr(p, ' ');
        p = p ? p + 1 : NULL;
    }
    if (!p || *p < '0' || *p > '9')
        return TP_ZOMBIE_GONE; /* a kernel before 3.5 */
    long code = strtol(p, NULL, 10);
    if (code & 0x7f)
        snprintf(out, cap, "signal %ld", code & 0x7f);
    else
        snprintf(out, cap, "exit %ld", (code >> 8) & 0xff);
    return TP_ZOMBIE_FOUND;
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

/* Where the kernel's OOM killer's kills are counted: the recorder's cgroup
 * (v2 memory.events, v1 memory.oom_control; the command's, which it
 * inherited) where the kernel counts them there, else the host
 * (/proc/vmstat oom_kill, Linux 4.13+); "" where neither does. */
static void find_oom_file(char *out, size_t cap)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    char line[512];
    out[0] = '\0';
    while (f && !out[0] && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *rest = strchr(line, ':');
        char *where = rest ? strchr(rest + 1, ':') : NULL;
        if (!where)
            continue;
        *where++ = '\0';
        if (rest[1] == '\0' && line[0] == '0') /* v2: 0::/path */
            snprintf(out, cap, "/sys/fs/cgroup%s/memory.events", where);
        else if (strstr(rest + 1, "memory"))
            snprintf(out, cap, "/sys/fs/cgroup/memory%s/memory.oom_control", where);
        if (out[0] && counter_in(out, "oom_kill") < 0)
            out[0] = '\0'; /* not counted there */
    }
    if (f)
        fclose(f);
    if (!out[0] && counter_in("/proc/vmstat", "oom_kill") >= 0)
        snprintf(out, cap, "/proc/vmstat");
}

void tp_process_ends_init(tp_process_ends *e)
{
    memset(e, 0, sizeof *e);
    find_oom_file(e->oom_file, sizeof e->oom_file);
    e->oom_kills = e->oom_file[0] ? counter_in(e->oom_file, "oom_kill") : -1;
}

static void meta_of(tp_sink *sink, int32_t pid, const char *field, const char *value)
{
    char key[64];
    snprintf(key, sizeof key, "proc.%d.%s", (int)pid, field);
    tp_sink_meta(sink, key, value);
}

/* Writes an end that was no clean exit (status: "exit N", "signal N", or
 * "" unknown). */
static void write_end(tp_process_ends *e, tp_sink *sink, const tp_process_end *end,
                      const char *status)
{
    if (e->written >= TP_ENDS_MAX) {
        e->untold++;
        return;
    }
    e->written++;
    char value[32];
    snprintf(value, sizeof value, "%llu", (unsigned long long)end->end_ns);
    meta_of(sink, end->pid, TP_META_PROC_END_NS, value);
    if (end->alive_ns && end->alive_ns <= end->end_ns) {
        snprintf(value, sizeof value, "%llu", (unsigned long long)end->alive_ns);
        meta_of(sink, end->pid, TP_META_PROC_ALIVE_NS, value);
    }
    if (status[0])
        meta_of(sink, end->pid, TP_META_PROC_STATUS, status);
    if (end->steps) {
        snprintf(value, sizeof value, "%llu", (unsigned long long)end->steps);
        meta_of(sink, end->pid, TP_META_PROC_STEP, value);
    }
    if (end->phase[0])
        meta_of(sink, end->pid, TP_META_PROC_PHASE, end->phase);
    if (end->stack[0])
        meta_of(sink, end->pid, TP_META_PROC_STACK, end->stack);
    if (end->oom_kills > 0) {
        snprintf(value, sizeof value, "%lld", end->oom_kills);
        meta_of(sink, end->pid, TP_META_PROC_OOM_KILLS, value);
    }
}

/* The OOM killer's kills since the last look (0 where not counted). */
static long long new_oom_kills(tp_process_ends *e)
{
    long long kills = e->oom_file[0] ? counter_in(e->oom_file, "oom_kill") : -1;
    long long fresh = kills > e->oom_kills && e->oom_kills >= 0 ? kills - e->oom_kills : 0;
    e->oom_kills = kills;
    return fresh;
}

/* An end whose status is known (or never will be): written unless it was
 * a clean exit, or one of unknown status by a process that stepped nowhere
 * and had no region open (a helper, a forked child reaped at once). The OOM
 * killer's count is read only for those written: the others cost one read
 * of /proc/PID/stat. */
static void settle(tp_process_ends *e, tp_sink *sink, tp_process_end *end, tp_zombie z,
                   const char *status)
{
    if (z == TP_ZOMBIE_FOUND && strcmp(status, "exit 0") == 0)
        return; /* a clean exit: nothing to say */
    if (z != TP_ZOMBIE_FOUND && !end->steps && !end->phase[0])
        return; /* the OOM killer's kills, if any, go to the next end said */
    end->oom_kills = new_oom_kills(e);
    write_end(e, sink, end, z == TP_ZOMBIE_FOUND ? status : "");
}

void tp_process_end_see(tp_process_end *end, tp_process_end_where *w, const tp_ring_reader *r,
                        uint64_t start_ns)
{
    if (r->last_ns > start_ns && r->last_ns - start_ns > end->alive_ns)
        end->alive_ns = r->last_ns - start_ns;
    if (r->steps > end->steps)
        end->steps = r->steps;
    if (r->depth && (!w->deepest || r->depth > w->deepest->depth))
        w->deepest = r;
    if (r->last_nframes && !w->sampled)
        w->sampled = r;
}

void tp_process_end_said(tp_process_end *end, const tp_process_end_where *w, tp_sink *sink)
{
    const tp_ring_reader *deepest = w->deepest, *sampled = w->sampled;
    char *stack = end->stack;
    size_t scap = sizeof end->stack;
    end->phase[0] = stack[0] = '\0';
    uint32_t name = deepest ? deepest->open[deepest->depth - 1].name : 0;
    if (deepest && name < deepest->names_cap && deepest->names[name] != TP_RING_NAME_LOST)
        tp_sink_name_text(sink, deepest->names[name], end->phase, sizeof end->phase);
    size_t len = 0;
    for (uint32_t k = 0; sampled && k < sampled->last_nframes && len < scap; k++) {
        char text[512];
        if (!tp_sink_frame_text(sink, sampled->last_frames[k], text, sizeof text))
            break;
        char *file = strchr(text, '\n');
        if (file)
            *file++ = '\0';
        const char *base = file ? strrchr(file, '/') : NULL;
        int n = snprintf(stack + len, scap - len, "%s%s (%s:%d)", k ? " < " : "", text,
                         base   ? base + 1
                         : file ? file
                                : "?",
                         (int)sampled->last_lines[k]);
        len = n > 0 && (size_t)n < scap - len ? len + (size_t)n : scap;
    }
}

void tp_process_ends_note(tp_process_ends *e, tp_sink *sink, tp_process_end *end)
{
    if (end->pid <= 0)
        return;
    char status[32] = "";
    tp_zombie z = tp_zombie_status(end->pid, status, sizeof status);
    if (z == TP_ZOMBIE_NOT_YET && e->npending < TP_ENDS_PENDING)
        e->pending[e->npending++] = (struct tp_pending_end){*end, TP_END_STATUS_TRIES};
    else
        settle(e, sink, end, z, status);
}

void tp_process_ends_check(tp_process_ends *e, tp_sink *sink)
{
    for (size_t i = e->npending; i-- > 0;) {
        char status[32] = "";
        tp_zombie z = tp_zombie_status(e->pending[i].end.pid, status, sizeof status);
        if (z == TP_ZOMBIE_NOT_YET && --e->pending[i].tries > 0)
            continue;
        settle(e, sink, &e->pending[i].end, z, status);
        e->pending[i] = e->pending[--e->npending];
    }
}
