/* trackers.c: record --log-to (trackers.h). */
#include "record/trackers.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/run_keys.h"
#include "facts.h"
#include "store/reader.h"
#include "util/log.h"
#include "util/package_python.h"

#define MODULE "trainprof.trackers"

static const char *const known[] = {"mlflow", "wandb", "tensorboard"};

bool tp_trackers_check(const char *list, char *err, size_t cap)
{
    size_t seen = 0, n = strlen(list), start = 0;
    unsigned named = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && list[i] != ',')
            continue;
        size_t len = i - start;
        size_t k = 0;
        while (k < 3 && !(strlen(known[k]) == len && strncmp(list + start, known[k], len) == 0))
            k++;
        if (k == 3 || (named & (1u << k))) {
            snprintf(err, cap, "--log-to: '%.*s' is %s (mlflow, wandb and tensorboard are)",
                     (int)(len > 40 ? 40 : len), list + start,
                     k == 3 ? "not a tracker trainprof knows" : "named twice");
            return false;
        }
        named |= 1u << k;
        seen++;
        start = i + 1;
    }
    return seen > 0;
}

/* The interpreter the training told (fact tracker.python) when it is an
 * absolute path to an executable that imports trainprof's trackers: it has
 * the trackers' libraries the script imported. */
static bool training_python(const char *run_file, char *out, size_t cap)
{
    char err[256];
    tp_run *run = tp_run_open(run_file, err, sizeof err);
    if (!run)
        return false;
    const char *told = tp_run_meta_get(run, TP_META_FACT TP_FACT_TRACKER_PYTHON);
    struct stat st;
    bool ok = told && told[0] == '/' && strlen(told) < cap && stat(told, &st) == 0 &&
              S_ISREG(st.st_mode) && access(told, X_OK) == 0;
    if (ok)
        snprintf(out, cap, "%s", told);
    tp_run_close(run);
    return ok && tp_python_imports(out, MODULE);
}

void tp_trackers_log(const char *run_file, const char *list, bool quiet)
{
    char python[PATH_MAX], tried[3 * PATH_MAX + 64], self[PATH_MAX];
    if (!training_python(run_file, python, sizeof python) &&
        !tp_package_python(MODULE, python, sizeof python, tried, sizeof tried)) {
        tp_warn("--log-to: no Python here imports trainprof's package (tried %s): nothing "
                "logged; pip install trainprof into the training's Python, or name it with "
                "TRAINPROF_PYTHON",
                tried[0] ? tried : "python3");
        return;
    }
    if (!tp_self_path(self, sizeof self)) {
        tp_warn("--log-to: cannot find this program (/proc/self/exe): nothing logged");
        return;
    }
    char *argv[11] = {python, "-m", MODULE, "--log-to", (char *)list, "--trainprof", self};
    size_t n = 7;
    if (quiet)
        argv[n++] = "--quiet";
    argv[n++] = "--";
    argv[n++] = (char *)run_file;
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execv(python, argv);
        execvp(python, argv);
        fprintf(stderr, "trainprof: warning: --log-to: cannot run %s: %s\n", python,
                strerror(errno));
        _exit(127);
    }
    if (pid < 0) {
        tp_warn("--log-to: cannot start %s: %s", python, strerror(errno));
        return;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return;
}
