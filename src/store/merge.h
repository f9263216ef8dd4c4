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
    /* called after each input is copied (done of n), if set */
    void (*progress)(void *ctx, size_t done, size_t n, const char *input, bool all_rows);
    void *progress_ctx;
} tp_merge_options;

/* Writes the merge of inputs[0..n) to out_path, which appears (by rename)
 * only once complete. False with a one-line reason, and nothing written,
 * otherwise. */
bool tp_merge_runs(const char *out_path, const char *const *inputs, size_t n,
                   const tp_merge_options *opt, char *err, size_t cap);

/* The run file a command reads from its RUN_FILE arguments: the one file
 * itself, or several merged (refused as tp_merge_runs refuses them, without
 * force; summary_only and plots as in tp_merge_options, for readers of the
 * stored summary only) into a temporary file in $TMPDIR (else /tmp). *path is what
 * to open;
 * tp_inputs_done removes the temporary file. False with a one-line reason
 * (prefixed by who) otherwise. */
typedef struct tp_inputs {
    const char *path;
    char temp[4200];     /* empty when no temporary file was made */
    char temp_dir[4096]; /* the private directory that holds it */
    char display[4200];  /* the inputs as given, "a.db + b.db" */
} tp_inputs;

bool tp_inputs_open(tp_inputs *in, const char *who, char *const *paths, size_t n, bool summary_only,
                    bool plots, char *err, size_t cap);
void tp_inputs_done(tp_inputs *in);

/* Gives an opened merged temporary the name of its inputs (run->path shows
 * in reports and messages). */
struct tp_run;
void tp_inputs_name_run(const tp_inputs *in, struct tp_run *run);

#endif
