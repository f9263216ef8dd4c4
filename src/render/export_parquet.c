/* export_parquet.c: see export_parquet.h. */
#include "render/export_parquet.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/log.h"
#include "util/package_python.h"

/* Whether path is a directory that holds anything. */
static bool holds_files(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return false;
    struct dirent *e;
    bool any = false;
    while (!any && (e = readdir(d)))
        any = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return any;
}

int tp_export_parquet(const char *out_dir, char *const *paths, size_t n, bool force)
{
    if (!out_dir) {
        tp_error("export: --format parquet writes a directory: name it with -o DIR");
        return 2;
    }
    if (!force && holds_files(out_dir)) {
        tp_error("export: %s holds files already (--force writes into it)", out_dir);
        return 2;
    }
    char python[PATH_MAX], tried[3 * PATH_MAX + 64];
    if (!tp_package_python("trainprof.parquet", python, sizeof python, tried, sizeof tried)) {
        tp_error("export: --format parquet runs trainprof's Python package with pyarrow, and no "
                 "Python here imports trainprof (tried %s): pip install trainprof pyarrow into "
                 "one, or name it with TRAINPROF_PYTHON",
                 tried[0] ? tried : "python3");
        return 2;
    }
    char **argv = calloc(n + 5, sizeof *argv);
    if (!argv) {
        tp_error("export: out of memory");
        return 2;
    }
    argv[0] = python;
    argv[1] = "-m";
    argv[2] = "trainprof.parquet";
    argv[3] = (char *)out_dir;
    for (size_t i = 0; i < n; i++)
        argv[4 + i] = paths[i];
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execvp(python, argv);
        fprintf(stderr, "trainprof: error: export: cannot run %s: %s\n", python, strerror(errno));
        _exit(127);
    }
    free(argv);
    if (pid < 0) {
        tp_error("export: cannot start %s: %s", python, strerror(errno));
        return 2;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            tp_error("export: lost %s: %s", python, strerror(errno));
            return 2;
        }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 1) /* an exception: a traceback said */
        tp_error("export: %s -m trainprof.parquet failed", python);
    return 2;
}
