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

/* Whether python runs and imports trainprof.parquet (its output silenced). */
static bool python_has_package(const char *python)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, STDOUT_FILENO);
            dup2(null, STDERR_FILENO);
        }
        execlp(python, python, "-c", "import trainprof.parquet", (char *)NULL);
        _exit(127);
    }
    int status;
    if (pid < 0)
        return false;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return false;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* The Python to run the package with, into out: TRAINPROF_PYTHON where set;
 * else the first of the python3 beside this program (a virtual
 * environment's, where pip installed it), the source tree's .venv beside
 * its build folder, and python3 on the PATH that imports trainprof. False,
 * with those tried in tried (", "-separated), where none does. */
static bool python_of(char *out, size_t cap, char *tried, size_t tcap)
{
    const char *env = getenv("TRAINPROF_PYTHON");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        snprintf(tried, tcap, "%s (TRAINPROF_PYTHON)", env);
        return python_has_package(env);
    }
    char self[PATH_MAX], candidates[3][PATH_MAX];
    size_t n = 0;
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    char *slash = len > 0 ? (self[len] = '\0', strrchr(self, '/')) : NULL;
    if (slash) {
        *slash = '\0';
        snprintf(candidates[n++], PATH_MAX, "%.*s/python3", PATH_MAX - 16, self);
        snprintf(candidates[n++], PATH_MAX, "%.*s/../.venv/bin/python", PATH_MAX - 32, self);
    }
    snprintf(candidates[n++], PATH_MAX, "python3");
    size_t used = 0;
    tried[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        bool exists = strchr(candidates[i], '/') == NULL || access(candidates[i], X_OK) == 0;
        if (!exists)
            continue;
        if (used < tcap)
            used += (size_t)snprintf(tried + used, tcap - used, "%s%s", used ? ", " : "",
                                     candidates[i]);
        if (python_has_package(candidates[i])) {
            size_t n_out = strnlen(candidates[i], cap - 1);
            memcpy(out, candidates[i], n_out);
            out[n_out] = '\0';
            return true;
        }
    }
    return false;
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
    if (!python_of(python, sizeof python, tried, sizeof tried)) {
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
