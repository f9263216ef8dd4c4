/* schema.c: creating a run file. */
#include "store/schema.h"

#include <stdbool.h>
#include <stdio.h>

#include "core/metric_catalog.h"

static const char schema_sql[] =
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE agent (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, host TEXT NOT NULL);"
    "CREATE TABLE metric (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
    "  unit TEXT NOT NULL, help TEXT NOT NULL);"
    "CREATE TABLE series (id INTEGER PRIMARY KEY,"
    "  agent_id INTEGER NOT NULL REFERENCES agent(id),"
    "  metric_id INTEGER NOT NULL REFERENCES metric(id),"
    "  labels TEXT NOT NULL);"
    "CREATE TABLE sample (series_id INTEGER NOT NULL, t_ns INTEGER NOT NULL, value REAL NOT NULL,"
    "  PRIMARY KEY (series_id, t_ns)) WITHOUT ROWID;"
    "CREATE TABLE unavailable (agent_id INTEGER NOT NULL REFERENCES agent(id),"
    "  source TEXT NOT NULL, reason TEXT NOT NULL);"
    "CREATE TABLE gpu (agent_id INTEGER NOT NULL REFERENCES agent(id), gpu_index INTEGER NOT NULL,"
    "  name TEXT NOT NULL, uuid TEXT NOT NULL, mem_total_bytes INTEGER NOT NULL,"
    "  energy_source TEXT NOT NULL, PRIMARY KEY (agent_id, gpu_index));"
    "CREATE TABLE thread (id INTEGER PRIMARY KEY, agent_id INTEGER NOT NULL REFERENCES agent(id),"
    "  pid INTEGER NOT NULL, tid INTEGER NOT NULL, rank INTEGER NOT NULL,"
    "  local_rank INTEGER NOT NULL, world_size INTEGER NOT NULL, name TEXT NOT NULL,"
    "  dropped_events INTEGER NOT NULL DEFAULT 0);" TP_SCHEMA_THREAD_CUDA TP_SCHEMA_THREAD_DEVICE
    "CREATE TABLE name (id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE);"
    "CREATE TABLE region (thread_id INTEGER NOT NULL REFERENCES thread(id),"
    "  name_id INTEGER NOT NULL REFERENCES name(id), depth INTEGER NOT NULL,"
    "  start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL);"
    "CREATE TABLE mark (thread_id INTEGER NOT NULL REFERENCES thread(id), kind INTEGER NOT NULL,"
    "  t_ns INTEGER NOT NULL, value INTEGER NOT NULL);" TP_SCHEMA_DEVICE_TIME TP_SCHEMA_STACKS
        TP_SCHEMA_OPS;

static const char summary_sql[] =
    /* what `report` shows, computed by the recorder from the rows above when
     * the command ends (meta summarized = 1 once written): a long run's
     * report then reads a few hundred rows instead of every sample */
    "CREATE TABLE summary_series (series_id INTEGER PRIMARY KEY, count INTEGER NOT NULL,"
    "  mean REAL, min REAL, p5 REAL, p50 REAL, p95 REAL, max REAL);" TP_SCHEMA_SUMMARY_TIMING
    "CREATE TABLE summary_step (rank INTEGER PRIMARY KEY, count INTEGER NOT NULL,"
    "  total_s REAL NOT NULL, samples INTEGER NOT NULL, mean REAL, min REAL, p5 REAL, p50 REAL,"
    "  p95 REAL, max REAL" TP_SCHEMA_STEP_BATCHES ");"
    "CREATE TABLE summary_epoch (rank INTEGER NOT NULL, epoch INTEGER NOT NULL,"
    "  start_ns INTEGER NOT NULL, duration_s REAL NOT NULL, steps INTEGER NOT NULL,"
    "  samples INTEGER NOT NULL" TP_SCHEMA_EPOCH_BATCHES ");"
    "CREATE TABLE summary_rank (rank INTEGER PRIMARY KEY, agent_id INTEGER NOT NULL,"
    "  local_rank INTEGER NOT NULL, steps INTEGER NOT NULL, t0_ns INTEGER NOT NULL,"
    "  t1_ns INTEGER NOT NULL, input_s REAL NOT NULL, compute_s REAL NOT NULL,"
    "  comm_s REAL NOT NULL, comm_overlap_s REAL NOT NULL, other_s REAL NOT NULL,"
    "  gpu_util_percent REAL, gpu_sm_clock_mhz REAL, gpu INTEGER," TP_SCHEMA_RANK_GPU_TRUTH
        TP_SCHEMA_RANK_CPU_WAIT TP_SCHEMA_RANK_MEASURED
    ");" TP_SCHEMA_SUMMARY_STACKS TP_SCHEMA_SUMMARY_STALLS;

static const char views_sql[] = TP_SCHEMA_MARKS_VIEW TP_SCHEMA_OPS_VIEW
    "CREATE VIEW regions AS SELECT t.pid AS pid, t.tid AS tid, t.rank AS rank, n.text AS name,"
    "  r.depth AS depth, r.start_ns AS start_ns, r.end_ns AS end_ns,"
    "  r.end_ns - r.start_ns AS duration_ns"
    "  FROM region r JOIN thread t ON t.id = r.thread_id JOIN name n ON n.id = "
    "r.name_id;" TP_SCHEMA_DEVICE_VIEW
    "CREATE VIEW samples AS SELECT a.name AS agent, m.name AS metric, m.unit AS unit,"
    "  s.labels AS labels, x.t_ns AS t_ns, x.value AS value"
    "  FROM sample x JOIN series s ON s.id = x.series_id"
    "  JOIN metric m ON m.id = s.metric_id JOIN agent a ON a.id = s.agent_id;";

int tp_exec(sqlite3 *db, const char *sql) { return sqlite3_exec(db, sql, NULL, NULL, NULL); }

void tp_read_failure(char *err, size_t cap, const char *path, sqlite3 *db)
{
    int code = sqlite3_errcode(db) & 0xff;
    bool damaged = code == SQLITE_CORRUPT || code == SQLITE_NOTADB || code == SQLITE_ERROR ||
                   code == SQLITE_FORMAT || code == SQLITE_MISMATCH || code == SQLITE_RANGE;
    snprintf(err, cap, "%s: %s: %s", path, damaged ? "damaged run file" : "cannot read it",
             sqlite3_errmsg(db));
}

int tp_schema_create(sqlite3 *db)
{
    int rc = tp_exec(db, "BEGIN");
    if (rc == SQLITE_OK)
        rc = tp_exec(db, schema_sql);
    if (rc == SQLITE_OK)
        rc = tp_exec(db, summary_sql);
    if (rc == SQLITE_OK)
        rc = tp_exec(db, views_sql);
    if (rc == SQLITE_OK)
        rc = tp_exec(
            db,
            TP_SCHEMA_SUMMARY_PLOTS TP_SCHEMA_SUMMARY_SERIES_STEPS TP_SCHEMA_SUMMARY_STEPS_WINDOW);
    sqlite3_stmt *st = NULL;
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "INSERT INTO metric (id, name, unit, help) VALUES (?,?,?,?)",
                                -1, &st, NULL);
    size_t n = 0;
    const tp_metric_def *defs = tp_metric_catalog(&n);
    for (size_t i = 0; rc == SQLITE_OK && i < n; i++) {
        sqlite3_bind_int64(st, 1, (sqlite3_int64)i + 1);
        sqlite3_bind_text(st, 2, defs[i].name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, tp_unit_name(defs[i].unit), -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, defs[i].help, -1, SQLITE_STATIC);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    char pragmas[128];
    snprintf(pragmas, sizeof pragmas, "PRAGMA application_id=%d; PRAGMA user_version=%d;",
             TP_APPLICATION_ID, TP_SCHEMA_VERSION);
    if (rc == SQLITE_OK)
        rc = tp_exec(db, pragmas);
    if (rc == SQLITE_OK)
        rc = tp_exec(db, "COMMIT");
    else if (!sqlite3_get_autocommit(db)) /* out of memory may have rolled it back already */
        tp_exec(db, "ROLLBACK");
    return rc;
}
