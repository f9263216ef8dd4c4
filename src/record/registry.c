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
 * to everyone else: in a shared /tmp, anything else may be someone's trap. */
static bool private_dir(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode) && sb.st_uid == getuid() &&
           (sb.st_mode & 0077) == 0;
}

static bool registry_dir(char *dir, size_t cap, bool create)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (xdg && *xdg) {
        snprintf(dir, cap, "%s/trainprof-records", xdg);
    } else {
        char base[64];
        snprintf(base, sizeof base, "/tmp/trainprof-%d", (int)getuid());
        if (create && mkdir(base, 0700) != 0 && errno != EEXIST)
            return false;
        if (!private_dir(base)) /* made by someone else before us: not ours to use */
            return false;
        snprintf(dir, cap, "%s/records", base);
    }
    if (create && mkdir(dir, 0700) != 0 && errno != EEXIST)
        return false;
    return private_dir(dir);
}

bool tp_registry_add(const char *run_path)
{
    char dir[512], path[600], abs[PATH_MAX];
    if (!registry_dir(dir, sizeof dir, true) || !realpath(run_path, abs))
        return false;
    snprintf(path, sizeof path, "%s/%d", dir, (int)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return false;
    }
    fprintf(f, "%s\n", abs);
    return fclose(f) == 0;
}

void tp_registry_remove(void)
{
    char dir[512], path[600];
    if (!registry_dir(dir, sizeof dir, false))
        return;
    snprintf(path, sizeof path, "%s/%d", dir, (int)getpid());
    unlink(path);
}

bool tp_registry_newest(char *run_path, size_t cap, pid_t *pid)
{
    char dir[512];
    if (!registry_dir(dir, sizeof dir, false))
        return false;
    DIR *d = opendir(dir);
    if (!d)
        return false;
    struct dirent *e;
    time_t newest = 0;
    bool found = false;
    while ((e = readdir(d))) {
        pid_t p = (pid_t)atoi(e->d_name);
        if (p <= 0 || (kill(p, 0) != 0 && errno == ESRCH))
            continue;
        char path[800];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        FILE *f = stat(path, &sb) == 0 && sb.st_mtime >= newest ? fopen(path, "r") : NULL;
        if (!f)
            continue;
        if (fgets(run_path, (int)cap, f)) {
            run_path[strcspn(run_path, "\n")] = '\0';
            newest = sb.st_mtime;
            *pid = p;
            found = true;
        }
        fclose(f);
    }
    closedir(d);
    return found;
}
