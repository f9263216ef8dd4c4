/* reader_live.c: recent steps and phases of a live recording. */
#include "store/reader_live.h"
#include "store/mark_kind.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "store/schema.h"

/* The bucket of second `sec`, cleared if it last held an older second. */
static int bucket(tp_live_reader *r, int64_t sec)
{
    int b = (int)(sec % TP_LIVE_BUCKETS);
    if (r->bucket_sec[b] != sec) {
        r->bucket_sec[b] = sec;
        r->steps[b] = r->samples[b] = r->batches[b] = 0;
        for (int n = 0; n < r->nnames; n++) {
            r->busy[n][b] = r->device[n][b] = 0;
            r->device_seen[n][b] = false;
        }
    }
    return b;
}

static int name_slot(tp_live_reader *r, tp_run *run, int64_t id)
{
    for (int n = 0; n < r->nnames; n++)
        if (r->name_ids[n] == id)
            return n;
    if (r->nnames == TP_LIVE_NAMES)
        return -1;
    sqlite3_stmt *st;
    int n = r->nnames;
    snprintf(r->names[n], sizeof r->names[n], "?");
    if (sqlite3_prepare_v2(run->db, "SELECT text FROM name WHERE id = ?", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_int64(st, 1, id);
        if (sqlite3_step(st) == SQLITE_ROW)
            snprintf(r->names[n], sizeof r->names[n], "%s", sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    r->name_ids[n] = id;
    memset(r->busy[n], 0, sizeof r->busy[n]);
    memset(r->device[n], 0, sizeof r->device[n]);
    memset(r->device_seen[n], 0, sizeof r->device_seen[n]);
    return r->nnames++;
}

static void read_new_rows(tp_live_reader *r, tp_run *run, int64_t oldest_sec)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db,
                           "SELECT rowid, name_id, start_ns, end_ns FROM region WHERE rowid > ?"
                           " ORDER BY rowid",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, r->region_rowid);
        while (sqlite3_step(st) == SQLITE_ROW) {
            r->region_rowid = sqlite3_column_int64(st, 0);
            int64_t end = sqlite3_column_int64(st, 3);
            if (end / 1000000000 < oldest_sec)
                continue;
            int n = name_slot(r, run, sqlite3_column_int64(st, 1));
            if (n >= 0)
                r->busy[n][bucket(r, end / 1000000000)] +=
                    (double)(end - sqlite3_column_int64(st, 2)) / 1e9;
        }
        sqlite3_finalize(st);
    }
    if (run->schema_version >= TP_SCHEMA_DEVICE &&
        sqlite3_prepare_v2(run->db,
                           "SELECT rowid, name_id, start_ns, device_ns FROM device_time"
                           " WHERE rowid > ? ORDER BY rowid",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, r->device_rowid);
        while (sqlite3_step(st) == SQLITE_ROW) {
            r->device_rowid = sqlite3_column_int64(st, 0);
            int64_t sec = sqlite3_column_int64(st, 2) / 1000000000;
            if (sec < oldest_sec)
                continue;
            int n = name_slot(r, run, sqlite3_column_int64(st, 1));
            if (n >= 0) {
                int b = bucket(r, sec);
                r->device[n][b] += (double)sqlite3_column_int64(st, 3) / 1e9;
                r->device_seen[n][b] = true;
            }
        }
        sqlite3_finalize(st);
    }
    if (sqlite3_prepare_v2(
            run->db, "SELECT rowid, kind, t_ns, value FROM mark WHERE rowid > ? ORDER BY rowid", -1,
            &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, r->mark_rowid);
        while (sqlite3_step(st) == SQLITE_ROW) {
            r->mark_rowid = sqlite3_column_int64(st, 0);
            int kind = tp_mark_kind_column(st, 1);
            int64_t sec = sqlite3_column_int64(st, 2) / 1000000000;
            if (sec < oldest_sec)
                continue;
            int b = bucket(r, sec);
            if (kind == TP_MARK_STEP)
                r->steps[b] += 1;
            else if (kind == TP_MARK_SAMPLES) {
                r->samples[b] += sqlite3_column_double(st, 3);
                r->batches[b] += 1;
            }
        }
        sqlite3_finalize(st);
    }
}

static int cmp_phase(const void *a, const void *b)
{
    double x = ((const tp_live_phase *)a)->share, y = ((const tp_live_phase *)b)->share;
    return (x < y) - (x > y);
}

bool tp_live_update(tp_live_reader *r, tp_run *run, tp_live *out)
{
    memset(out, 0, sizeof *out);
    const char *start = tp_run_meta_get(run, "start_mono_ns");
    if (!start || run->schema_version < 2)
        return false;
    int64_t now = (int64_t)(tp_clock_mono_ns() - strtoull(start, NULL, 10));
    int64_t now_sec = now / 1000000000;
    /* the window: the last TP_LIVE_WINDOW whole seconds before this one */
    int64_t oldest = now_sec - TP_LIVE_WINDOW;
    read_new_rows(r, run, oldest);
    out->elapsed_s = (double)now / 1e9;
    double seconds, batches = 0;
    tp_live_phase all[TP_LIVE_NAMES];
    for (int n = 0; n < r->nnames; n++) {
        snprintf(all[n].name, sizeof all[n].name, "%s", r->names[n]);
        all[n].share = all[n].device_share = 0;
        all[n].has_device = false;
    }
    for (int b = 0; b < TP_LIVE_BUCKETS; b++) {
        if (r->bucket_sec[b] < oldest || r->bucket_sec[b] >= now_sec)
            continue;
        out->steps_per_s += r->steps[b];
        out->samples_per_s += r->samples[b];
        batches += r->batches[b];
        for (int n = 0; n < r->nnames; n++) {
            all[n].share += r->busy[n][b];
            all[n].device_share += r->device[n][b];
            all[n].has_device |= r->device_seen[n][b];
        }
    }
    seconds = now_sec < TP_LIVE_WINDOW ? (double)now_sec : TP_LIVE_WINDOW;
    if (seconds <= 0)
        return true;
    out->batches_per_step = out->steps_per_s > 0 ? batches / out->steps_per_s : 0;
    out->steps_per_s /= seconds;
    out->samples_per_s /= seconds;
    for (int n = 0; n < r->nnames; n++) {
        all[n].share /= seconds;
        all[n].device_share /= seconds;
    }
    qsort(all, (size_t)r->nnames, sizeof *all, cmp_phase);
    for (int n = 0; n < r->nnames && out->nphases < TP_LIVE_PHASES; n++)
        if (all[n].share > 0 || all[n].has_device)
            out->phases[out->nphases++] = all[n];
    return true;
}
