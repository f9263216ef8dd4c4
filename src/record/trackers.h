/* trackers.h: record --log-to: once the run file is summarized, its figures
 * go into the trackers named (python -m trainprof.trackers, in the
 * training's own interpreter where it told it: that one has the trackers'
 * libraries), and the training's processes are told to follow the runs the
 * script opens (TRAINPROF_LOG_TO; python/trainprof/trackers/). */
#ifndef TP_RECORD_TRACKERS_H
#define TP_RECORD_TRACKERS_H

#include <stdbool.h>
#include <stddef.h>

/* Whether list is a comma-separated list of distinct trackers trainprof
 * knows (mlflow, wandb, tensorboard); else why not, in err. */
bool tp_trackers_check(const char *list, char *err, size_t cap);

/* Logs run_file into the trackers of list, saying where (quiet: only what
 * failed); what fails is a warning, never the command's exit status. Waits
 * for it. */
void tp_trackers_log(const char *run_file, const char *list, bool quiet);

#endif
