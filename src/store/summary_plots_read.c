/* summary_plots_read.c: the stored plots and step phases (summary_tables.h). */
#include "store/summary_tables.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/schema.h"
#include "util/grow.h"

bool tp_plots_stored(const tp_run *run)
{
    return !run->raw_only && run->schema_version >= TP_SCHEMA_SUMMARY && run->settings.summarized &&
           run->settings.plots;
}

static bool plots_failed(tp_run *run, const char *what, char *err, size_t cap)
{
    snprintf(err, cap, "%s: cannot read the stored %s: %s", run->path, what,
             sqlite3_errmsg(run->db));
    return false;
}

bool tp_stored_plot_points(tp_run *run, tp_sample_row_fn fn, void *ctx, char *err, size_t cap)
{
    return tp_run_each_point(run, "SELECT series_id, t_ns, value FROM summary_plot ORDER BY rowid",
                             "stored plots", fn, ctx, err, cap);
}

/* The growth of one rank's groups as rows come (tp_grow's capacities). */
typedef struct phase_caps {
    size_t groups, values, pauses, starts, ends;
} phase_caps;

/* Appends the row st holds (the columns of tp_stored_step_phases' query
 * from column first on) as a group of ph. */
static void add_phase_group(tp_step_phases *ph, phase_caps *c, sqlite3_stmt *st, int first)
{
    ph->nsteps = (size_t)sqlite3_column_int64(st, first);
    ph->pauses = tp_grow(ph->pauses, ph->ngroups, &c->pauses, sizeof *ph->pauses);
    ph->pauses[ph->ngroups] = (unsigned)sqlite3_column_int64(st, first + 2 + TP_STEP_PHASES) &
                              ((1u << TP_PAUSE_BITS) - 1);
    ph->first_step = tp_grow(ph->first_step, ph->ngroups, &c->groups, sizeof *ph->first_step);
    ph->values = tp_grow(ph->values, ph->ngroups, &c->values, /* a group at a time */
                         TP_STEP_PHASES * sizeof *ph->values);
    ph->first_step[ph->ngroups] = (double)sqlite3_column_int64(st, first + 1);
    ph->start_s = tp_grow(ph->start_s, ph->ngroups, &c->starts, sizeof *ph->start_s);
    ph->end_s = tp_grow(ph->end_s, ph->ngroups, &c->ends, sizeof *ph->end_s);
    int t0 = first + 3 + TP_STEP_PHASES, t1 = first + 4 + TP_STEP_PHASES;
    bool known = sqlite3_column_type(st, t0) == SQLITE_INTEGER &&
                 sqlite3_column_type(st, t1) == SQLITE_INTEGER;
    ph->start_s[ph->ngroups] = known ? (double)sqlite3_column_int64(st, t0) / 1e9 : NAN;
    ph->end_s[ph->ngroups] = known ? (double)sqlite3_column_int64(st, t1) / 1e9 : NAN;
    for (int q = 0; q < TP_STEP_PHASES; q++)
        ph->values[ph->ngroups * TP_STEP_PHASES + (size_t)q] =
            sqlite3_column_double(st, first + 2 + q);
    ph->ngroups++;
}

/* A rank asked for, and where its phases go. */
typedef struct asked_rank {
    int rank;
    size_t k;
} asked_rank;

static int cmp_asked(const void *x, const void *y)
{
    const asked_rank *a = x, *b = y;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* Few ranks: a query each, by rank. Many (a fleet's heatmap): one pass over
 * the table in rank order, each row to its rank's phases (the table has no
 * index on rank: a query each would read it once a rank). */
#define STEP_PHASES_BY_QUERY 4

/* A group's place, sorted by its first step (then by its place). */
typedef struct group_place {
    double first_step;
    size_t at;
} group_place;

static int cmp_group_place(const void *x, const void *y)
{
    const group_place *a = x, *b = y;
    if (a->first_step != b->first_step)
        return a->first_step < b->first_step ? -1 : 1;
    return (a->at > b->at) - (a->at < b->at);
}

/* Puts ph's groups in first-step order where they are not (a rank stored
 * by two merged files: the scan reads them in the order stored, not
 * sorted, since sorting a fleet's groups was most of its heatmap's time);
 * false when out of memory. */
static bool groups_in_order(tp_step_phases *ph)
{
    size_t n = ph->ngroups, k = 1;
    while (k < n && ph->first_step[k - 1] <= ph->first_step[k])
        k++;
    if (k >= n)
        return true;
    group_place *order = malloc(n * sizeof *order);
    tp_step_phases was = *ph;
    tp_step_phases now = {.nsteps = ph->nsteps, .ngroups = n};
    now.first_step = malloc(n * sizeof *now.first_step);
    now.values = malloc(n * TP_STEP_PHASES * sizeof *now.values);
    now.pauses = malloc(n * sizeof *now.pauses);
    now.start_s = malloc(n * sizeof *now.start_s);
    now.end_s = malloc(n * sizeof *now.end_s);
    if (!order || !now.first_step || !now.values || !now.pauses || !now.start_s || !now.end_s) {
        free(order);
        tp_step_phases_free(&now);
        return false;
    }
    for (size_t g = 0; g < n; g++)
        order[g] = (group_place){was.first_step[g], g};
    qsort(order, n, sizeof *order, cmp_group_place);
    for (size_t g = 0; g < n; g++) {
        size_t from = order[g].at;
        now.first_step[g] = was.first_step[from];
        memcpy(now.values + g * TP_STEP_PHASES, was.values + from * TP_STEP_PHASES,
               TP_STEP_PHASES * sizeof *now.values);
        now.pauses[g] = was.pauses[from];
        now.start_s[g] = was.start_s[from];
        now.end_s[g] = was.end_s[from];
    }
    free(order);
    tp_step_phases_free(ph);
    *ph = now;
    return true;
}

bool tp_stored_step_phases(tp_run *run, const int *ranks, size_t n, tp_step_phases *out, char *err,
                           size_t cap)
{
    memset(out, 0, n * sizeof *out);
    sqlite3_stmt *st;
    bool pauses = tp_run_has_column(run, "summary_step_phase", "pauses");  /* stored before: 0 */
    bool times = tp_run_has_column(run, "summary_step_phase", "start_ns"); /* before: NULL */
    bool scan = n > STEP_PHASES_BY_QUERY;
    char *sql = sqlite3_mprintf("SELECT rank, steps, first_step, dataloader_next, to_device,"
                                " train_batch, step_lr_schedulers, from_device, reduce_metrics,"
                                " other, %s, %s FROM summary_step_phase%s ORDER BY %s",
                                pauses ? "pauses" : "0", times ? "start_ns, end_ns" : "NULL, NULL",
                                scan ? "" : " WHERE rank = ?", scan ? "rowid" : "first_step");
    int prepared = sql ? sqlite3_prepare_v2(run->db, sql, -1, &st, NULL) : SQLITE_NOMEM;
    sqlite3_free(sql);
    if (prepared != SQLITE_OK)
        return plots_failed(run, "step phases", err, cap);
    phase_caps *caps = calloc(n + 1, sizeof *caps);
    asked_rank *asked = calloc(n + 1, sizeof *asked);
    int rc = caps && asked ? SQLITE_DONE : SQLITE_NOMEM;
    for (size_t k = 0; asked && k < n; k++)
        asked[k] = (asked_rank){ranks[k], k};
    if (scan && rc == SQLITE_DONE) {
        qsort(asked, n, sizeof *asked, cmp_asked);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            asked_rank key = {sqlite3_column_int(st, 0), 0};
            const asked_rank *a = bsearch(&key, asked, n, sizeof *asked, cmp_asked);
            if (a)
                add_phase_group(&out[a->k], &caps[a->k], st, 1);
        }
    }
    for (size_t k = 0; !scan && k < n && rc == SQLITE_DONE; k++) {
        sqlite3_bind_int(st, 1, ranks[k]);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
            add_phase_group(&out[k], &caps[k], st, 1);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    free(caps);
    free(asked);
    for (size_t k = 0; scan && rc == SQLITE_DONE && k < n; k++)
        if (!groups_in_order(&out[k]))
            rc = SQLITE_NOMEM;
    if (rc != SQLITE_DONE) {
        for (size_t k = 0; k < n; k++)
            tp_step_phases_free(&out[k]);
        return plots_failed(run, "step phases", err, cap);
    }
    return true;
}
