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

typedef struct tp_merge_options {
    bool force;        /* merge inputs of different commands or jobs */
    bool durable;      /* the output's data is on the disk (fsync) before it appears */
    bool summary_only; /* where every input's stored summary carries over: copy only what
                          `report` reads (no regions or marks; of the samples, each series'
                          first and last and the energy at epoch bounds); meta summary_only */
    bool plots;        /* summary_only also needs the stored plots (html): where an input
                          has none, every row is copied */
    bool rows_refused; /* `merge --summary`: where summary_only can't be had, fail (the
                          reason, naming the input, in err) instead of copying every row */
    /* a summary-only merge of a fleet: every rank's stored step groups but the
     * lowest rank's joined into at most this many (0: kept as they are) */
    size_t step_groups_max;
    /* called after each input is copied (done of n), if set */
    void (*progress)(void *ctx, size_t done, size_t n, const char *input, bool all_rows);
    void *progress_ctx;
} tp_merge_options;

/* Writes the merge of inputs[0..n) to out_path, which appears (by rename)
 * only once complete. False with a one-line reason, and nothing written,
 * otherwise. */
bool tp_merge_runs(const char *out_path, const char *const *inputs, size_t n,
                   const tp_merge_options *opt, char *err, size_t cap);

#endif
