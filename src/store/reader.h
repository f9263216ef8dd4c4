/* reader.h: opening a run file for reading, and what it holds.
 *
 * tp_run_open validates the file before anything else reads it: a file that
 * is not SQLite, not a trainprof run file, or of a newer schema is refused
 * with a one-line reason. Small tables (meta, agents, series, unavailable,
 * gpus) are loaded at open; samples are streamed per series. */
#ifndef TP_STORE_READER_H
#define TP_STORE_READER_H

#include "store/run_settings.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/batch.h"
#include "core/stats.h"

typedef struct tp_run_series {
    int64_t id;
    int64_t agent_id;
    char *metric;
    char *unit;
    char *labels;
} tp_run_series;

typedef struct tp_run_agent {
    int64_t id;
    char *name;
    char *host;
} tp_run_agent;

typedef struct tp_run_unavailable {
    int64_t agent_id;
    char *source;
    char *reason;
} tp_run_unavailable;

typedef struct tp_run_gpu {
    int64_t agent_id;
    int index;
    char *name;
    char *uuid;
    int64_t mem_total_bytes;
    char *energy_source;
} tp_run_gpu;

/* One agent's metadata in a merged run (table agent_meta: each node file's
 * meta, kept per agent by `merge`). */
typedef struct tp_run_agent_meta {
    int64_t agent_id;
    char *key;
    char *value;
} tp_run_agent_meta;

typedef struct tp_run {
    void *db; /* sqlite3 */
    char *path;
    tp_run_meta *meta;
    size_t nmeta;
    tp_run_agent_meta *agent_meta; /* none in a node file, or a merge from before it */
    size_t nagent_meta;
    tp_run_agent *agents;
    size_t nagents;
    tp_run_series *series;
    size_t nseries;
    tp_run_unavailable *unavailable;
    size_t nunavailable;
    tp_run_gpu *gpus;
    size_t ngpus;
    int64_t last_t_ns; /* latest sample time, -1 when there is none */
    int schema_version;
    tp_run_settings settings; /* what its metadata says of the recording, parsed */
    bool raw_only;            /* analyse the rows even when a summary is stored */
    /* its stored summary was made by another analysis than this program's
     * (TP_ANALYSIS_ID): where the file has the rows, they are read instead
     * (raw_only); a summary-only merge's is read as it is */
    bool summary_foreign;
    /* the series by (agent, metric, labels), made at the first
     * tp_run_series_find (NULL until then) */
    const tp_run_series **series_by_key;
    void *value_at_stmt; /* sqlite3_stmt of tp_run_series_counter_at, kept */
} tp_run;

/* A step or epoch boundary, or a step's sample count (value), with the rank
 * of the thread that marked it. */
typedef struct tp_run_mark {
    int64_t thread;
    int rank;
    int kind; /* TP_MARK_STEP, _STEP_END, _EPOCH or _SAMPLES (core/batch.h) */
    int64_t t_ns;
    int64_t value;
} tp_run_mark;

/* Opens and validates a run file. NULL with a one-line reason in err when it
 * is missing, unreadable, not a trainprof run file or of a newer schema. */
tp_run *tp_run_open(const char *path, char *err, size_t cap);
/* Whether runs may be opened and read on several threads at once (each its
 * own tp_run): the SQLite library was built thread-safe. */
bool tp_runs_open_in_threads(void);
void tp_run_close(tp_run *run);

/* A metadata value, or NULL. */
const char *tp_run_meta_get(const tp_run *run, const char *key);

/* The name of agent id (its node), or "?" where the run has no such agent. */
const char *tp_run_agent_name(const tp_run *run, int64_t id);

/* A metadata value of one agent (host facts such as cpu_count differ between
 * the nodes of a merged run), or NULL. A node file's, or a merge's that has
 * no agent_meta (merged before it existed), is the run's own metadata for its
 * first agent, and unknown (NULL) for the others. */
const char *tp_run_agent_meta_get(const tp_run *run, int64_t agent_id, const char *key);

/* Whether run is a summary-only merge (`merge --summary`, or the temporary
 * merge of several files that `report` and `html` read): it holds the stored
 * summaries and plots and a few samples, not the rows, so what reads the rows
 * (export, summarize) can't be made from it. */
bool tp_run_summary_only(const tp_run *run);

/* Whether the file has a table (or view) of that name (tables added without a new
 * schema version, which older files lack). */
bool tp_run_has_table(const tp_run *run, const char *name);

/* The file the run was opened from, to open it again (a second connection
 * for a pass on another thread); NULL or "" for one in memory. */
const char *tp_run_file(const tp_run *run);

/* Whether run carries a stored summary to read from (summary_tables.h reads
 * it; raw_only sets it aside). */
bool tp_summary_stored(const tp_run *run);

/* Whether table has that column (columns added without a new schema
 * version). */
bool tp_run_has_column(const tp_run *run, const char *table, const char *column);

/* The series of that id, or NULL (binary search: series load in id order). */
const tp_run_series *tp_run_series_by_id(const tp_run *run, int64_t id);

/* The series of agent_id with metric and labels, or NULL: a binary search
 * (an index made at the first call), as a fleet's file holds a thousand
 * agents' series. */
const tp_run_series *tp_run_series_find(tp_run *run, int64_t agent_id, const char *metric,
                                        const char *labels);

/* Calls fn once per series that has samples, in series order, with all of its
 * samples in time order (t_ns[i], values[i]). The buffers are reused between
 * calls. Returns false (reason in err) if reading fails. */
typedef void (*tp_series_values_fn)(void *ctx, const tp_run_series *series, const int64_t *t_ns,
                                    double *values, size_t n);
bool tp_run_each_series(tp_run *run, tp_series_values_fn fn, void *ctx, char *err, size_t cap);

/* Calls fn once per (rank, region name) with every duration in seconds, in
 * rank then name order. Runs of schema 1 have no timings: fn is never
 * called. False (reason in err) if reading fails. */
typedef void (*tp_region_group_fn)(void *ctx, int rank, const char *name, double *durations_s,
                                   size_t n);
bool tp_run_each_region_group(tp_run *run, tp_region_group_fn fn, void *ctx, char *err, size_t cap);
/* The same over the device times (schema 5; none before). */
bool tp_run_each_device_group(tp_run *run, tp_region_group_fn fn, void *ctx, char *err, size_t cap);

/* All step and epoch marks in (rank, thread, time) order; the caller frees
 * *marks. */
bool tp_run_marks(tp_run *run, tp_run_mark **marks, size_t *n, char *err, size_t cap);
/* The same without the samples marks (the most numerous): steps, step ends
 * and epochs, for what follows the steps' course (analyze/rank_course.h). */
bool tp_run_step_marks(tp_run *run, tp_run_mark **marks, size_t *n, char *err, size_t cap);

/* The span of an agent's training: from its first step mark to its last, on
 * any of its threads (run time, ns). */
typedef struct tp_steps_window {
    int64_t agent_id, t0_ns, t1_ns;
} tp_steps_window;

/* Each agent's steps window, for the agents that marked at least 2 steps (none
 * in a schema 1 run); the caller frees *out. False (reason in err) if reading
 * fails. */
bool tp_run_steps_windows(tp_run *run, tp_steps_window **out, size_t *n, char *err, size_t cap);

/* The windows that sql selects as rows of (agent_id, t0_ns, t1_ns): the
 * marks' (tp_run_steps_windows) or the stored summary's. The caller frees
 * *out; nothing to free after a failure (reason in err). */
bool tp_run_read_windows(tp_run *run, const char *sql, tp_steps_window **out, size_t *n, char *err,
                         size_t cap);

/* The value of series (metric, labels) of agent 1 at t_ns: its last sample at
 * or before t_ns, else its first sample. False when the series has none. */
bool tp_run_value_at(tp_run *run, const char *metric, const char *labels, int64_t t_ns,
                     double *value);

/* The same for any agent. */
bool tp_run_agent_value_at(tp_run *run, int64_t agent_id, const char *metric, const char *labels,
                           int64_t t_ns, double *value);

/* A cumulative series' value at t_ns (an energy counter), by series id:
 * linear between its samples on either side of t_ns; within slack_ns
 * before its first sample or after its last, on the line through its two
 * first or last (a run's last epoch ends as it exits, a little after its
 * last sample); false further out, or with one sample there (an epoch the
 * sampling had not reached read the nearest sample's value for its edge:
 * 128 W of a 300 W GPU in CI).
 * Through one prepared statement kept with the run (for many lookups, e.g.
 * every energy series at every epoch boundary). Interpolated, since a span
 * shorter than the sampling period (an epoch of 0.3 s sampled every 0.5 s)
 * would otherwise read a whole period's growth or none. */
bool tp_run_series_counter_at(tp_run *run, int64_t series_id, int64_t t_ns, int64_t slack_ns,
                              double *value);

/* Reads everything after this call from one snapshot of the file, in one
 * read transaction (no lock and stat system calls per query), until
 * tp_run_end_read. Returns whether it began one (false: one was open). */
bool tp_run_begin_read(tp_run *run);
void tp_run_end_read(tp_run *run);

/* The mean of series (metric, labels) of agent 1 over the samples that cover
 * (t0_ns, t1_ns]: those after t0_ns up to the first at or after t1_ns (a
 * sample describes the interval that ends at it). False when none does. A
 * summary-only file (tp_run_summary_only) keeps each series' first and last
 * sample only: over a span inside the run, its last sample stands in. */
bool tp_run_mean_between(tp_run *run, const char *metric, const char *labels, int64_t t0_ns,
                         int64_t t1_ns, double *mean);

/* The same for any agent. */
bool tp_run_agent_mean_between(tp_run *run, int64_t agent_id, const char *metric,
                               const char *labels, int64_t t0_ns, int64_t t1_ns, double *mean);

/* The same window's statistics (count, mean, percentiles) into out; false
 * where tp_run_agent_mean_between's would be. */
bool tp_run_agent_stats_between(tp_run *run, int64_t agent_id, const char *metric,
                                const char *labels, int64_t t0_ns, int64_t t1_ns, tp_stats *out);

/* For a series of bitmasks (gpu_clock_event_reasons), over the same window
 * as tp_run_agent_mean_between: the OR of the bits of mask its samples had,
 * and the share of its samples with any of them. False when no sample
 * (*share then untouched). */
bool tp_run_agent_bits_between(tp_run *run, int64_t agent_id, const char *metric,
                               const char *labels, int64_t t0_ns, int64_t t1_ns, uint32_t mask,
                               uint32_t *bits, double *share);

/* The device times of region `name` of a rank's threads on agent_id, begun
 * in [t0_ns, t1_ns], as (host start ns, device ns) pairs in host start order
 * into *rows (the caller frees it; none before device times). */
typedef struct tp_device_row {
    int64_t start_ns, device_ns;
} tp_device_row;
void tp_run_rank_device_rows(tp_run *run, int64_t agent_id, int rank, const char *name,
                             int64_t t0_ns, int64_t t1_ns, tp_device_row **rows, size_t *n);

/* The latest end of a region of rank's threads at or after since_ns; -1
 * when none closed since then (or the file can't say). */
int64_t tp_run_rank_last_region_end(tp_run *run, int rank, int64_t since_ns);

/* A traced process: its agent and pid, the rank of its threads (-1 none),
 * whether it is a DataLoader worker (a thread named "DL worker N") and a
 * Python process whose stacks were sampled (it had a sampler's ring). */
typedef struct tp_run_process {
    int64_t agent_id, pid;
    int rank;
    bool worker, sampled;
} tp_run_process;

/* Every traced process that sent events (the caller frees *out). False when
 * the file can't be read. */
bool tp_run_processes(tp_run *run, tp_run_process **out, size_t *n);

/* Every ring's thread recorded, the stack samplers' too (0 for schema 1). */
int64_t tp_run_thread_rows(const tp_run *run);
/* Timing threads recorded and events they dropped (0 and 0 for schema 1). */
void tp_run_thread_totals(tp_run *run, int64_t *threads, int64_t *dropped);
/* The stack samples the samplers' rings dropped, full (the threads named
 * TP_SAMPLER_THREAD_NAME: their drops are no timing events'); 0 for schema 1. */
int64_t tp_run_stack_samples_dropped(tp_run *run);

#endif
