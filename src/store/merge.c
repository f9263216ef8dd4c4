/* merge.c: several run files into one, one agent per input. */
#include "store/merge.h"
#include "store/merge_energy.h"
#include "store/merge_inputs.h"
#include "store/merge_ops.h"
#include "store/sql_util.h"
#include "store/mark_kind.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/reader.h"
#include "store/reader_stacks.h"
#include "store/reader_stream.h"
#include "store/schema.h"
#include "core/run_keys.h"
#include "util/atomic_file.h"

/* The largest id in table of db's main schema (0 when empty), or -1. */
static int64_t max_id(sqlite3 *db, const char *table)
{
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT coalesce(max(id), 0) FROM main.%s", table);
    int64_t id = -1;
    return tp_sql_query_int(db, sql, &id) == SQLITE_OK ? id : -1;
}

/* An input's sampled stacks (schema 8): its tree (frame and node ids offset
 * by the output's largest: off), and with rows its samples too (thread ids
 * offset, times shifted, region names mapped by name_map; runs: its rows
 * are runs, schema 9, else one sample each). */
typedef struct stack_offsets {
    long long frame, node;
} stack_offsets;

static char *stacks_sql(stack_offsets off, bool rows, long long thread, long long dt, bool runs)
{
    char *samples =
        rows ? sqlite3_mprintf("INSERT INTO main.stack_sample SELECT s.thread_id + %lld, s.tid,"
                               " s.t_ns + %lld, coalesce(nm.dst, 0), s.state,"
                               " CASE s.node_id WHEN 0 THEN 0 ELSE s.node_id + %lld END, %s"
                               " FROM src.stack_sample s LEFT JOIN name_map nm"
                               " ON nm.src = s.phase_id;",
                               thread, dt, off.node, runs ? "s.count, s.span_ns" : "1, 0")
             : NULL;
    char *sql = rows && !samples
                    ? NULL
                    : sqlite3_mprintf(
                          "INSERT INTO main.frame SELECT id + %lld, function, file FROM src.frame;"
                          "INSERT INTO main.stack_node SELECT id + %lld,"
                          " CASE parent WHEN 0 THEN 0 ELSE parent + %lld END,"
                          " CASE frame_id WHEN 0 THEN 0 ELSE frame_id + %lld END, line"
                          " FROM src.stack_node;%s",
                          off.frame, off.node, off.node, off.frame, samples ? samples : "");
    sqlite3_free(samples);
    return sql;
}

/* An input's stack counts into the output's summary_stack, nodes offset:
 * its stored ones, or (a file summarized before they were stored) counted
 * from its rows. */
static char *stack_counts_sql(stack_offsets off, bool stored, int version)
{
    char *counted = stored ? NULL : tp_stack_counts_sql("src", version);
    if (!stored && !counted)
        return NULL;
    char *sql = sqlite3_mprintf(
        "INSERT INTO main.summary_stack SELECT rank, phase, worker,"
        " CASE node_id WHEN 0 THEN 0 ELSE node_id + %lld END, state, samples FROM (%s);",
        off.node,
        stored ? "SELECT rank, phase, worker, node_id, state, samples FROM src.summary_stack"
               : counted);
    sqlite3_free(counted);
    return sql;
}

/* The rows of an input's samples, regions, marks, device times and sampled
 * stacks: all of them, or (for a report that reads the stored summaries)
 * each series' first and last sample only, which are what the report reads
 * of them besides energy, and the stacks' tree (their counts are in the
 * summary). */
static char *rows_sql(long long series, long long thread, long long dt, bool all_rows, int version,
                      stack_offsets off)
{
    bool device = version >= TP_SCHEMA_DEVICE, stacks = version >= TP_SCHEMA_STACKS_VERSION;
    char *stack_rows =
        stacks ? stacks_sql(off, all_rows, thread, dt, version >= TP_SCHEMA_STACK_RUNS_VERSION)
               : NULL;
    if (stacks && !stack_rows)
        return NULL;
    if (all_rows) {
        char *device_sql =
            device ? sqlite3_mprintf("INSERT INTO main.device_time SELECT d.thread_id + %lld,"
                                     " nm.dst, d.start_ns + %lld, d.device_ns"
                                     " FROM src.device_time d CROSS JOIN name_map nm"
                                     " ON nm.src = d.name_id;",
                                     thread, dt)
                   : NULL;
        if (device && !device_sql) {
            sqlite3_free(stack_rows);
            return NULL;
        }
        char *sql = sqlite3_mprintf(
            "CREATE TEMP TABLE name_map (src INTEGER PRIMARY KEY, dst INTEGER NOT NULL);"
            "INSERT INTO name_map SELECT n.id, m.id FROM src.name n JOIN main.name m"
            " ON m.text = n.text;"
            "INSERT INTO main.sample (series_id, t_ns, value)"
            " SELECT series_id + %lld, t_ns + %lld, value FROM src.sample;"
            "INSERT INTO main.region SELECT r.thread_id + %lld, nm.dst, r.depth,"
            " r.start_ns + %lld, r.end_ns + %lld FROM src.region r"
            " CROSS JOIN name_map nm ON nm.src = r.name_id;"
            "INSERT INTO main.mark SELECT thread_id + %lld,"
            " CASE kind WHEN 'step' THEN 3 WHEN 'epoch' THEN 4 WHEN 'samples' THEN 6"
            " WHEN 'step_end' THEN 9 ELSE kind END," /* words before schema 7 */
            " t_ns + %lld, value FROM src.mark;"
            "%s%s"
            "DROP TABLE name_map;",
            series, dt, thread, dt, dt, thread, dt, device_sql ? device_sql : "",
            stack_rows ? stack_rows : "");
        sqlite3_free(device_sql);
        sqlite3_free(stack_rows);
        return sql;
    }
    char *sql = sqlite3_mprintf(
        "INSERT OR IGNORE INTO main.sample (series_id, t_ns, value)"
        " SELECT s.id + %lld, x.t_ns + %lld, x.value FROM src.series s CROSS JOIN src.sample x"
        "  ON x.series_id = s.id AND (x.t_ns = (SELECT min(t_ns) FROM src.sample"
        "   WHERE series_id = s.id) OR x.t_ns = (SELECT max(t_ns) FROM src.sample"
        "   WHERE series_id = s.id));%s",
        series, dt, stack_rows ? stack_rows : "");
    sqlite3_free(stack_rows);
    return sql;
}

/* The statements that copy what an input stored of its summary besides the
 * tables every summary has, each where it stored it: its ranks over its own
 * first rank's latest pace (as agent; the reader judges whether every
 * node's are over the same pace: analyze/summary.c), its GPUs' clock event
 * reasons (as agent), its ranks' own work counts (as agent; kept only where
 * every input has them: tp_merge_runs), its user regions' phases, and its stalls and their threads
 * (ids after the stall_ids before, times shifted by dt, stack nodes by node). */
static void summary_extras_sql(char *out, size_t cap, const tp_merge_input *info,
                               long long stall_ids, long long dt, long long node, int agent)
{
    int len = 0;
    out[0] = '\0';
    if (info->gpu_slowdowns)
        len = snprintf(out, cap,
                       TP_SCHEMA_SUMMARY_GPU "INSERT INTO main.summary_gpu SELECT %d, gpu_index,"
                                             " reasons, share, trouble_share FROM src.summary_gpu;",
                       agent);
    if (len < 0 || (size_t)len >= cap)
        return;
    if (info->rank_latest)
        len +=
            snprintf(out + len, cap - (size_t)len,
                     TP_SCHEMA_SUMMARY_RANK_LATEST
                     "INSERT INTO main.summary_rank_latest SELECT rank, %d, local_rank, steps,"
                     " t0_ns + %lld, t1_ns + %lld, input_s, compute_s, comm_s, comm_overlap_s,"
                     " other_s, gpu_util_percent, gpu_sm_clock_mhz, gpu, gpu_reasons,"
                     " gpu_reasons_share, comm_device_s, comm_device_exposed_s, cpu_wait_percent,"
                     " first_step, last_step, %s FROM src.summary_rank_latest;",
                     agent, dt, dt, info->rank_latest_measured ? "measured_steps" : "steps");
    if (info->own && len >= 0 && (size_t)len < cap)
        len += snprintf(out + len, cap - (size_t)len,
                        TP_SCHEMA_SUMMARY_OWN "INSERT INTO main.summary_own SELECT rank, %d,"
                                              " samples, users, wrappers, device_times, windows"
                                              " FROM src.summary_own;",
                        agent);
    if (info->withins && len >= 0 && (size_t)len < cap)
        len += snprintf(out + len, cap - (size_t)len,
                        TP_SCHEMA_SUMMARY_REGION_WITHIN
                        "INSERT INTO main.summary_region_within"
                        " SELECT name, within, seconds FROM src.summary_region_within;");
    if (!info->stalls || len < 0 || (size_t)len >= cap)
        return;
    out += len;
    cap -= (size_t)len;
    snprintf(out, cap,
             "INSERT INTO main.summary_stall (id, rank, ended, start_ns, end_ns, threshold_s,"
             " step, between_steps, gpu, gpu_util_percent, blocked) SELECT id + %lld, rank,"
             " ended, start_ns + %lld, end_ns + %lld, threshold_s, step, %s, %s, %s"
             " FROM src.summary_stall;"
             "INSERT INTO main.summary_stall_thread SELECT stall_id + %lld, pid, tid, worker,"
             " phase, CASE node_id WHEN 0 THEN 0 ELSE node_id + %lld END, samples, known,"
             " on_cpu, %s FROM src.summary_stall_thread;",
             stall_ids, dt, dt, info->stall_between ? "between_steps" : "0",
             info->stall_gpu ? "gpu, gpu_util_percent" : "NULL, NULL",
             info->stall_blocked ? "blocked" : "NULL", stall_ids, node,
             info->stall_thread_blocked ? "blocked" : "0");
}

/* summary_timing's columns as an input holds them, those it has not as 0 or NULL. */
static void timing_columns(char *out, size_t cap, const tp_merge_input *info)
{
    snprintf(out, cap,
             "rank, name, count, total_s, mean, min, p5, p50, p95, max, in_steps_s, %s, %s, %s",
             info->version >= TP_SCHEMA_DEVICE
                 ? "device_count, device_total_s, device_mean, device_min, device_p5, device_p50,"
                   " device_p95, device_max"
                 : "0, 0, NULL, NULL, NULL, NULL, NULL, NULL",
             info->timing_profiled ? "in_profiled_s" : "0",
             info->timing_warmup ? "in_warmup_s" : "0");
}

/* summary_rank's columns after gpu_sm_clock_mhz as input info holds them
 * (a file summarized before some has none: the local rank for its GPU,
 * its steps for those measured, NULL and 0 for the rest), into buf. */
static const char *rank_columns(char *buf, size_t cap, const tp_merge_input *info)
{
    snprintf(buf, cap, "%s, %s, %s, %s", info->rank_gpu ? "gpu" : "local_rank",
             info->rank_truth
                 ? "gpu_reasons, gpu_reasons_share, comm_device_s, comm_device_exposed_s"
                 : "NULL, NULL, 0, 0",
             info->rank_cpu_wait ? "cpu_wait_percent" : "NULL",
             info->rank_measured ? "measured_steps" : "steps");
    return buf;
}

/* Copies one input into the output as agent `agent`; id offsets keep every
 * series, thread and name id unique, and its series offset goes to
 * info->series_off. With summaries, its summary_* rows too (series ids
 * offset, times shifted, ranks kept); all_rows: as rows_sql says. Rows keep
 * their order: the source table is always the outer loop (CROSS JOIN), so
 * regions and marks stay in the order they were written. */
static int copy_input(sqlite3 *db, const char *path, int agent, tp_merge_input *info, bool first,
                      bool summaries, bool plots, bool step_phases, bool all_rows)
{
    char *sql = sqlite3_mprintf("ATTACH %Q AS src", path);
    int rc = tp_exec(db, sql);
    sqlite3_free(sql);
    if (rc != SQLITE_OK)
        return rc;
    long long series = max_id(db, "series"), thread = max_id(db, "thread"), dt = info->shift;
    stack_offsets off = {max_id(db, "frame"), max_id(db, "stack_node")};
    if (series < 0 || thread < 0 || off.frame < 0 || off.node < 0) {
        tp_exec(db, "DETACH src");
        return SQLITE_ERROR;
    }
    info->series_off = series;
    char plots_sql[1000], times[96];
    int plen = 0;
    if (plots)
        plen = snprintf(plots_sql, sizeof plots_sql,
                        "INSERT INTO main.summary_plot SELECT series_id + %lld, t_ns + %lld, value"
                        " FROM src.summary_plot ORDER BY rowid;",
                        series, dt);
    if (info->step_times)
        snprintf(times, sizeof times, "start_ns + %lld, end_ns + %lld", dt, dt);
    else
        snprintf(times, sizeof times, "NULL, NULL");
    snprintf(plots_sql + plen, sizeof plots_sql - (size_t)plen,
             "INSERT INTO main.summary_step_phase (rank, steps, first_step, dataloader_next,"
             " to_device, train_batch, step_lr_schedulers, from_device, reduce_metrics, other,"
             " pauses, start_ns, end_ns) SELECT rank, steps, first_step,"
             " dataloader_next, to_device, train_batch, step_lr_schedulers, from_device,"
             " reduce_metrics, other, %s, %s FROM src.summary_step_phase ORDER BY rowid;",
             info->step_pauses ? "pauses" : "0", times);
    char extras_sql[4096];
    summary_extras_sql(extras_sql, sizeof extras_sql, info, max_id(db, "summary_stall"), dt,
                       off.node, agent);
    char steps_sql[400];
    int len = snprintf(steps_sql, sizeof steps_sql,
                       "INSERT INTO main.summary_series_steps SELECT series_id + %lld, count, mean,"
                       " min, p5, p50, p95, max FROM src.summary_series_steps;",
                       series);
    if (info->steps_window) /* a node file's one agent is the merged run's agent */
        snprintf(steps_sql + len, sizeof steps_sql - (size_t)len,
                 "INSERT INTO main.summary_steps_window SELECT %d, t0_ns + %lld, t1_ns + %lld"
                 " FROM src.summary_steps_window;",
                 agent, dt, dt);
    char timing_cols[400], rank_cols[160];
    timing_columns(timing_cols, sizeof timing_cols, info);
    char *summary_sql = sqlite3_mprintf(
        "INSERT INTO main.summary_series SELECT series_id + %lld, count, mean,"
        " min, p5, p50, p95, max FROM src.summary_series;"
        "INSERT INTO main.summary_timing SELECT %s FROM src.summary_timing;"
        "INSERT INTO main.summary_step SELECT rank, count, total_s, samples, mean, min, p5, p50,"
        " p95, max, %s, %s, %s FROM src.summary_step;"
        "INSERT INTO main.summary_epoch SELECT rank, epoch, start_ns + %lld, duration_s, steps,"
        " samples, %s FROM src.summary_epoch ORDER BY rowid;"
        "INSERT INTO main.summary_rank SELECT rank, %d, local_rank, steps, t0_ns + %lld,"
        " t1_ns + %lld, input_s, compute_s, comm_s, comm_overlap_s, other_s, gpu_util_percent,"
        " gpu_sm_clock_mhz, %s FROM src.summary_rank;%s%s%s",
        series, timing_cols, info->batches ? "batches, warmup, warmup_s" : "0, 0, 0",
        info->step_profiled ? "profiled, profiled_samples, profiled_batches, profiled_s"
                            : "0, 0, 0, 0",
        info->step_warmup ? "warmup_samples, warmup_batches" : "0, 0", dt,
        info->batches ? "batches" : "0", agent, dt, dt,
        rank_columns(rank_cols, sizeof rank_cols, info), step_phases ? plots_sql : "",
        info->series_steps ? steps_sql : "", extras_sql);
    char *rows = rows_sql(series, thread, dt, all_rows, info->version, off);
    char *ops = info->ops ? tp_merge_ops_sql(max_id(db, "op_window"), thread, dt) : NULL;
    char *counts = summaries && info->version >= TP_SCHEMA_STACKS_VERSION
                       ? stack_counts_sql(off, info->stack_counts, info->version)
                       : NULL;
    char cuda_sql[256] = "";
    int used = 0;
    if (info->thread_cuda)
        used = snprintf(cuda_sql, sizeof cuda_sql,
                        "INSERT INTO main.thread_cuda SELECT thread_id + %lld, visible_devices"
                        " FROM src.thread_cuda;",
                        thread);
    if (info->thread_device)
        snprintf(cuda_sql + used, sizeof cuda_sql - (size_t)used,
                 "INSERT INTO main.thread_device SELECT thread_id + %lld, uuid"
                 " FROM src.thread_device;",
                 thread);
    sql = sqlite3_mprintf(
        "BEGIN;"
        "INSERT INTO agent (id, name, host) SELECT %d, name, host FROM src.agent WHERE id = 1;"
        "INSERT OR IGNORE INTO main.name (text) SELECT text FROM src.name;"
        "INSERT INTO main.series (id, agent_id, metric_id, labels)"
        " SELECT s.id + %lld, %d,"
        "  (SELECT m.id FROM main.metric m JOIN src.metric sm ON sm.name = m.name"
        "   WHERE sm.id = s.metric_id), s.labels FROM src.series s;"
        "INSERT INTO main.agent_meta SELECT %d, key, value FROM src.meta;"
        "INSERT INTO main.unavailable (agent_id, source, reason)"
        " SELECT %d, source, reason FROM src.unavailable;"
        "INSERT INTO main.gpu SELECT %d, gpu_index, name, uuid, mem_total_bytes, energy_source"
        " FROM src.gpu;"
        "INSERT INTO main.thread SELECT id + %lld, %d, pid, tid, rank,"
        " local_rank, world_size, name, dropped_events FROM src.thread;"
        "%s%s%s%s%s%s"
        "COMMIT;",
        agent, series, agent, agent, agent, agent, thread, agent, cuda_sql, rows ? rows : "",
        ops ? ops : "",
        first ? "INSERT OR REPLACE INTO main.meta SELECT key, value FROM src.meta;" : "",
        summaries ? summary_sql : "", counts ? counts : "");
    bool counted = !summaries || info->version < TP_SCHEMA_STACKS_VERSION || counts;
    rc = rows && summary_sql && counted && sql && (ops || !info->ops) ? tp_exec(db, sql)
                                                                      : SQLITE_NOMEM;
    sqlite3_free(sql);
    sqlite3_free(ops);
    sqlite3_free(counts);
    sqlite3_free(rows);
    sqlite3_free(summary_sql);
    if (rc != SQLITE_OK)
        tp_exec(db, "ROLLBACK");
    int rc2 = tp_exec(db, "DETACH src");
    return rc != SQLITE_OK ? rc : rc2;
}

/* Flushes path's data to the disk (fsync); false if it can't. */
static bool sync_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool ok = fsync(fd) == 0;
    close(fd);
    return ok;
}

enum { KEEP_SUMMARY = 1, KEEP_PLOTS = 2, KEEP_STALLS = 4, SUMMARY_ONLY = 8, FOREIGN = 16 };

/* The merged run's own metadata: how many files, the clocks' alignment,
 * the earliest start (first_agent's), no duration; the summary flags its
 * inputs' carried over (what, KEEP_* and SUMMARY_ONLY bits). */
static int merged_meta(sqlite3 *db, size_t n, int64_t uncertainty, int64_t earliest,
                       int first_agent, unsigned what)
{
    char *sql = sqlite3_mprintf(
        "INSERT OR REPLACE INTO meta VALUES ('" TP_META_MERGED_FROM "', '%d files');"
        "INSERT OR REPLACE INTO meta VALUES ('" TP_META_MERGE_ANCHOR_UNCERTAINTY_NS "', '%lld');"
        "INSERT OR REPLACE INTO meta VALUES ('" TP_META_START_WALL_NS "', '%lld');"
        "INSERT OR REPLACE INTO meta SELECT key, value FROM agent_meta"
        " WHERE agent_id = %d AND key = '" TP_META_START_WALL "';"
        "DELETE FROM meta WHERE key IN ('" TP_META_DURATION_NS "');"
        "%s%s%s%s%s",
        (int)n, (long long)uncertainty, (long long)earliest, first_agent,
        what & KEEP_SUMMARY ? "" : "DELETE FROM meta WHERE key = '" TP_META_SUMMARIZED "';",
        what & KEEP_PLOTS ? "" : "DELETE FROM meta WHERE key = '" TP_META_PLOTS "';",
        what & KEEP_STALLS ? "" : "DELETE FROM meta WHERE key = '" TP_META_STALLS_STORED "';",
        what & SUMMARY_ONLY ? "INSERT OR REPLACE INTO meta VALUES ('" TP_META_SUMMARY_ONLY
                              "', '1');"
                            : "",
        /* the first input's maker stands for all only where each is this
         * analysis's summary: one made by another marks the merge another's */
        what & FOREIGN ? "INSERT OR REPLACE INTO meta VALUES ('" TP_META_SUMMARY_BY "', 'mixed');"
                       : "");
    int rc = sql ? tp_exec(db, sql) : SQLITE_NOMEM;
    sqlite3_free(sql);
    return rc;
}

/* Creates the output's private file beside out_path (pending: removed by a
 * stop signal until it is ended) and opens it as an empty run file in *db.
 * SQLITE_CANTOPEN with *db NULL and the reason in err when the file can't
 * be made; else SQLite's code, *db set (closed by the caller) either way. */
static int open_output(const char *out_path, tp_pending_output *pending, sqlite3 **db, char *err,
                       size_t cap)
{
    /* made exclusively under a random name: nothing planted is followed */
    int probe = tp_pending_output_open(pending, out_path);
    if (probe < 0) { /* say where, not SQLite's "unable to open database file" */
        snprintf(err, cap, "merge: cannot write %s: %s", out_path, strerror(errno));
        return SQLITE_CANTOPEN;
    }
    close(probe);
    const char *tmp = pending->tmp;
    int rc = sqlite3_open_v2(
        tmp, db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    /* The output is private until renamed, and thrown away on any failure:
     * no journal, no syncs per transaction (one fsync before the rename
     * makes it durable), one exclusive lock, a large page cache; 16 KiB
     * pages (a merge of 2 node-days 25.5 s -> 22 s, reports no slower). */
    if (rc == SQLITE_OK)
        rc = tp_exec(*db, "PRAGMA page_size=16384; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                          " PRAGMA main.locking_mode=EXCLUSIVE; PRAGMA temp_store=MEMORY;"
                          " PRAGMA cache_size=-262144;");
    if (rc == SQLITE_OK)
        rc = tp_schema_create(*db);
    if (rc == SQLITE_OK)
        rc = tp_exec(*db, TP_SCHEMA_AGENT_META);
    return rc;
}

/* The ranks' own work counts stand for the merged run only where every
 * input stored its own: else the table goes, and they are read from the
 * rows where the merge has them (none in a summary-only merge). */
static int drop_partial_own(sqlite3 *db, const tp_merge_input *info, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!info[i].own)
            return tp_exec(db, "DROP TABLE IF EXISTS summary_own;");
    return SQLITE_OK;
}

bool tp_merge_runs(const char *out_path, const char *const *inputs, size_t n,
                   const tp_merge_options *opt, char *err, size_t cap)
{
    tp_merge_input *info = calloc(n, sizeof *info);
    if (!info || !tp_merge_read_inputs(inputs, n, info, opt->force, err, cap)) {
        tp_merge_free_inputs(info, n);
        return false;
    }
    int64_t earliest = info[0].start_wall_ns, uncertainty = 0;
    int first_agent = 1; /* the earliest input's agent id */
    for (size_t i = 0; i < n; i++) {
        if (info[i].start_wall_ns < earliest) {
            earliest = info[i].start_wall_ns;
            first_agent = (int)i + 1;
        }
        if (info[i].uncertainty_ns > uncertainty)
            uncertainty = info[i].uncertainty_ns;
    }
    char why[1024] = "";
    bool summaries = tp_merge_summaries_carry_over(inputs, info, n, why, sizeof why),
         plots = summaries;
    for (size_t i = 0; i < n; i++)
        if (plots && !info[i].plots) {
            plots = false;
            snprintf(why, sizeof why,
                     "%s holds no stored plots (recorded before they were stored): add them "
                     "with `trainprof summarize --force`",
                     inputs[i]);
        }
    bool all_rows = !(opt->summary_only && summaries && (plots || !opt->plots));
    if (all_rows && opt->rows_refused) {
        snprintf(err, cap, "merge --summary: %s", why);
        tp_merge_free_inputs(info, n);
        return false;
    }
    tp_pending_output pending;
    sqlite3 *db = NULL;
    int rc = open_output(out_path, &pending, &db, err, cap);
    if (rc == SQLITE_CANTOPEN && !db) {
        tp_pending_output_end(&pending, out_path, false); /* when SQLite failed, not the file */
        tp_merge_free_inputs(info, n);
        return false;
    }
    /* one transaction per input (an attached file can't be detached inside
     * one); the output only appears, by rename, once every input is in */
    /* the groups of steps' phases are small (300 a rank) and the changes of
     * pace read them: kept wherever the plots could be; the plots themselves
     * not in a merge for `report` */
    bool step_phases = plots, all_stalls = true, foreign = tp_merge_any_foreign(info, n);
    for (size_t i = 0; i < n; i++)
        all_stalls = all_stalls && info[i].stalls;
    plots &= all_rows || opt->plots;
    for (size_t i = 0; rc == SQLITE_OK && i < n; i++) {
        info[i].shift = info[i].start_wall_ns - earliest;
        rc = copy_input(db, inputs[i], (int)i + 1, &info[i], i == 0, summaries, plots, step_phases,
                        all_rows);
        if (rc == SQLITE_OK && opt->progress)
            opt->progress(opt->progress_ctx, i + 1, n, inputs[i], all_rows);
    }
    if (rc == SQLITE_OK && (rc = drop_partial_own(db, info, n)) == SQLITE_OK && !all_rows &&
        step_phases)
        rc = tp_merge_thin_step_groups(db, opt->step_groups_max);
    if (rc == SQLITE_OK && !all_rows)
        rc = tp_merge_epoch_bounds(db);
    for (size_t i = 0; rc == SQLITE_OK && !all_rows && i < n; i++)
        rc = tp_merge_epoch_energy(db, inputs[i], info[i].series_off, info[i].shift);
    if (rc == SQLITE_OK && !all_rows)
        rc = tp_exec(db, "DROP TABLE epoch_bound;");
    if (rc == SQLITE_OK)
        rc = merged_meta(db, n, uncertainty, earliest, first_agent,
                         (summaries ? KEEP_SUMMARY : 0) | (plots ? KEEP_PLOTS : 0) |
                             (summaries && all_stalls ? KEEP_STALLS : 0) |
                             (all_rows ? 0 : SUMMARY_ONLY) | (summaries && foreign ? FOREIGN : 0));
    if (rc == SQLITE_OK && !all_rows && opt->step_groups_max) /* the thinned groups' room back */
        rc = tp_exec(db, "VACUUM;");
    if (rc != SQLITE_OK)
        snprintf(err, cap, "merge: %s", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    tp_merge_free_inputs(info, n);
    if (rc == SQLITE_OK && opt->durable && !sync_file(pending.tmp)) {
        snprintf(err, cap, "merge: cannot write %s to disk", pending.tmp);
        rc = SQLITE_IOERR;
    }
    if (!tp_pending_output_end(&pending, out_path, rc == SQLITE_OK) && rc == SQLITE_OK) {
        snprintf(err, cap, "merge: cannot write %s: %s", out_path, strerror(errno));
        rc = SQLITE_CANTOPEN;
    }
    return rc == SQLITE_OK;
}
