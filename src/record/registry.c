/* registry.c: the directory of live recordings. */
#include "record/registry.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether path is a directory itself (not a link to one), ours, and closed
 * to everyone else: in a shared /tmp, anything else may be someone's trap.
 * Otherwise why, in words, into why. */
static bool private_dir(const char *path, char *why, size_t cap)
{
    struct stat sb;
    if (lstat(path, &sb) != 0 && errno == ENOENT)
        why[0] = '\0'; /* none yet: nothing to say */
    else if (lstat(path, &sb) != 0)
        snprintf(why, cap, "the recordings' directory can't be read (%s): %s", strerror(errno),
                 path);
    else if (S_ISLNK(sb.st_mode))
        snprintf(why, cap,
                 "the recordings' directory is a symbolic link (not followed: anyone could "
                 "have made it): %s",
                 path);
    else if (!S_ISDIR(sb.st_mode))
        snprintf(why, cap, "the recordings' directory is not a directory: %s", path);
    else if (sb.st_uid != getuid())
        snprintf(why, cap, "the recordings' directory is another user's (uid %d): %s",
                 (int)sb.st_uid, path);
    else if (sb.st_mode & 0077)
        snprintf(why, cap, "the recordings' directory is open to other users (mode %04o): %s",
                 (unsigned)(sb.st_mode & 07777), path);
    else
        return true;
    return false;
}

static bool registry_dir(char *dir, size_t cap, bool create, char *why, size_t wcap)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (xdg && *xdg) {
        snprintf(dir, cap, "%s/trainprof-records", xdg);
    } else {
        char base[64];
        snprintf(base, sizeof base, "/tmp/trainprof-%d", (int)getuid());
        if (create && mkdir(base, 0700) != 0 && errno != EEXIST) {
            snprintf(why, wcap, "cannot make %s: %s", base, strerror(errno));
            return false;
        }
        if (!private_dir(base, why, wcap)) /* made by someone else before us: not ours */
            return false;
        snprintf(dir, cap, "%s/records", base);
    }
    if (create && mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(why, wcap, "cannot make %s: %s", dir, strerror(errno));
        return false;
    }
    return private_dir(dir, why, wcap);
}

/* When process p started, in clock ticks after boot (/proc/PID/stat's 22nd
 * field); 0 where it can't be read. With the pid it names one process: a
 * pid alone may be a later process's, once a recorder killed outright
 * (SIGKILL, the OOM killer) left its entry behind. */
static unsigned long long process_start(pid_t p)
{
    char path[64], stat[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)p);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(stat, 1, sizeof stat - 1, f) : 0;
    if (f)
        fclose(f);
    stat[n] = '\0';
    const char *after = strrchr(stat, ')'); /* the name may hold anything */
    unsigned long long start = 0;
    if (after && sscanf(after + 1,
                        " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
                        "%*d %*d %*d %*d %llu",
                        &start) != 1)
        start = 0;
    return start;
}

/* Entry name of the registry in dir, read: its run file's path and its
 * control directory (empty where it has none); false where it is no live
 * recorder's (its process gone, or another process under its pid). */
static bool read_entry(const char *dir, const char *name, pid_t *pid, char *run_path, size_t cap,
                       char *sockets, size_t scap)
{
    pid_t p = (pid_t)atoi(name);
    if (p <= 0 || (kill(p, 0) != 0 && errno == ESRCH))
        return false;
    char path[800], start[32] = "";
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return false;
    }
    bool ok = fgets(run_path, (int)cap, f) && fgets(sockets, (int)scap, f);
    if (ok && fgets(start, sizeof start, f)) /* an older entry, without it: its pid */
        ok = strtoull(start, NULL, 10) == process_start(p);
    fclose(f);
    if (!ok)
        return false; /* run_path and sockets may be unread */
    run_path[strcspn(run_path, "\n")] = '\0';
    sockets[strcspn(sockets, "\n")] = '\0';
    *pid = p;
    return true;
}

bool tp_registry_add(const char *run_path, const char *control_dir, char *why, size_t cap)
{
    char dir[512], path[600], abs[PATH_MAX];
    if (!registry_dir(dir, sizeof dir, true, why, cap))
        return false;
    if (!realpath(run_path, abs)) {
        snprintf(why, cap, "%s: %s", run_path, strerror(errno));
        return false;
    }
    snprintf(path, sizeof path, "%s/%d", dir, (int)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        snprintf(why, cap, "cannot write %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return false;
    }
    fprintf(f, "%s\n%s\n%llu\n", abs, control_dir, process_start(getpid()));
    return fclose(f) == 0;
}

void tp_registry_remove(void)
{
    char dir[512], path[600], why[300];
    if (!registry_dir(dir, sizeof dir, false, why, sizeof why))
        return;
    snprintf(path, sizeof path, "%s/%d", dir, (int)getpid());
    unlink(path);
}

bool tp_registry_each(tp_registry_fn fn, void *ctx, char *why, size_t wcap)
{
    char dir[512];
    why[0] = '\0';
    errno = 0;
    if (!registry_dir(dir, sizeof dir, false, why, wcap)) {
        if (errno != ENOENT)
            return false;
        why[0] = '\0'; /* no recording ever ran here */
        return true;
    }
    DIR *d = opendir(dir);
    if (!d)
        return true;
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[800], line[PATH_MAX + 2], sockets[PATH_MAX + 2];
        pid_t p;
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &sb) == 0 &&
            read_entry(dir, e->d_name, &p, line, sizeof line, sockets, sizeof sockets))
            fn(ctx, p, line, (long long)sb.st_mtime);
    }
    closedir(d);
    return true;
}

bool tp_registry_newest(char *run_path, size_t cap, pid_t *pid, char *why, size_t wcap)
{
    char dir[512];
    why[0] = '\0';
    if (!registry_dir(dir, sizeof dir, false, why, wcap))
        return false;
    DIR *d = opendir(dir);
    if (!d)
        return false;
    struct dirent *e;
    time_t newest = 0;
    bool found = false;
    while ((e = readdir(d))) {
        char path[800], line[PATH_MAX + 2], sockets[PATH_MAX + 2];
        pid_t p;
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &sb) != 0 || sb.st_mtime < newest ||
            !read_entry(dir, e->d_name, &p, line, sizeof line, sockets, sizeof sockets))
            continue;
        snprintf(run_path, cap, "%s", line);
        newest = sb.st_mtime;
        *pid = p;
        found = true;
    }
    closedir(d);
    return found;
}

bool tp_registry_find(const char *run_path, pid_t pid, pid_t *found, char *control_dir, size_t cap,
                      char *why, size_t wcap)
{
    char dir[512], want[PATH_MAX] = "";
    why[0] = '\0';
    if (!registry_dir(dir, sizeof dir, false, why, wcap))
        return false;
    if (run_path && !realpath(run_path, want)) {
        snprintf(why, wcap, "%s: %s", run_path, strerror(errno));
        return false;
    }
    DIR *d = opendir(dir);
    if (!d)
        return false;
    struct dirent *e;
    bool ok = false;
    while (!ok && (e = readdir(d))) {
        char line[PATH_MAX + 2], sockets[PATH_MAX + 2];
        pid_t p;
        if ((!run_path && atoi(e->d_name) != pid) ||
            !read_entry(dir, e->d_name, &p, line, sizeof line, sockets, sizeof sockets))
            continue;
        if ((!run_path || strcmp(line, want) == 0) && sockets[0]) {
            *found = p;
            snprintf(control_dir, cap, "%s", sockets);
            ok = true;
        }
    }
    closedir(d);
    return ok;
}
