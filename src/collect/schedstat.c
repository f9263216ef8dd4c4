/* schedstat.c: reading run-queue delays (schedstat.h). */
#include "collect/schedstat.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "util/text_parse.h"

bool tp_schedstat_parse(const char *buf, size_t len, uint64_t *on_cpu_ns, uint64_t *wait_ns)
{
    const char *p = buf, *end = buf + len;
    return tp_parse_u64(&p, end, on_cpu_ns) && tp_parse_u64(&p, end, wait_ns);
}

bool tp_schedstat_thread(const tp_sysroot *root, int pid, int tid, uint64_t *on_cpu_ns,
                         uint64_t *wait_ns)
{
    if (pid <= 0 || tid <= 0)
        return false;
    char rel[64], buf[128];
    snprintf(rel, sizeof rel, "proc/%d/task/%d/schedstat", pid, tid);
    int fd = tp_sysroot_openat(root, rel, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n > 0 && tp_schedstat_parse(buf, (size_t)n, on_cpu_ns, wait_ns);
}
