/* fuzz_run_file.c: libFuzzer target for everything that reads a run file.
 *
 * A run file is an SQLite database, so mutating its bytes mostly makes a
 * file SQLite itself refuses. This target instead starts from a real
 * recording (FUZZ_BASE_RUN) and reads the input as edits of its rows, as a
 * crafted or damaged file would hold them: any cell of any table set to an
 * extreme integer, a non-finite real, arbitrary bytes as text, NULL; rows
 * deleted or repeated. Then every reader runs on the result: the summary
 * (report), report text and JSON, html, compare against the base (text
 * and JSON), the Chrome trace and CSV. A crash,
 * a sanitizer report or a leak is a finding; refusals are not.
 *
 * The Makefile fuzzes two bases: a C program's run (regions, steps,
 * stacks) and a PyTorch training's with a capture window (its operators,
 * strings and step marks: the op readers, tests/fuzz/ops_train.py).
 *
 * Each edit is 4 bytes (table, row, column, kind) and a payload: kind 0 an
 * int64 (8 bytes), 1 a double (8 bytes), 2 text (a length byte, then that
 * many bytes), 3 NULL, 4 INT64_MIN, 5 INT64_MAX, 6 the row deleted, 7 the
 * row repeated. */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/summary.h"
#include "analyze/verdicts.h"
#include "render/export.h"
#include "analyze/compare_job.h"
#include "render/compare.h"
#include "render/html.h"
#include "render/report.h"
#include "store/reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const tables[] = {
    "meta",
    "agent",
    "metric",
    "series",
    "sample",
    "unavailable",
    "gpu",
    "thread",
    "name",
    "region",
    "mark",
    "device_time",
    "thread_cuda",
    "summary_series",
    "summary_timing",
    "summary_step",
    "summary_epoch",
    "summary_rank",
    "summary_plot",
    "summary_step_phase",
    "summary_series_steps",
    "summary_steps_window",
    "summary_stall",
    "summary_stall_thread",
    "op_window", /* capture windows: a base run that has one (tests/fuzz/ops_train.py) */
    "op_event",
    "op_string",
};
#define NTABLES (sizeof tables / sizeof *tables)

static char *base;
static size_t base_len;
static char path[64];

static void load_base(void)
{
    const char *from = getenv("FUZZ_BASE_RUN");
    FILE *f = from ? fopen(from, "rb") : NULL;
    if (!f) {
        fprintf(stderr, "fuzz_run_file: set FUZZ_BASE_RUN to a run file\n");
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    base_len = (size_t)ftell(f);
    rewind(f);
    base = malloc(base_len);
    if (!base || fread(base, 1, base_len, f) != base_len)
        exit(2);
    fclose(f);
    snprintf(path, sizeof path, "/dev/shm/tp-fuzz-%d.db", (int)getpid());
}

/* The name of column col (modulo their count) of table, into out. */
static bool column_of(sqlite3 *db, const char *table, unsigned col, char *out, size_t cap)
{
    char *sql = sqlite3_mprintf("SELECT name FROM pragma_table_info(%Q)", table);
    sqlite3_stmt *st;
    int n = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW)
            n++;
        sqlite3_reset(st);
        for (int i = 0; n && sqlite3_step(st) == SQLITE_ROW; i++)
            if ((unsigned)i == col % (unsigned)n) {
                snprintf(out, cap, "%s", (const char *)sqlite3_column_text(st, 0));
                break;
            }
        sqlite3_finalize(st);
    }
    sqlite3_free(sql);
    return n > 0;
}

/* Applies the edits in data to the run file at path. */
static void edit(const uint8_t *data, size_t size)
{
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK) {
        sqlite3_close(db);
        return;
    }
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    for (size_t at = 0; at + 4 <= size;) {
        const char *table = tables[data[at] % NTABLES];
        unsigned row = data[at + 1], col = data[at + 2], kind = data[at + 3] % 8;
        at += 4;
        char column[64] = "";
        if (!column_of(db, table, col, column, sizeof column))
            continue;
        char *target = sqlite3_mprintf("(SELECT rowid FROM \"%w\" LIMIT 1 OFFSET %u %% "
                                       "max(1, (SELECT count(*) FROM \"%w\")))",
                                       table, row, table);
        char *sql =
            kind == 6 ? sqlite3_mprintf("DELETE FROM \"%w\" WHERE rowid = %s", table, target)
            : kind == 7
                ? sqlite3_mprintf("INSERT INTO \"%w\" SELECT * FROM \"%w\" WHERE rowid = %s", table,
                                  table, target)
                : sqlite3_mprintf("UPDATE \"%w\" SET \"%w\" = ?1 WHERE rowid = %s", table, column,
                                  target);
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
            int64_t i64 = 0;
            double d = 0;
            if (kind == 0 && at + 8 <= size) {
                memcpy(&i64, data + at, 8);
                at += 8;
                sqlite3_bind_int64(st, 1, i64);
            } else if (kind == 1 && at + 8 <= size) {
                memcpy(&d, data + at, 8);
                at += 8;
                sqlite3_bind_double(st, 1, d);
            } else if (kind == 2 && at < size) {
                size_t len = data[at++];
                len = at + len <= size ? len : size - at;
                sqlite3_bind_text(st, 1, (const char *)data + at, (int)len, SQLITE_TRANSIENT);
                at += len;
            } else if (kind == 4 || kind == 5) {
                sqlite3_bind_int64(st, 1, kind == 4 ? INT64_MIN : INT64_MAX);
            } else {
                sqlite3_bind_null(st, 1);
            }
            sqlite3_step(st);
        }
        sqlite3_finalize(st);
        sqlite3_free(sql);
        sqlite3_free(target);
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(db);
}

/* compare, the base as A and the edited file as B, as text and JSON. */
static void compare_with_base(FILE *null, char *err, size_t cap)
{
    char *a[] = {(char *)getenv("FUZZ_BASE_RUN")}, *b[] = {path};
    tp_compare_job job;
    if (tp_compare_job_run(&job, "fuzz", a, 1, b, 1, err, cap)) {
        free(tp_compare_job_text(&job));
        json_writer w;
        json_init(&w, null);
        json_object_begin(&w);
        tp_compare_json(&w, &job.c);
        json_object_end(&w);
    }
    tp_compare_job_free(&job);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!base)
        load_base();
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    fwrite(base, 1, base_len, f);
    fclose(f);
    edit(data, size);
    FILE *null = fopen("/dev/null", "w");
    char err[1024];
    tp_summary s;
    /* the stacks and the run's course (stalls, deaths, regimes) as report
     * adds them; where they can't be read, report stops */
    if (tp_summary_load(path, TP_PARTS_ALL, &s, err, sizeof err)) {
        tp_verdicts v;
        tp_verdicts_build(&s, &v);
        tp_report_json(null, &s, &v);
        tp_report_text(null, &s, &v, true, false);
        tp_page_facts page;
        if (tp_page_facts_build(&s, false, &page, err, sizeof err))
            tp_html_write(null, &s, &v, &page, false, err, sizeof err);
        tp_page_facts_free(&page);
        tp_verdicts_free(&v);
        tp_summary_close(&s);
    }
    compare_with_base(null, err, sizeof err);
    tp_run *run = tp_run_open(path, err, sizeof err);
    if (run) {
        tp_export_chrome(null, run, NULL, err, sizeof err);
        tp_export_csv(null, run, NULL, err, sizeof err);
        tp_run_close(run);
    }
    fclose(null);
    unlink(path);
    return 0;
}
