/* merge_energy.c: see merge_energy.h. */
#include "store/merge_energy.h"

#include "store/schema.h"

int tp_merge_epoch_energy(sqlite3 *db, const char *path, long long off, long long dt)
{
    char *sql = sqlite3_mprintf("ATTACH %Q AS src", path);
    int rc = tp_exec(db, sql);
    sqlite3_free(sql);
    if (rc != SQLITE_OK)
        return rc;
    sql = sqlite3_mprintf(
        "CREATE TEMP TABLE bound (t_ns INTEGER PRIMARY KEY);"
        "INSERT OR IGNORE INTO bound SELECT t_ns - %lld FROM epoch_bound;"
        "CREATE TEMP TABLE energy (id INTEGER PRIMARY KEY);"
        "INSERT INTO energy SELECT s.id FROM src.series s JOIN src.metric m ON m.id = s.metric_id"
        " WHERE m.name IN ('gpu_energy_joules', 'cpu_energy_joules');"
        "INSERT OR IGNORE INTO main.sample (series_id, t_ns, value)"
        " SELECT e.id + %lld, x.t_ns + %lld, x.value FROM energy e CROSS JOIN bound b"
        "  CROSS JOIN src.sample x ON x.series_id = e.id"
        "  AND x.t_ns > b.t_ns - 1000 AND x.t_ns <= b.t_ns + 1000;"
        "INSERT OR IGNORE INTO main.sample (series_id, t_ns, value)"
        " SELECT e.id + %lld, x.t_ns + %lld, x.value FROM energy e CROSS JOIN bound b"
        "  CROSS JOIN src.sample x ON x.series_id = e.id AND x.t_ns = (SELECT max(t_ns)"
        "   FROM src.sample WHERE series_id = e.id AND t_ns <= b.t_ns - 1000);"
        "DROP TABLE bound;"
        "DROP TABLE energy;",
        dt, off, dt, off, dt);
    rc = sql ? tp_exec(db, sql) : SQLITE_NOMEM;
    sqlite3_free(sql);
    int rc2 = tp_exec(db, "DETACH src");
    return rc != SQLITE_OK ? rc : rc2;
}

int tp_merge_epoch_bounds(sqlite3 *db)
{
    return tp_exec(
        db,
        "CREATE TEMP TABLE epoch_bound (t_ns INTEGER PRIMARY KEY);"
        "CREATE TEMP TABLE lowest_epoch AS SELECT epoch FROM main.summary_epoch"
        " WHERE rank = (SELECT min(rank) FROM main.summary_epoch);"
        "CREATE TEMP TABLE measured_epoch AS SELECT start_ns, duration_s FROM main.summary_epoch"
        " WHERE rank = (SELECT min(rank) FROM main.summary_epoch)"
        " OR epoch NOT IN (SELECT epoch FROM lowest_epoch);"
        "INSERT OR IGNORE INTO epoch_bound SELECT start_ns FROM measured_epoch;"
        "INSERT OR IGNORE INTO epoch_bound"
        " SELECT start_ns + CAST(round(duration_s * 1e9) AS INTEGER) FROM measured_epoch;"
        "DROP TABLE lowest_epoch; DROP TABLE measured_epoch;");
}
