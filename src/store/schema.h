/* schema.h: the run file's SQLite schema and its version.
 *
 * docs/run-file.md documents every table. A run file is recognised by
 * PRAGMA application_id == TP_APPLICATION_ID; its schema version is
 * PRAGMA user_version. A reader refuses files of a newer version. */
#ifndef TP_STORE_SCHEMA_H
#define TP_STORE_SCHEMA_H

#include <sqlite3.h>

#define TP_APPLICATION_ID 0x54505246 /* "TPRF" */
/* 2: timings (thread, name, region, mark); 3: summary_* tables;
 * 4: summary_timing.in_steps_s (shares of step time count only what ran in
 * steps; a v3 file's stored summary is set aside and its rows read) */
#define TP_SCHEMA_VERSION 4
/* the first schema whose stored summary readers use */
#define TP_SCHEMA_SUMMARY 4

/* Creates every table, view and the metric catalogue in an empty database,
 * and stamps application_id and user_version. Returns an SQLite code. */
int tp_schema_create(sqlite3 *db);

/* Runs SQL that returns no rows; returns an SQLite code. */
int tp_exec(sqlite3 *db, const char *sql);

#endif
