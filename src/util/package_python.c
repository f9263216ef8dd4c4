/* package_python.c: see package_python.h. */
#include "util/package_python.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

bool tp_self_path(char *out, size_t cap)
{
    if (cap < 2)
        return false;
    ssize_t len = readlink("/proc/self/exe", out, cap - 1);
    if (len <= 0 || (size_t)len >= cap - 1) {
        errno = len < 0 ? errno : ENAMETOOLONG;
        return false;
    }
    out[len] = '\0';
    return true;
}

bool tp_python_imports(const char *python, const char *module)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, STDOUT_FILENO);
            dup2(null, STDERR_FILENO);
        }
        char code[256];
        snprintf(code, sizeof code, "import %s", module);
        execlp(python, python, "-c", code, (char *)NULL);
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

bool tp_package_python(const char *module, char *out, size_t cap, char *tried, size_t tcap)
{
    const char *env = getenv("TRAINPROF_PYTHON");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        snprintf(tried, tcap, "%s (TRAINPROF_PYTHON)", env);
        return tp_python_imports(env, module);
    }
    char self[PATH_MAX], candidates[3][PATH_MAX];
    size_t n = 0;
    char *slash = tp_self_path(self, sizeof self) ? strrchr(self, '/') : NULL;
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
        if (tp_python_imports(candidates[i], module)) {
            size_t n_out = strnlen(candidates[i], cap - 1);
            memcpy(out, candidates[i], n_out);
            out[n_out] = '\0';
            return true;
        }
    }
    return false;
}
