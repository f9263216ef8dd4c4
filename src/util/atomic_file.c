/* atomic_file.c: an exclusive temporary file, then rename. */
#include "util/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

/* The temporary file being written, removed by an exit in the middle (out
 * of memory: util/oom.h). One at a time: outputs are written in turn. */
static char pending_tmp[4200];

static void remove_pending_tmp(void)
{
    if (pending_tmp[0])
        unlink(pending_tmp);
}

/* SIGINT, SIGTERM, SIGHUP while it is written: the temporary file goes, then
 * the signal does what it would have (the handler is the default again). */
static void remove_and_reraise(int sig)
{
    if (pending_tmp[0])
        unlink(pending_tmp); /* async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define NSTOP (sizeof stop_signals / sizeof *stop_signals)
_Static_assert(NSTOP == sizeof((tp_pending_output *)0)->old / sizeof(struct sigaction),
               "tp_pending_output keeps each stop signal's handler");

/* Installs remove_and_reraise for the stop signals whose handler is the
 * default (an ignored one stays ignored), keeping the old ones in old. */
static void guard_signals(struct sigaction old[NSTOP])
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = remove_and_reraise;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NSTOP; i++) {
        sigaction(stop_signals[i], NULL, &old[i]);
        if (old[i].sa_handler == SIG_DFL)
            sigaction(stop_signals[i], &sa, NULL);
    }
}

static void unguard_signals(const struct sigaction old[NSTOP])
{
    for (size_t i = 0; i < NSTOP; i++)
        sigaction(stop_signals[i], &old[i], NULL);
}

int tp_output_refused(const char *what, const char *path, bool force, const char *const *inputs,
                      size_t ninputs)
{
    struct stat out;
    if (stat(path, &out) != 0)
        return 0;
    if (S_ISDIR(out.st_mode)) {
        tp_error("%s: %s is a directory", what, path);
        return 2;
    }
    for (size_t i = 0; i < ninputs; i++) {
        struct stat in;
        if (stat(inputs[i], &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
            tp_error("%s: %s is one of the inputs (%s): write the output elsewhere", what, path,
                     inputs[i]);
            return 2;
        }
    }
    if (!force) {
        tp_error("%s: %s already exists (use --force to overwrite it)", what, path);
        return 2;
    }
    return 0;
}

int tp_pending_output_open(tp_pending_output *p, const char *path)
{
    p->tmp[0] = '\0';
    char tmp[sizeof p->tmp];
    if (snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    /* the stop signals held from before the file exists until their handler
     * knows its name: one that came in between would leave it behind */
    sigset_t stops, before;
    sigemptyset(&stops);
    for (size_t i = 0; i < NSTOP; i++)
        sigaddset(&stops, stop_signals[i]);
    pthread_sigmask(SIG_BLOCK, &stops, &before);
    int fd = mkostemp(tmp, O_CLOEXEC); /* O_CREAT | O_EXCL, mode 0600 */
    mode_t mask = umask(0);
    umask(mask);
    if (fd >= 0 && fchmod(fd, 0666 & ~mask) != 0) {
        int why = errno;
        close(fd);
        unlink(tmp);
        errno = why;
        fd = -1;
    }
    if (fd < 0) {
        int why = errno;
        pthread_sigmask(SIG_SETMASK, &before, NULL);
        errno = why;
        return -1;
    }
    static bool cleanup_registered;
    if (!cleanup_registered)
        cleanup_registered = atexit(remove_pending_tmp) == 0;
    memcpy(pending_tmp, tmp, sizeof tmp);
    memcpy(p->tmp, tmp, sizeof tmp);
    guard_signals(p->old);
    pthread_sigmask(SIG_SETMASK, &before, NULL); /* one held now runs the handler */
    return fd;
}

bool tp_pending_output_end(tp_pending_output *p, const char *path, bool keep)
{
    if (!p->tmp[0])
        return !keep;
    bool kept = keep && rename(p->tmp, path) == 0;
    int why = errno;
    if (!kept)
        unlink(p->tmp);
    pending_tmp[0] = '\0';
    p->tmp[0] = '\0';
    unguard_signals(p->old);
    errno = why;
    return kept || !keep;
}

int tp_write_file_atomically(const char *what, const char *path, bool force,
                             const char *const *inputs, size_t ninputs, tp_file_writer fn,
                             void *ctx)
{
    int refused = tp_output_refused(what, path, force, inputs, ninputs);
    if (refused)
        return refused;
    tp_pending_output pending;
    int fd = tp_pending_output_open(&pending, path);
    FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!out) {
        int why = errno;
        if (fd >= 0) {
            close(fd);
            tp_pending_output_end(&pending, path, false);
        }
        if (why == ENAMETOOLONG)
            tp_error("%s: %s: the name is too long", what, path);
        else
            tp_error("%s: cannot create %s: %s", what, path, strerror(why));
        return 2;
    }
    char err[1024];
    bool ok = fn(out, ctx, err, sizeof err);
    if (fclose(out) != 0 && ok) {
        snprintf(err, sizeof err, "%s: writing %s failed: %s", what, path, strerror(errno));
        ok = false;
    }
    if (!tp_pending_output_end(&pending, path, ok) && ok) {
        snprintf(err, sizeof err, "%s: cannot write %s: %s", what, path, strerror(errno));
        ok = false;
    }
    if (!ok) {
        tp_error("%s", err);
        return 1;
    }
    return 0;
}
