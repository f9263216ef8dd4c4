/* atomic_file.c: temp file, then rename. */
#include "util/atomic_file.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

int tp_write_file_atomically(const char *what, const char *path, bool force, tp_file_writer fn,
                             void *ctx)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        tp_error("%s: %s is a directory", what, path);
        return 1;
    }
    if (stat(path, &sb) == 0 && !force) {
        tp_error("%s: %s already exists (use --force to overwrite it)", what, path);
        return 1;
    }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp-%d", path, (int)getpid());
    FILE *out = fopen(tmp, "w");
    if (!out) {
        tp_error("%s: cannot create %s: %s", what, path, strerror(errno));
        return 1;
    }
    char err[1024];
    bool ok = fn(out, ctx, err, sizeof err);
    if (fclose(out) != 0 && ok) {
        snprintf(err, sizeof err, "%s: writing %s failed: %s", what, path, strerror(errno));
        ok = false;
    }
    if (ok && rename(tmp, path) != 0) {
        snprintf(err, sizeof err, "%s: cannot write %s: %s", what, path, strerror(errno));
        ok = false;
    }
    if (!ok) {
        unlink(tmp);
        tp_error("%s", err);
        return 1;
    }
    return 0;
}
