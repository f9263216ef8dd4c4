/* sysroot.h: reading /proc and /sys files, relative to a redirectable root.
 *
 * Collectors never open "/proc/..." directly: they go through a tp_sysroot so
 * tests can point them at fixture trees (wrapping counters, vanished devices,
 * malformed lines). A tp_procfile keeps its file open and re-reads it from
 * offset 0 with pread into a buffer it owns; the buffer grows only when the
 * file outgrows it, so steady-state sampling allocates nothing. */
#ifndef TP_COLLECT_SYSROOT_H
#define TP_COLLECT_SYSROOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tp_sysroot {
    int dirfd;       /* the root directory */
    char path[4096]; /* its path, for messages */
} tp_sysroot;

/* Opens root ("/" in production). Returns false with errno set on failure. */
bool tp_sysroot_open(tp_sysroot *root, const char *path);
void tp_sysroot_close(tp_sysroot *root);

/* The root trainprof reads from: $TRAINPROF_SYSROOT (tests only) or "/". */
const char *tp_sysroot_default_path(void);

/* openat relative to the root; rel may start with '/'. */
int tp_sysroot_openat(const tp_sysroot *root, const char *rel, int flags);
bool tp_sysroot_exists(const tp_sysroot *root, const char *rel);

typedef struct tp_procfile {
    int fd;
    char *buf;
    size_t cap;
    size_t len;
} tp_procfile;

/* Opens rel under root for repeated reads. False (errno set) if it can't. */
bool tp_procfile_open(tp_procfile *pf, const tp_sysroot *root, const char *rel);
/* Re-reads the whole file from offset 0; false if the read fails. */
bool tp_procfile_read(tp_procfile *pf);
void tp_procfile_close(tp_procfile *pf);

/* One-shot helpers for files read once (names, limits). */
bool tp_sysroot_read_text(const tp_sysroot *root, const char *rel, char *out, size_t cap);
bool tp_sysroot_read_u64(const tp_sysroot *root, const char *rel, uint64_t *out);

#endif
