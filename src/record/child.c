/* child.c: spawning the command and decoding how it ended. */
#include "record/child.h"

#include <errno.h>
#include <spawn.h>
#include <sys/wait.h>

pid_t tp_child_spawn(char *const argv[], char *const envp[])
{
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    int reset[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGPIPE};
    for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++)
        sigaddset(&defaults, reset[i]);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], NULL, &attr, argv, envp);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    return pid;
}

int tp_child_spawn_status(int err) { return err == ENOENT || err == ENOTDIR ? 127 : 126; }

int tp_child_exit_status(int wstatus)
{
    if (WIFEXITED(wstatus))
        return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus))
        return 128 + WTERMSIG(wstatus);
    return 1;
}

bool tp_signal_from_terminal(int si_code) { return si_code == SI_KERNEL; }
