/* merge.h: joining the run files of several nodes into one.
 *
 * Each input becomes one agent of the output. Times are put on one time line
 * through the wall-clock anchors recorded at each start: an input's t_ns is
 * shifted by (its start_wall_ns - the earliest start_wall_ns). The alignment
 * is as good as the hosts' clocks agree (NTP/PTP) plus the anchors' own read
 * uncertainty; the merged run records the latter as
 * merge_anchor_uncertainty_ns. Inputs that don't belong together (different
 * commands, or different SLURM_JOB_ID / TORCHELASTIC_RUN_ID) are refused
 * unless force. Rows are copied by SQLite itself (ATTACH ... INSERT SELECT). */
#ifndef TP_STORE_MERGE_H
#define TP_STORE_MERGE_H

#include <stdbool.h>
#include <stddef.h>

bool tp_merge_runs(const char *out_path, const char *const *inputs, size_t n, bool force, char *err,
                   size_t cap);

#endif
