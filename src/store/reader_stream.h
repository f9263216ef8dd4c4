/* reader_stream.h: reading a run file's large tables row by row.
 *
 * For exports: every function streams rows to a callback in the order SQLite
 * keeps them, so memory stays flat however large the run is. */
#ifndef TP_STORE_READER_STREAM_H
#define TP_STORE_READER_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/reader.h"

typedef struct tp_run_thread {
    int64_t id;
    int64_t agent_id;
    int pid, tid, rank, local_rank, world_size;
    char name[16];
    bool cuda_visible_set; /* its process's CUDA_VISIBLE_DEVICES (table thread_cuda) */
    char cuda_visible[512];
    char device_uuid[96]; /* the GPU its process drove (table thread_device), "" unknown */
} tp_run_thread;

/* The instrumented threads (none for schema 1); the caller frees *threads. */
bool tp_run_threads(tp_run *run, tp_run_thread **threads, size_t *n, char *err, size_t cap);

typedef void (*tp_region_row_fn)(void *ctx, int64_t thread, const char *name, int depth,
                                 int64_t start_ns, int64_t end_ns);
bool tp_run_each_region(tp_run *run, tp_region_row_fn fn, void *ctx, char *err, size_t cap);

/* The outermost (depth 0) regions of every thread, in the order SQLite keeps
 * them: one pass over the table. */
bool tp_run_each_outer_region(tp_run *run, tp_region_row_fn fn, void *ctx, char *err, size_t cap);

/* The regions called one of names (at most 16), in (thread, start) order,
 * each given with its entry of names: one pass over the table, none when
 * the run has none of the names. */
bool tp_run_each_named_region(tp_run *run, const char *const *names, size_t nnames,
                              tp_region_row_fn fn, void *ctx, char *err, size_t cap);

/* Every region as (thread, name id, depth, start, end), in rowid order:
 * each thread's in the order they closed (a region after those inside it),
 * a merge's inputs one after the other. */
typedef void (*tp_region_id_fn)(void *ctx, int64_t thread, int64_t name_id, int depth,
                                int64_t start_ns, int64_t end_ns);
bool tp_run_each_region_id(tp_run *run, tp_region_id_fn fn, void *ctx, char *err, size_t cap);

/* Every name of the file's name table (regions' and device times'). */
typedef void (*tp_name_fn)(void *ctx, int64_t id, const char *text);
bool tp_run_each_name(tp_run *run, tp_name_fn fn, void *ctx, char *err, size_t cap);

/* Device (CUDA event) times in (thread, host start) order: each the region's
 * host start and its span on the device. None before schema 5. */
typedef void (*tp_device_row_fn)(void *ctx, int64_t thread, const char *name, int64_t start_ns,
                                 int64_t device_ns);
bool tp_run_each_device_time(tp_run *run, tp_device_row_fn fn, void *ctx, char *err, size_t cap);

/* Samples series by series, each in time order. */
typedef void (*tp_sample_row_fn)(void *ctx, const tp_run_series *series, int64_t t_ns,
                                 double value);
bool tp_run_each_sample(tp_run *run, tp_sample_row_fn fn, void *ctx, char *err, size_t cap);

/* The same over any query whose rows are (series_id, t_ns, value), such as a
 * stored summary's points; what names them in errors. */
bool tp_run_each_point(tp_run *run, const char *sql, const char *what, tp_sample_row_fn fn,
                       void *ctx, char *err, size_t cap);

#endif
