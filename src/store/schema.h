/* schema.h: the run file's SQLite schema and its version.
 *
 * docs/run-file.md documents every table. A run file is recognised by
 * PRAGMA application_id == TP_APPLICATION_ID; its schema version is
 * PRAGMA user_version. A reader refuses files of a newer version. */
#ifndef TP_STORE_SCHEMA_H
#define TP_STORE_SCHEMA_H

#include <sqlite3.h>
#include <stddef.h>

#define TP_APPLICATION_ID 0x54505246 /* "TPRF" */
/* 2: timings (thread, name, region, mark); 3: summary_* tables;
 * 4: summary_timing.in_steps_s (shares of step time count only what ran in
 * steps; a v3 file's stored summary is set aside and its rows read);
 * 5: device times (device_time, the device_times view, summary_timing's
 * device_* columns); 6: mark kind 'step_end' (a step ended with none begun:
 * an evaluation pass mid-epoch), which older readers would take for a step;
 * 7: mark.kind a number (the ring's event kind: 3 step, 4 epoch, 6 samples,
 * 9 step_end) where it was a word, and the marks view with the words;
 * 8: sampled Python stacks (frame, stack_node, stack_sample); a file
 * without them had stack sampling off; 9: stack_sample.count and span_ns (a
 * row is a run of identical samples of a thread; 8's rows are one each);
 * 10: capture windows (op_window, op_string, op_event) */
#define TP_SCHEMA_VERSION 10
/* the first schema with sampled stacks */
#define TP_SCHEMA_STACKS_VERSION 8
/* the first schema whose stack_sample rows are runs (count, span_ns) */
#define TP_SCHEMA_STACK_RUNS_VERSION 9
/* the first schema whose stored summary readers use */
#define TP_SCHEMA_SUMMARY 4
/* the first schema with device times */
#define TP_SCHEMA_DEVICE 5

/* The tables and view that schema 5 added, and summary_timing as it is
 * since then: `trainprof summarize` brings an older file up to date with them
 * (dropping summary_timing, whose rows it writes again). */
#define TP_SCHEMA_DEVICE_TIME                                                                   \
    "CREATE TABLE IF NOT EXISTS device_time (thread_id INTEGER NOT NULL REFERENCES thread(id)," \
    "  name_id INTEGER NOT NULL REFERENCES name(id), start_ns INTEGER NOT NULL,"                \
    "  device_ns INTEGER NOT NULL);"
/* Sampled Python stacks (schema 8): each frame's function and file once;
 * the stacks as a tree of (parent node, frame, line), 0 the root; and each
 * sample: the sampler's thread (its process, rank and agent), the sampled
 * thread's kernel id, when, the region it had open (name id, 0 none), its
 * state (1 on a CPU, 2 the state is known, 4 truncated) and its innermost
 * frame's node; count such samples in a row of that thread (schema 9), the
 * first at t_ns and the last span_ns later. */
#define TP_SCHEMA_STACKS                                                                         \
    "CREATE TABLE IF NOT EXISTS frame (id INTEGER PRIMARY KEY, function TEXT NOT NULL,"          \
    "  file TEXT NOT NULL);"                                                                     \
    "CREATE TABLE IF NOT EXISTS stack_node (id INTEGER PRIMARY KEY, parent INTEGER NOT NULL,"    \
    "  frame_id INTEGER NOT NULL, line INTEGER NOT NULL);"                                       \
    "CREATE TABLE IF NOT EXISTS stack_sample (thread_id INTEGER NOT NULL REFERENCES thread(id)," \
    "  tid INTEGER NOT NULL, t_ns INTEGER NOT NULL, phase_id INTEGER NOT NULL,"                  \
    "  state INTEGER NOT NULL, node_id INTEGER NOT NULL" TP_SCHEMA_STACK_RUNS ");"
#define TP_SCHEMA_STACK_RUNS \
    ", count INTEGER NOT NULL DEFAULT 1, span_ns INTEGER NOT NULL DEFAULT 0"
/* What `summarize` adds to a schema 8 file's stack_sample. */
#define TP_SCHEMA_ADD_STACK_RUNS                                            \
    "ALTER TABLE stack_sample ADD COLUMN count INTEGER NOT NULL DEFAULT 1;" \
    "ALTER TABLE stack_sample ADD COLUMN span_ns INTEGER NOT NULL DEFAULT 0;"
/* The sampled stacks counted as `report` reads them (schema 9; written
 * with the summary): samples of each (rank, region open or NULL, DataLoader
 * worker or not, innermost node, state & 3). A merged run's nodes are its
 * own (offset); files summarized before have no such table (readers then
 * count the rows; `summarize --force` adds it). */
#define TP_SCHEMA_SUMMARY_STACKS                                                   \
    "CREATE TABLE IF NOT EXISTS summary_stack (rank INTEGER NOT NULL, phase TEXT," \
    "  worker INTEGER NOT NULL, node_id INTEGER NOT NULL, state INTEGER NOT NULL," \
    "  samples INTEGER NOT NULL);"
/* The latest pace's: where the first rank's pace changed, the stack counts
 * over its latest regime's span (summary_stack's columns and the regime's
 * first and last step, analyze/summary.h: stacks_latest), and for each
 * regime after the first, the function that moved most in the phase that
 * moved (a row with no function where none did; analyze/regimes.h), keyed
 * by that regime's steps. Written with the summary so that a report reads
 * them rather than every sample since the change again; a merge carries
 * none (read from the rows where it has them). */
#define TP_SCHEMA_SUMMARY_STACK_LATEST                                                    \
    "CREATE TABLE IF NOT EXISTS summary_stack_latest (rank INTEGER NOT NULL, phase TEXT," \
    "  worker INTEGER NOT NULL, node_id INTEGER NOT NULL, state INTEGER NOT NULL,"        \
    "  samples INTEGER NOT NULL, first_step INTEGER NOT NULL, last_step INTEGER NOT NULL);"
#define TP_SCHEMA_SUMMARY_PACE_FUNCTION                                               \
    "CREATE TABLE IF NOT EXISTS summary_pace_function (first_step INTEGER NOT NULL,"  \
    "  last_step INTEGER NOT NULL, phase INTEGER NOT NULL, workers INTEGER NOT NULL," \
    "  function TEXT, file TEXT, line INTEGER NOT NULL, before REAL NOT NULL,"        \
    "  after REAL NOT NULL);"
/* Each user region's name and the standard region it ran inside the most
 * (NULL: none), with its seconds there (analyze/region_within.h): stack
 * samples in a user region count for that phase. Written with the summary;
 * a merge carries each input's (summed by name when read). */
#define TP_SCHEMA_SUMMARY_REGION_WITHIN                                                  \
    "CREATE TABLE IF NOT EXISTS summary_region_within (name TEXT NOT NULL, within TEXT," \
    "  seconds REAL NOT NULL);"
/* summary_stall.between_steps: the rank's last step had closed and it
 * stopped in a region between steps (a `.item()` on a GPU that never
 * answers); files summarized before have none (readers take 0). */
#define TP_SCHEMA_STALL_BETWEEN ", between_steps INTEGER NOT NULL DEFAULT 0"
#define TP_SCHEMA_ADD_STALL_BETWEEN \
    "ALTER TABLE summary_stall ADD COLUMN between_steps INTEGER NOT NULL DEFAULT 0;"
/* summary_stall.gpu, gpu_util_percent: the rank's GPU over the stall and
 * NVML's utilization there (core/stall_facts.h; NULL unknown), so that a
 * summary-only merge, which keeps no samples over a span, says whether a
 * fleet's stalled rank sat on a kernel or waited; files summarized before
 * have none (readers then know them from the samples only). */
#define TP_SCHEMA_STALL_GPU ", gpu INTEGER, gpu_util_percent REAL"
/* summary_stall.blocked: the training's threads waiting on storage over
 * the stall (proc_blocked's mean, core/stall_facts.h; NULL unknown), for a
 * summary-only merge as the GPU's; files summarized before have none. */
#define TP_SCHEMA_STALL_BLOCKED     ", blocked REAL"
#define TP_SCHEMA_ADD_STALL_BLOCKED "ALTER TABLE summary_stall ADD COLUMN blocked REAL;"
/* Each stalled thread's samples in state D (files summarized before have
 * none: readers take 0). */
#define TP_SCHEMA_STALL_THREAD_BLOCKED ", blocked REAL"
#define TP_SCHEMA_ADD_STALL_THREAD_BLOCKED \
    "ALTER TABLE summary_stall_thread ADD COLUMN blocked REAL;"
#define TP_SCHEMA_ADD_STALL_GPU                         \
    "ALTER TABLE summary_stall ADD COLUMN gpu INTEGER;" \
    "ALTER TABLE summary_stall ADD COLUMN gpu_util_percent REAL;"
/* The stalls (analyze/stalls.h, written with the summary; meta
 * stalls_stored = 1): each stall of a rank, ended or lasting to the end, and
 * the threads of its rank's processes then (most samples first); a merged
 * run's nodes offset, times shifted. Files summarized before have none
 * (readers find them from the rows; `summarize --force` adds them). */
#define TP_SCHEMA_SUMMARY_STALLS                                                         \
    "CREATE TABLE IF NOT EXISTS summary_stall (id INTEGER PRIMARY KEY,"                  \
    "  rank INTEGER NOT NULL, ended INTEGER NOT NULL, start_ns INTEGER NOT NULL,"        \
    "  end_ns INTEGER NOT NULL, threshold_s REAL NOT NULL, step INTEGER NOT "            \
    "NULL" TP_SCHEMA_STALL_BETWEEN TP_SCHEMA_STALL_GPU TP_SCHEMA_STALL_BLOCKED ");"      \
    "CREATE TABLE IF NOT EXISTS summary_stall_thread (stall_id INTEGER NOT NULL,"        \
    "  pid INTEGER NOT NULL, tid INTEGER NOT NULL, worker INTEGER NOT NULL, phase TEXT," \
    "  node_id INTEGER NOT NULL, samples REAL NOT NULL, known REAL NOT NULL,"            \
    "  on_cpu REAL NOT NULL" TP_SCHEMA_STALL_THREAD_BLOCKED ");"
/* Capture windows (schema 10; docs/ops.md): each window a process took
 * (its step thread, why: 1 schedule, 2 demand, 3 slow; the step count of
 * its first step; run times; skipped with the note saying why), its texts
 * (operator names, input shapes) by index, and its events (core/
 * ops_window.h's kinds, times since the run's start). Files from before
 * have none. */
#define TP_SCHEMA_OPS                                                                            \
    "CREATE TABLE IF NOT EXISTS op_window (id INTEGER PRIMARY KEY, thread_id INTEGER NOT NULL,"  \
    "  pid INTEGER NOT NULL, tid INTEGER NOT NULL, reason INTEGER NOT NULL,"                     \
    "  first_step INTEGER NOT NULL, steps INTEGER NOT NULL, cuda INTEGER NOT NULL,"              \
    "  start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, events INTEGER NOT NULL,"             \
    "  dropped INTEGER NOT NULL, device_memory INTEGER NOT NULL, alloc_start INTEGER NOT NULL,"  \
    "  skipped INTEGER NOT NULL, note TEXT);"                                                    \
    "CREATE TABLE IF NOT EXISTS op_string (window_id INTEGER NOT NULL, idx INTEGER NOT NULL,"    \
    "  text TEXT NOT NULL, PRIMARY KEY (window_id, idx)) WITHOUT ROWID;"                         \
    "CREATE TABLE IF NOT EXISTS op_event (window_id INTEGER NOT NULL, kind INTEGER NOT NULL,"    \
    "  name INTEGER NOT NULL, shapes INTEGER, thread INTEGER NOT NULL, device INTEGER NOT NULL," \
    "  stream INTEGER NOT NULL, start_ns INTEGER NOT NULL, dur_ns INTEGER NOT NULL,"             \
    "  correlation INTEGER NOT NULL, linked INTEGER NOT NULL, value INTEGER NOT NULL);"
#define TP_SCHEMA_OPS_VIEW                                                                   \
    "CREATE VIEW IF NOT EXISTS ops AS SELECT e.window_id AS window_id, w.pid AS pid,"        \
    "  CASE e.kind WHEN 1 THEN 'op' WHEN 2 THEN 'range' WHEN 3 THEN 'kernel' WHEN 4 THEN"    \
    "  'memcpy' WHEN 5 THEN 'memset' WHEN 6 THEN 'runtime' WHEN 7 THEN 'memory' WHEN 8 THEN" \
    "  'step' END AS kind, n.text AS name, s.text AS shapes, e.thread AS thread,"            \
    "  e.device AS device, e.stream AS stream, e.start_ns AS start_ns, e.dur_ns AS dur_ns,"  \
    "  e.correlation AS correlation, e.linked AS linked, e.value AS value"                   \
    "  FROM op_event e JOIN op_window w ON w.id = e.window_id"                               \
    "  JOIN op_string n ON n.window_id = e.window_id AND n.idx = e.name"                     \
    "  LEFT JOIN op_string s ON s.window_id = e.window_id AND s.idx = e.shapes;"

/* The marks with their kinds in words, for SQL by hand (schema 7; a file
 * whose marks are words already shows them as they are). */
#define TP_SCHEMA_MARKS_VIEW                                                                \
    "CREATE VIEW IF NOT EXISTS marks AS SELECT t.pid AS pid, t.tid AS tid, t.rank AS rank," \
    "  CASE m.kind WHEN 3 THEN 'step' WHEN 4 THEN 'epoch' WHEN 6 THEN 'samples'"            \
    "  WHEN 9 THEN 'step_end' ELSE m.kind END AS kind, m.t_ns AS t_ns, m.value AS value"    \
    "  FROM mark m JOIN thread t ON t.id = m.thread_id;"
#define TP_SCHEMA_DEVICE_VIEW                                                                      \
    "CREATE VIEW IF NOT EXISTS device_times AS SELECT t.pid AS pid, t.tid AS tid, t.rank AS rank," \
    "  n.text AS name, d.start_ns AS start_ns, d.device_ns AS device_ns"                           \
    "  FROM device_time d JOIN thread t ON t.id = d.thread_id"                                     \
    "  JOIN name n ON n.id = d.name_id;"
/* What `html` plots, stored with the summary (meta plots = 1 once written;
 * files from before have neither table nor key, and `summarize` adds both):
 * each series' points as the page draws them, and each rank's step time by
 * phase in groups of consecutive steps (analyze/summary_plots.h). */
#define TP_SCHEMA_SUMMARY_PLOTS                                                                   \
    "CREATE TABLE IF NOT EXISTS summary_plot (series_id INTEGER NOT NULL, t_ns INTEGER NOT NULL," \
    "  value REAL NOT NULL);"                                                                     \
    "CREATE TABLE IF NOT EXISTS summary_step_phase (rank INTEGER NOT NULL,"                       \
    "  steps INTEGER NOT NULL, first_step INTEGER NOT NULL, dataloader_next REAL NOT NULL,"       \
    "  to_device REAL NOT NULL, train_batch REAL NOT NULL, step_lr_schedulers REAL NOT NULL,"     \
    "  from_device REAL NOT NULL, reduce_metrics REAL NOT NULL, other REAL NOT "                  \
    "NULL" TP_SCHEMA_STEP_PAUSES TP_SCHEMA_STEP_TIMES ");"
/* summary_step_phase.pauses: the pauses each group of steps had (bit i:
 * core/phases.h's tp_pause_names[i]); files stored before have no such
 * column (readers take 0; `summarize --force` adds it). */
#define TP_SCHEMA_STEP_PAUSES ", pauses INTEGER NOT NULL DEFAULT 0"
#define TP_SCHEMA_ADD_STEP_PAUSES \
    "ALTER TABLE summary_step_phase ADD COLUMN pauses INTEGER NOT NULL DEFAULT 0;"
/* summary_step_phase.start_ns and end_ns: when each group's first step
 * began and its last one ended (run time), which the changes of pace are
 * placed by (analyze/regimes.h); files stored before have none (readers take
 * NULL: regimes without times; `summarize --force` adds them). */
#define TP_SCHEMA_STEP_TIMES ", start_ns INTEGER, end_ns INTEGER"
#define TP_SCHEMA_ADD_STEP_TIMES                                  \
    "ALTER TABLE summary_step_phase ADD COLUMN start_ns INTEGER;" \
    "ALTER TABLE summary_step_phase ADD COLUMN end_ns INTEGER;"
/* Each instrumented thread's process's CUDA_VISIBLE_DEVICES, where it was
 * set: which of the node's GPUs the process's device ordinals name, and in
 * which order (indices or UUIDs), so that a rank maps to the GPU it drove.
 * Files from before have no such table (a rank's GPU is then its local
 * rank's). */
#define TP_SCHEMA_THREAD_CUDA                                               \
    "CREATE TABLE IF NOT EXISTS thread_cuda (thread_id INTEGER PRIMARY KEY" \
    "  REFERENCES thread(id), visible_devices TEXT NOT NULL);"
/* summary_rank's columns from NVML's clock event reasons (the slowdown bits
 * over the rank's window, the share of samples with any; NULL where none
 * were recorded) and communication's device time over the window; files
 * summarized before have none (TP_SCHEMA_ADD_RANK_GPU_TRUTH adds them). */
#define TP_SCHEMA_RANK_GPU_TRUTH                                                            \
    "  gpu_reasons INTEGER, gpu_reasons_share REAL, comm_device_s REAL NOT NULL DEFAULT 0," \
    "  comm_device_exposed_s REAL NOT NULL DEFAULT 0"
#define TP_SCHEMA_ADD_RANK_GPU_TRUTH                                             \
    "ALTER TABLE summary_rank ADD COLUMN gpu_reasons INTEGER;"                   \
    "ALTER TABLE summary_rank ADD COLUMN gpu_reasons_share REAL;"                \
    "ALTER TABLE summary_rank ADD COLUMN comm_device_s REAL NOT NULL DEFAULT 0;" \
    "ALTER TABLE summary_rank ADD COLUMN comm_device_exposed_s REAL NOT NULL DEFAULT 0;"
/* summary_rank's step thread's wait for a CPU over the rank's window, % of
 * the time (NULL where not recorded); files summarized before have none
 * (TP_SCHEMA_ADD_RANK_CPU_WAIT adds it). */
#define TP_SCHEMA_RANK_CPU_WAIT     ", cpu_wait_percent REAL"
#define TP_SCHEMA_ADD_RANK_CPU_WAIT "ALTER TABLE summary_rank ADD COLUMN cpu_wait_percent REAL;"
/* Of a rank's steps, those its parts were measured over (its steady ones:
 * analyze/step_kinds.h), the last column of summary_rank and of
 * summary_rank_latest; files summarized before measured all of their steps
 * and have none (TP_SCHEMA_ADD_RANK_MEASURED adds it). */
#define TP_SCHEMA_RANK_MEASURED ", measured_steps INTEGER"
#define TP_SCHEMA_ADD_RANK_MEASURED(table) \
    "ALTER TABLE " table " ADD COLUMN measured_steps INTEGER;"
/* Each rank's step thread's stack samples within its steps, and whose work
 * they were (core/own_facts.h: the user's, trainprof's wrappers, its device
 * times, its capture windows), written with the summary so that a report
 * reads these rows rather than every sample again (an hour of 8 ranks at
 * 100 Hz: 0.33 s a report); none in a run without stack samples. A merge
 * carries each node's. Files summarized before have none (read from the
 * samples). */
#define TP_SCHEMA_SUMMARY_OWN                                                  \
    "CREATE TABLE IF NOT EXISTS summary_own (rank INTEGER NOT NULL,"           \
    "  agent_id INTEGER NOT NULL, samples REAL NOT NULL, users REAL NOT NULL," \
    "  wrappers REAL NOT NULL, device_times REAL NOT NULL, windows REAL NOT NULL);"
/* The ranks over the first rank's latest pace where it changed (analyze/
 * summary.h: ranks_latest), summary_rank's columns and the steps of that
 * pace (its regime's first and last step), written with the summary; none
 * where the pace did not change, or one rank that was the whole job marked
 * steps. A merge carries each node's, over its own first rank's latest pace
 * (the reader takes them where every node's is over about the same steps). */
#define TP_SCHEMA_SUMMARY_RANK_LATEST                                                            \
    "CREATE TABLE IF NOT EXISTS summary_rank_latest (rank INTEGER NOT NULL,"                     \
    "  agent_id INTEGER NOT NULL, local_rank INTEGER NOT NULL, steps INTEGER NOT NULL,"          \
    "  t0_ns INTEGER NOT NULL, t1_ns INTEGER NOT NULL, input_s REAL NOT NULL,"                   \
    "  compute_s REAL NOT NULL, comm_s REAL NOT NULL, comm_overlap_s REAL NOT NULL,"             \
    "  other_s REAL NOT NULL, gpu_util_percent REAL, gpu_sm_clock_mhz REAL, gpu "                \
    "INTEGER," TP_SCHEMA_RANK_GPU_TRUTH TP_SCHEMA_RANK_CPU_WAIT ", first_step INTEGER NOT NULL," \
    "  last_step INTEGER NOT NULL" TP_SCHEMA_RANK_MEASURED ");"
/* The GPU each instrumented process drove, as its CUDA runtime named it (a
 * UUID without NVML's "GPU-" or "MIG-"), on the thread that told it: a rank
 * maps to its GPU by it, whatever CUDA_VISIBLE_DEVICES and CUDA's device
 * order say. Files from before have no such table. */
#define TP_SCHEMA_THREAD_DEVICE                                               \
    "CREATE TABLE IF NOT EXISTS thread_device (thread_id INTEGER PRIMARY KEY" \
    "  REFERENCES thread(id), uuid TEXT NOT NULL);"
/* Each series' statistics over its agent's training steps (the span of its
 * step marks), which the rules of thumb judge; series whose agent marked
 * fewer than 2 steps, or none of whose samples fell inside them, have no
 * row. Files from before have no such table (readers then use the whole
 * run's; `summarize --force` adds it). */
#define TP_SCHEMA_SUMMARY_SERIES_STEPS                                                \
    "CREATE TABLE IF NOT EXISTS summary_series_steps (series_id INTEGER PRIMARY KEY," \
    "  count INTEGER NOT NULL, mean REAL, min REAL, p5 REAL, p50 REAL, p95 REAL, max REAL);"
/* Each GPU's clock event reasons over its agent's training steps
 * (core/gpu_slowdown.h: the slowdown bits seen, the share of samples with
 * any, with a troubling one; NULL: none recorded), so that a summary-only
 * merge, which keeps no samples, says what the node files saw. Files
 * summarized before have no such table (`summarize --force` adds it). */
#define TP_SCHEMA_SUMMARY_GPU                                                                   \
    "CREATE TABLE IF NOT EXISTS summary_gpu (agent_id INTEGER NOT NULL, gpu_index INTEGER NOT " \
    "NULL, reasons INTEGER NOT NULL, share REAL, trouble_share REAL, PRIMARY KEY (agent_id, "   \
    "gpu_index));"
/* Each agent's training steps, from its first step mark to its last (run
 * time, ns): the span summary_series_steps covers, which reports name and
 * html shades. Agents with fewer than 2 step marks have no row; files from
 * before have no such table (`summarize --force` adds it). */
#define TP_SCHEMA_SUMMARY_STEPS_WINDOW                                              \
    "CREATE TABLE IF NOT EXISTS summary_steps_window (agent_id INTEGER PRIMARY KEY" \
    "  REFERENCES agent(id), t0_ns INTEGER NOT NULL, t1_ns INTEGER NOT NULL);"
/* Each rank's batches (micro-batches) in its steps, and its warm-up steps
 * (first steps that compiled) with their total duration, which
 * summary_step's other figures leave out; each epoch's batches. Files
 * summarized before have no such columns (readers take 0: batches unknown,
 * no warm-up set apart); `summarize --force` adds them. */
#define TP_SCHEMA_STEP_BATCHES                                                 \
    ", batches INTEGER NOT NULL DEFAULT 0, warmup INTEGER NOT NULL DEFAULT 0," \
    "  warmup_s REAL NOT NULL DEFAULT 0" TP_SCHEMA_STEP_PROFILED
/* summary_step.profiled, profiled_samples, profiled_batches, profiled_s
 * (schema 10): steps a capture window took, their samples, batches and
 * duration, counted but left out of the figures; files summarized before have none (readers take
 * 0). */
#define TP_SCHEMA_STEP_PROFILED                                                         \
    ", profiled INTEGER NOT NULL DEFAULT 0, profiled_samples INTEGER NOT NULL"          \
    " DEFAULT 0, profiled_batches INTEGER NOT NULL DEFAULT 0, profiled_s REAL NOT NULL" \
    " DEFAULT 0" TP_SCHEMA_STEP_WARMUP
#define TP_SCHEMA_ADD_STEP_PROFILED                                                    \
    "ALTER TABLE summary_step ADD COLUMN profiled INTEGER NOT NULL DEFAULT 0;"         \
    "ALTER TABLE summary_step ADD COLUMN profiled_samples INTEGER NOT NULL DEFAULT 0;" \
    "ALTER TABLE summary_step ADD COLUMN profiled_batches INTEGER NOT NULL DEFAULT 0;" \
    "ALTER TABLE summary_step ADD COLUMN profiled_s REAL NOT NULL DEFAULT 0;"
/* summary_step.warmup_samples, warmup_batches: what the warm-up steps
 * fetched, so that the steps' totals are the training's; files summarized
 * before have none (readers take 0), `summarize --force` adds them. */
#define TP_SCHEMA_STEP_WARMUP \
    ", warmup_samples INTEGER NOT NULL DEFAULT 0, warmup_batches INTEGER NOT NULL DEFAULT 0"
#define TP_SCHEMA_ADD_STEP_WARMUP                                                    \
    "ALTER TABLE summary_step ADD COLUMN warmup_samples INTEGER NOT NULL DEFAULT 0;" \
    "ALTER TABLE summary_step ADD COLUMN warmup_batches INTEGER NOT NULL DEFAULT 0;"
#define TP_SCHEMA_EPOCH_BATCHES ", batches INTEGER NOT NULL DEFAULT 0"
#define TP_SCHEMA_ADD_BATCHES                                                 \
    "ALTER TABLE summary_step ADD COLUMN batches INTEGER NOT NULL DEFAULT 0;" \
    "ALTER TABLE summary_step ADD COLUMN warmup INTEGER NOT NULL DEFAULT 0;"  \
    "ALTER TABLE summary_step ADD COLUMN warmup_s REAL NOT NULL DEFAULT 0;"   \
    "ALTER TABLE summary_epoch ADD COLUMN batches INTEGER NOT NULL DEFAULT 0;"
/* Each node's metadata in a merged run (host facts, job environment), under
 * its agent: the merged run's own meta is its first node's. Only `merge`
 * writes it; readers of a file without it know only the first agent's. */
#define TP_SCHEMA_AGENT_META                                                                 \
    "CREATE TABLE IF NOT EXISTS agent_meta (agent_id INTEGER NOT NULL REFERENCES agent(id)," \
    "  key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (agent_id, key)) WITHOUT ROWID;"
/* summary_timing.in_profiled_s (schema 10): the part of a region's time in
 * steps a capture window took; files summarized before have none (readers
 * take 0). */
#define TP_SCHEMA_TIMING_PROFILED ", in_profiled_s REAL NOT NULL DEFAULT 0" TP_SCHEMA_TIMING_WARMUP
#define TP_SCHEMA_ADD_TIMING_PROFILED \
    "ALTER TABLE summary_timing ADD COLUMN in_profiled_s REAL NOT NULL DEFAULT 0;"
/* summary_timing.in_warmup_s: the part of a region's time in its rank's
 * warm-up steps; files summarized before have none (readers take 0). */
#define TP_SCHEMA_TIMING_WARMUP ", in_warmup_s REAL NOT NULL DEFAULT 0"
#define TP_SCHEMA_ADD_TIMING_WARMUP \
    "ALTER TABLE summary_timing ADD COLUMN in_warmup_s REAL NOT NULL DEFAULT 0;"
#define TP_SCHEMA_SUMMARY_TIMING                                                       \
    "CREATE TABLE summary_timing (rank INTEGER NOT NULL, name TEXT NOT NULL,"          \
    "  count INTEGER NOT NULL, total_s REAL NOT NULL, mean REAL, min REAL, p5 REAL,"   \
    "  p50 REAL, p95 REAL, max REAL, in_steps_s REAL NOT NULL,"                        \
    "  device_count INTEGER NOT NULL, device_total_s REAL NOT NULL, device_mean REAL," \
    "  device_min REAL, device_p5 REAL, device_p50 REAL, device_p95 REAL,"             \
    "  device_max REAL" TP_SCHEMA_TIMING_PROFILED ", PRIMARY KEY (rank, name)) WITHOUT ROWID;"

/* Creates every table, view and the metric catalogue in an empty database,
 * and stamps application_id and user_version. Returns an SQLite code. */
int tp_schema_create(sqlite3 *db);

/* Runs SQL that returns no rows; returns an SQLite code. */
int tp_exec(sqlite3 *db, const char *sql);

/* Puts in err why reading path failed, from db's last error: "damaged run
 * file" only where SQLite found the file so (corrupt, not a database); out
 * of memory, an I/O error or a full disk is not the file's fault, and says
 * what it is. */
void tp_read_failure(char *err, size_t cap, const char *path, sqlite3 *db);

#endif
