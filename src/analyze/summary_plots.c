/* summary_plots.c: computing, writing and reading the stored plots. */
#include "analyze/summary_plots.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/downsample.h"
#include "store/schema.h"
#include "util/grow.h"

/* ---- computing ----------------------------------------------------------- */

bool tp_summary_plots_init(const tp_run *run, tp_summary_plots *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    out->x = malloc(2 * TP_PLOT_BUCKETS * sizeof *out->x);
    out->y = malloc(2 * TP_PLOT_BUCKETS * sizeof *out->y);
    bool ok = out->x && out->y &&
              tp_downsample_init(&out->ds, TP_PLOT_BUCKETS, (double)run->last_t_ns / 1e9);
    if (!ok)
        snprintf(err, cap, "%s: out of memory for the plots", run->path);
    return ok;
}

/* A series' points as html draws them: its samples in the buckets, each
 * bucket's lowest and highest kept. */
void tp_summary_plots_series(void *plots, const tp_run_series *series, const int64_t *t_ns,
                             double *values, size_t n)
{
    tp_summary_plots *o = plots;
    for (size_t i = 0; i < n; i++)
        tp_downsample_add(&o->ds, (double)t_ns[i] / 1e9, values[i]);
    size_t m = tp_downsample_take(&o->ds, o->x, o->y);
    for (size_t i = 0; i < m; i++) {
        o->points = tp_grow(o->points, o->npoints, &o->cap_points, sizeof *o->points);
        /* x is the sample's own t_ns / 1e9: rounding gives t_ns back */
        o->points[o->npoints++] = (tp_plot_point){series->id, llround(o->x[i] * 1e9), o->y[i]};
    }
}

bool tp_summary_plots_finish(tp_run *run, const int *ranks, const size_t *skip, size_t nranks,
                             tp_summary_plots *out, char *err, size_t cap)
{
    out->ranks = malloc((nranks ? nranks : 1) * sizeof *out->ranks);
    out->phases = calloc(nranks ? nranks : 1, sizeof *out->phases);
    if (!out->ranks || !out->phases) {
        snprintf(err, cap, "%s: out of memory for the plots", run->path);
        return false;
    }
    memcpy(out->ranks, ranks, nranks * sizeof *ranks);
    out->nranks = nranks;
    return tp_step_phases_build(run, ranks, skip, nranks, TP_STEP_GROUPS, out->phases, err, cap);
}

void tp_summary_plots_free(tp_summary_plots *p)
{
    for (size_t k = 0; p->phases && k < p->nranks; k++)
        tp_step_phases_free(&p->phases[k]);
    free(p->points);
    free(p->ranks);
    free(p->phases);
    free(p->x);
    free(p->y);
    tp_downsample_free(&p->ds);
    memset(p, 0, sizeof *p);
}

/* ---- writing ------------------------------------------------------------- */

int tp_summary_plots_write(void *handle, const tp_summary_plots *p)
{
    sqlite3 *db = handle;
    int rc = tp_exec(db, TP_SCHEMA_SUMMARY_PLOTS "DELETE FROM summary_plot;"
                                                 "DELETE FROM summary_step_phase;");
    sqlite3_stmt *st = NULL;
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "INSERT INTO summary_plot VALUES (?, ?, ?)", -1, &st, NULL);
    for (size_t i = 0; rc == SQLITE_OK && i < p->npoints; i++) {
        sqlite3_bind_int64(st, 1, p->points[i].series_id);
        sqlite3_bind_int64(st, 2, p->points[i].t_ns);
        sqlite3_bind_double(st, 3, p->points[i].value);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(
            db, "INSERT INTO summary_step_phase VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", -1, &st,
            NULL);
    for (size_t k = 0; rc == SQLITE_OK && k < p->nranks; k++) {
        const tp_step_phases *ph = &p->phases[k];
        for (size_t g = 0; rc == SQLITE_OK && g < ph->ngroups; g++) {
            sqlite3_bind_int(st, 1, p->ranks[k]);
            sqlite3_bind_int64(st, 2, (sqlite3_int64)ph->nsteps);
            sqlite3_bind_int64(st, 3, (sqlite3_int64)ph->first_step[g]);
            for (int q = 0; q < TP_STEP_PHASES; q++)
                sqlite3_bind_double(st, 4 + q, ph->values[g * TP_STEP_PHASES + (size_t)q]);
            rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
            sqlite3_reset(st);
        }
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_OK)
        rc = tp_exec(db, "INSERT OR REPLACE INTO meta VALUES ('plots', '1');");
    return rc;
}

/* ---- reading ------------------------------------------------------------- */

bool tp_plots_stored(const tp_run *run)
{
    const char *summarized = tp_run_meta_get(run, "summarized");
    const char *plots = tp_run_meta_get(run, "plots");
    return !run->raw_only && run->schema_version >= TP_SCHEMA_SUMMARY && summarized &&
           strcmp(summarized, "1") == 0 && plots && strcmp(plots, "1") == 0;
}

static bool failed(tp_run *run, const char *what, char *err, size_t cap)
{
    snprintf(err, cap, "%s: cannot read the stored %s: %s", run->path, what,
             sqlite3_errmsg(run->db));
    return false;
}

bool tp_stored_plot_points(tp_run *run, tp_sample_row_fn fn, void *ctx, char *err, size_t cap)
{
    return tp_run_each_point(run,
                             "SELECT series_id, t_ns, value FROM summary_plot"
                             " ORDER BY series_id, t_ns",
                             "stored plots", fn, ctx, err, cap);
}

bool tp_stored_step_phases(tp_run *run, const int *ranks, size_t n, tp_step_phases *out, char *err,
                           size_t cap)
{
    memset(out, 0, n * sizeof *out);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(run->db,
                           "SELECT steps, first_step, dataloader_next, to_device, train_batch,"
                           " step_lr_schedulers, from_device, reduce_metrics, other"
                           " FROM summary_step_phase WHERE rank = ? ORDER BY first_step",
                           -1, &st, NULL) != SQLITE_OK)
        return failed(run, "step phases", err, cap);
    int rc = SQLITE_DONE;
    for (size_t k = 0; k < n && rc == SQLITE_DONE; k++) {
        tp_step_phases *ph = &out[k];
        size_t gcap = 0, vcap = 0;
        sqlite3_bind_int(st, 1, ranks[k]);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            ph->nsteps = (size_t)sqlite3_column_int64(st, 0);
            ph->first_step = tp_grow(ph->first_step, ph->ngroups, &gcap, sizeof *ph->first_step);
            ph->values = tp_grow(ph->values, ph->ngroups, &vcap, /* a group at a time */
                                 TP_STEP_PHASES * sizeof *ph->values);
            ph->first_step[ph->ngroups] = (double)sqlite3_column_int64(st, 1);
            for (int q = 0; q < TP_STEP_PHASES; q++)
                ph->values[ph->ngroups * TP_STEP_PHASES + (size_t)q] =
                    sqlite3_column_double(st, 2 + q);
            ph->ngroups++;
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        for (size_t k = 0; k < n; k++)
            tp_step_phases_free(&out[k]);
        return failed(run, "step phases", err, cap);
    }
    return true;
}
