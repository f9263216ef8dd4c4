/* registry.h: where running recordings announce their run files, so that
 * `trainprof top` can show a live recording's steps.
 *
 * The directory is $XDG_RUNTIME_DIR/trainprof-records, or
 * /tmp/trainprof-UID/records, made 0700. A recording writes one file named by
 * its pid holding the run file's absolute path and, on a second line, the
 * directory of its sockets (control.sock: `trainprof capture`), and removes
 * it at the end; readers skip entries whose process is gone. */
#ifndef TP_RECORD_REGISTRY_H
#define TP_RECORD_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Announces run_path for this process; false with the reason in why when
 * it can't (the directory is not the user's own: a link, another user's,
 * open to others; nothing is written through it). */
bool tp_registry_add(const char *run_path, const char *control_dir, char *why, size_t cap);

/* The live recording of run file run_path (any name of it), or of recorder
 * pid (when run_path is NULL): its pid and socket directory. False with the
 * reason in why (none such, or the directory can't be trusted). */
bool tp_registry_find(const char *run_path, pid_t pid, pid_t *found, char *control_dir, size_t cap,
                      char *why, size_t wcap);
void tp_registry_remove(void);

/* fn(ctx, pid, run_path, started) for each live recording (started: when
 * its entry was written, seconds since the epoch); false with the reason in
 * why where the directory can't be trusted (true and no call: none). */
typedef void (*tp_registry_fn)(void *ctx, pid_t pid, const char *run_path, long long started);
bool tp_registry_each(tp_registry_fn fn, void *ctx, char *why, size_t wcap);

/* The run file of the most recently started live recording, if any; where
 * the directory can't be trusted, false with the reason in why (empty
 * when there is simply none). */
bool tp_registry_newest(char *run_path, size_t cap, pid_t *pid, char *why, size_t wcap);

#endif
