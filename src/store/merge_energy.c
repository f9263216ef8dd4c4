/* merge_energy.c: see merge_energy.h. */
#include "store/merge_energy.h"

#include "store/schema.h"
#include "trainprof.h"

#include <stdio.h>

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
        "  CROSS JOIN src.sample x ON x.series_id = e.id AND x.t_ns IN (SELECT t_ns"
        "   FROM src.sample WHERE series_id = e.id AND t_ns <= b.t_ns - 1000"
        "   ORDER BY t_ns DESC LIMIT 2);"
        "INSERT OR IGNORE INTO main.sample (series_id, t_ns, value)"
        " SELECT e.id + %lld, x.t_ns + %lld, x.value FROM energy e CROSS JOIN bound b"
        "  CROSS JOIN src.sample x ON x.series_id = e.id AND x.t_ns IN (SELECT t_ns"
        "   FROM src.sample WHERE series_id = e.id AND t_ns > b.t_ns + 1000"
        "   ORDER BY t_ns LIMIT 2);"
        "DROP TABLE bound;"
        "DROP TABLE energy;",
        dt, off, dt, off, dt, off, dt);
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

int tp_merge_thin_step_groups(sqlite3 *db, size_t max)
{
    if (max == 0)
        return SQLITE_OK;
    const char *phases[] = {TP_PHASE_DATALOADER_NEXT,
                            TP_PHASE_TO_DEVICE,
                            TP_PHASE_TRAIN_BATCH,
                            TP_PHASE_STEP_LR_SCHEDULERS,
                            TP_PHASE_FROM_DEVICE,
                            TP_PHASE_REDUCE_METRICS,
                            "other"}; /* the table's columns */
    char means[1400] = "";
    size_t len = 0;
    for (size_t q = 0; q < sizeof phases / sizeof *phases; q++)
        len += (size_t)snprintf(means + len, sizeof means - len,
                                "CASE WHEN sum(w) > 0 THEN sum(%s * w) / sum(w) ELSE avg(%s) END, ",
                                phases[q], phases[q]);
    char *sql = sqlite3_mprintf(
        "CREATE TEMP TABLE lowest_rank AS SELECT min(rank) AS rank FROM main.summary_step_phase;"
        "CREATE TEMP TABLE numbered AS SELECT *,"
        " lead(first_step, 1, steps) OVER (PARTITION BY rank ORDER BY first_step, rowid)"
        "  - first_step AS w,"
        " row_number() OVER (PARTITION BY rank ORDER BY first_step, rowid) - 1 AS i,"
        " count(*) OVER (PARTITION BY rank) AS c"
        " FROM main.summary_step_phase WHERE rank <> (SELECT rank FROM lowest_rank);"
        "DELETE FROM main.summary_step_phase WHERE rank <> (SELECT rank FROM lowest_rank);"
        "INSERT INTO main.summary_step_phase (rank, steps, first_step, dataloader_next,"
        " to_device, train_batch, step_lr_schedulers, from_device, reduce_metrics, other, pauses,"
        " start_ns, end_ns)"
        " SELECT rank, max(steps), min(first_step), %s"
        " max(pauses & 1) | max(pauses & 2) | max(pauses & 4) | max(pauses & 8),"
        " min(start_ns), max(end_ns) FROM numbered"
        " GROUP BY rank, i / ((c + %lld - 1) / %lld) ORDER BY rank, min(first_step);"
        "DROP TABLE numbered; DROP TABLE lowest_rank;",
        means, (long long)max, (long long)max);
    int rc = sql ? tp_exec(db, sql) : SQLITE_NOMEM;
    sqlite3_free(sql);
    return rc;
}
