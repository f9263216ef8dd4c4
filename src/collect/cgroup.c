/* cgroup.c: the CPU and memory limits of the cgroup trainprof runs in.
 *
 * A container or a Slurm job often gets fewer cores and less memory than the
 * host has; the report needs the limit, not the host's size, to judge
 * saturation. Both cgroup v2 (cpu.max, memory.max) and v1 (cpu.cfs_quota_us
 * and cpu.cfs_period_us, memory.limit_in_bytes) are read. The limits go into
 * the run's metadata as cgroup_version, cgroup_cpu_limit_cores and
 * cgroup_memory_limit_bytes ("none" when unlimited). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "collect/collector.h"
#include "util/text_parse.h"
#include "core/run_keys.h"

typedef struct cgroup_paths {
    char v2[512];     /* path of the v2 group, or "" */
    char cpu[512];    /* v1 cpu controller group, or "" */
    char memory[512]; /* v1 memory controller group, or "" */
} cgroup_paths;

/* Reads /proc/self/cgroup: "0::/path" for v2, "N:ctrl,ctrl:/path" for v1.
 * v1 paths are given relative to /sys/fs/cgroup ("cpu/..." works for the
 * usual "cpu,cpuacct" mount, which distributions link as "cpu"). */
static bool read_membership(const tp_sysroot *root, cgroup_paths *out)
{
    char text[4096];
    if (!tp_sysroot_read_text(root, "/proc/self/cgroup", text, sizeof text))
        return false;
    memset(out, 0, sizeof *out);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        const char *ctrls = c1 + 1, *path = c2 + 1;
        if (*ctrls == '\0')
            snprintf(out->v2, sizeof out->v2, "%s", path);
        for (const char *t = ctrls; *t;) {
            size_t n = strcspn(t, ",");
            if (n == 3 && memcmp(t, "cpu", 3) == 0)
                snprintf(out->cpu, sizeof out->cpu, "cpu/%s", path);
            if (n == 6 && memcmp(t, "memory", 6) == 0)
                snprintf(out->memory, sizeof out->memory, "memory/%s", path);
            t += n + (t[n] == ',');
        }
    }
    return true;
}

/* Reads a cgroup file from the group's own directory, falling back to the
 * hierarchy's root (inside a container the group is often mounted there). */
static bool read_group_file(const tp_sysroot *root, const char *mount_rel, const char *file,
                            char *out, size_t cap)
{
    char rel[1200];
    snprintf(rel, sizeof rel, "/sys/fs/cgroup/%s/%s", mount_rel, file);
    if (tp_sysroot_read_text(root, rel, out, cap))
        return true;
    char top[600];
    snprintf(top, sizeof top, "%s", mount_rel);
    char *slash = strchr(top, '/');
    if (slash)
        *slash = '\0';
    snprintf(rel, sizeof rel, "/sys/fs/cgroup/%s/%s", slash ? top : "", file);
    return tp_sysroot_read_text(root, rel, out, cap);
}

static void put_cores(tp_sink *sink, uint64_t quota, uint64_t period)
{
    char v[64];
    snprintf(v, sizeof v, "%.3f", (double)quota / (double)period);
    tp_sink_meta(sink, TP_META_CGROUP_CPU_LIMIT_CORES, v);
}

static void record_v2(const tp_collect_env *env, const char *path)
{
    char text[128];
    tp_sink_meta(env->sink, TP_META_CGROUP_VERSION, "2");
    if (read_group_file(env->root, path, "cpu.max", text, sizeof text)) {
        const char *p = text, *end = text + strlen(text);
        uint64_t quota, period;
        if (tp_parse_u64(&p, end, &quota) && tp_parse_u64(&p, end, &period) && period)
            put_cores(env->sink, quota, period);
        else
            tp_sink_meta(env->sink, TP_META_CGROUP_CPU_LIMIT_CORES, "none");
    }
    if (read_group_file(env->root, path, "memory.max", text, sizeof text))
        tp_sink_meta(env->sink, TP_META_CGROUP_MEMORY_LIMIT_BYTES,
                     strcmp(text, "max") == 0 ? "none" : text);
}

static void record_v1(const tp_collect_env *env, const cgroup_paths *paths)
{
    char q[64], per[64], mem[64];
    tp_sink_meta(env->sink, TP_META_CGROUP_VERSION, "1");
    if (paths->cpu[0] && read_group_file(env->root, paths->cpu, "cpu.cfs_quota_us", q, sizeof q) &&
        read_group_file(env->root, paths->cpu, "cpu.cfs_period_us", per, sizeof per)) {
        const char *a = q, *b = per;
        uint64_t quota, period;
        if (q[0] != '-' && tp_parse_u64(&a, q + strlen(q), &quota) &&
            tp_parse_u64(&b, per + strlen(per), &period) && period)
            put_cores(env->sink, quota, period);
        else
            tp_sink_meta(env->sink, TP_META_CGROUP_CPU_LIMIT_CORES, "none");
    }
    if (paths->memory[0] &&
        read_group_file(env->root, paths->memory, "memory.limit_in_bytes", mem, sizeof mem)) {
        const char *a = mem;
        uint64_t limit;
        /* v1 reports "unlimited" as a huge page-aligned number near 2^63. */
        bool limited = tp_parse_u64(&a, mem + strlen(mem), &limit) && limit < (1ULL << 62);
        tp_sink_meta(env->sink, TP_META_CGROUP_MEMORY_LIMIT_BYTES, limited ? mem : "none");
    }
}

void tp_cgroup_record_limits(const tp_collect_env *env)
{
    cgroup_paths paths;
    if (!read_membership(env->root, &paths)) {
        char why[160];
        snprintf(why, sizeof why, "cannot read /proc/self/cgroup: %s%s", strerror(errno),
                 errno == EMFILE || errno == ENFILE ? " (raise ulimit -n)" : "");
        tp_sink_unavailable(env->sink, "cgroup", why);
        return;
    }
    if (paths.v2[0] && tp_sysroot_exists(env->root, "/sys/fs/cgroup/cgroup.controllers")) {
        record_v2(env, paths.v2);
        return;
    }
    if (paths.cpu[0] || paths.memory[0]) {
        record_v1(env, &paths);
        return;
    }
    tp_sink_unavailable(env->sink, "cgroup", "no cpu or memory controller in /proc/self/cgroup");
}
