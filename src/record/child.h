/* child.h: starting the training command and turning its end into an exit
 * status the way a shell does. */
#ifndef TP_RECORD_CHILD_H
#define TP_RECORD_CHILD_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

/* Starts argv[0] (searched in PATH) with the given environment, with every
 * signal unblocked and at its default disposition. Returns the pid, or -1
 * with errno set when the command can't be started. */
pid_t tp_child_spawn(char *const argv[], char *const envp[]);

/* The exit status a shell reports: 127 command not found, 126 found but not
 * executable. */
int tp_child_spawn_status(int err);

/* The exit status for a waitpid status: the exit code, or 128+N for death by
 * signal N. */
int tp_child_exit_status(int wstatus);

/* True when a signal came from the terminal (Ctrl-C, Ctrl-\): the kernel sent
 * it to the whole foreground process group, so the child has it already. */
bool tp_signal_from_terminal(int si_code);

#endif
