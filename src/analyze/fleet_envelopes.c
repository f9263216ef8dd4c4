/* fleet_envelopes.c: see fleet_envelopes.h. */
#include "analyze/fleet_envelopes.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/metric_catalog.h"
#include "store/envelopes.h"
#include "store/reader_stream.h"
#include "store/summary_tables.h"
#include "util/grow.h"
#include "core/run_keys.h"

#define PER_CORE_PLOT_MAX 16

tp_device_class tp_device_class_of(const char *metric)
{
    if (strncmp(metric, "gpu_", 4) == 0)
        return TP_DEVICE_GPU;
    if (strcmp(metric, TP_METRIC_DISK_BUSY_PERCENT) == 0)
        return TP_DEVICE_DISK;
    if (strcmp(metric, TP_METRIC_NET_LINK_SPEED_BYTES_PER_S) == 0)
        return TP_DEVICE_LINK;
    return TP_DEVICE_NONE;
}

bool tp_series_across_agents(const tp_run_series *series)
{
    return strcmp(series->labels, "{}") == 0 ||
           tp_device_class_of(series->metric) != TP_DEVICE_NONE;
}

bool tp_series_plotted(const tp_run_series *series, size_t cores_of_agent)
{
    if (strcmp(series->metric, TP_METRIC_CPU_UTIL_PERCENT) != 0 ||
        strcmp(series->labels, "{}") == 0)
        return true;
    return cores_of_agent <= PER_CORE_PLOT_MAX;
}

/* Each catalogue metric's rows of bucket means, as series come. */
typedef struct metric_rows {
    double *means; /* [row][bucket] */
    size_t rows, cap;
} metric_rows;

typedef struct envelope_acc {
    const tp_metric_def *defs;
    size_t ndefs;
    metric_rows *per; /* per catalogue metric */
    double span;
    bool ok;
} envelope_acc;

static bool acc_init(envelope_acc *a, double span)
{
    memset(a, 0, sizeof *a);
    a->defs = tp_metric_catalog(&a->ndefs);
    a->per = calloc(a->ndefs + 1, sizeof *a->per);
    a->span = span;
    a->ok = a->per != NULL;
    return a->ok;
}

static size_t def_index(const envelope_acc *a, const char *metric)
{
    for (size_t m = 0; m < a->ndefs; m++)
        if (strcmp(a->defs[m].name, metric) == 0)
            return m;
    return a->ndefs;
}

/* Adds a line (n points at x, y) as a row of metric m. */
static void acc_add_line(envelope_acc *a, size_t m, const double *x, const double *y, size_t n)
{
    metric_rows *r = &a->per[m];
    if (!a->ok || m >= a->ndefs || !n)
        return;
    double *grown = tp_grow_try(r->means, r->rows, &r->cap, TP_PLOT_BUCKETS * sizeof *r->means);
    if (!grown) {
        a->ok = false;
        return;
    }
    r->means = grown;
    tp_envelope_row(x, y, n, TP_PLOT_BUCKETS, a->span, r->means + r->rows * TP_PLOT_BUCKETS);
    r->rows++;
}

static bool acc_take(envelope_acc *a, tp_envelopes *out)
{
    memset(out, 0, sizeof *out);
    out->v = calloc(a->ndefs + 1, sizeof *out->v);
    bool ok = a->ok && out->v;
    for (size_t m = 0; ok && m < a->ndefs; m++) {
        metric_rows *r = &a->per[m];
        if (!r->rows)
            continue;
        tp_metric_envelope *e = &out->v[out->n];
        e->metric = a->defs[m].name;
        e->lines = r->rows;
        ok = tp_envelope_from_rows(r->means, r->rows, TP_PLOT_BUCKETS, a->span, &e->e);
        out->n += ok && e->e.n;
    }
    for (size_t m = 0; a->per && m < a->ndefs; m++)
        free(a->per[m].means);
    free(a->per);
    a->per = NULL;
    if (!ok)
        tp_envelopes_free(out);
    return ok;
}

bool tp_envelopes_from_lines(const tp_run_series *const *series, const double *const *x,
                             const double *const *y, const size_t *n, size_t nlines, double span,
                             tp_envelopes *out)
{
    envelope_acc a;
    acc_init(&a, span);
    for (size_t i = 0; a.ok && i < nlines; i++)
        if (tp_series_across_agents(series[i]))
            acc_add_line(&a, def_index(&a, series[i]->metric), x[i], y[i], n[i]);
    return acc_take(&a, out);
}

/* One node file's series read one at a time: the current series' line. */
typedef struct file_lines {
    envelope_acc *acc;
    const tp_run_series *series; /* the one being read, NULL before the first */
    size_t metric;               /* its catalogue index; ndefs: not drawn */
    const bool *wanted;          /* per run->series index */
    const tp_run_series *first;
    int64_t shift_ns;
    tp_downsampler ds;
    double *x, *y;
} file_lines;

static void end_series(file_lines *f)
{
    if (f->series && f->metric < f->acc->ndefs) {
        size_t n = tp_downsample_take(&f->ds, f->x, f->y);
        acc_add_line(f->acc, f->metric, f->x, f->y, n);
    }
    f->series = NULL;
}

static void file_point(void *ctx, const tp_run_series *series, int64_t t_ns, double value)
{
    file_lines *f = ctx;
    if (series != f->series) {
        end_series(f);
        f->series = series;
        f->metric =
            f->wanted[series - f->first] ? def_index(f->acc, series->metric) : f->acc->ndefs;
    }
    if (f->metric < f->acc->ndefs)
        tp_downsample_add(&f->ds, (double)(t_ns + f->shift_ns) / 1e9, value);
}

static int64_t meta_int(const tp_run *run, const char *key)
{
    const char *v = tp_run_meta_get(run, key);
    return v ? strtoll(v, NULL, 10) : 0;
}

/* Adds the lines of the node file at path, shifted by its start's distance
 * from earliest_wall_ns. */
static bool add_file(envelope_acc *a, const char *path, int64_t earliest_wall_ns, char *err,
                     size_t cap)
{
    tp_run *run = tp_run_open(path, err, cap);
    if (!run)
        return false;
    bool *wanted = calloc(run->nseries + 1, sizeof *wanted);
    file_lines f = {.acc = a,
                    .metric = a->ndefs,
                    .wanted = wanted,
                    .first = run->series,
                    .shift_ns = meta_int(run, TP_META_START_WALL_NS) - earliest_wall_ns};
    f.x = malloc(2 * TP_PLOT_BUCKETS * sizeof *f.x);
    f.y = malloc(2 * TP_PLOT_BUCKETS * sizeof *f.y);
    bool ok = wanted && f.x && f.y && tp_downsample_init(&f.ds, TP_PLOT_BUCKETS, a->span);
    size_t cores = 0; /* a node file is one agent */
    for (size_t i = 0; i < run->nseries; i++)
        cores += strcmp(run->series[i].metric, TP_METRIC_CPU_UTIL_PERCENT) == 0 &&
                 strcmp(run->series[i].labels, "{}") != 0;
    for (size_t i = 0; ok && i < run->nseries; i++)
        wanted[i] =
            tp_series_across_agents(&run->series[i]) && tp_series_plotted(&run->series[i], cores);
    if (!ok)
        snprintf(err, cap, "%s: out of memory for the envelopes", path);
    else
        ok = tp_plots_stored(run) ? tp_stored_plot_points(run, file_point, &f, err, cap)
                                  : tp_run_each_sample(run, file_point, &f, err, cap);
    if (ok)
        end_series(&f);
    tp_downsample_free(&f.ds);
    free(f.x);
    free(f.y);
    free(wanted);
    tp_run_close(run);
    if (ok && !a->ok)
        snprintf(err, cap, "%s: out of memory for the envelopes", path);
    return ok && a->ok;
}

/* Moves the rows of from into into, metric by metric; false when out of
 * memory (into then marked failed). */
static bool acc_join(envelope_acc *into, envelope_acc *from)
{
    for (size_t m = 0; into->ok && m < into->ndefs; m++) {
        metric_rows *a = &into->per[m], *b = &from->per[m];
        if (!b->rows)
            continue;
        size_t rows = a->rows + b->rows;
        double *grown = tp_reserve_try(a->means, rows, &a->cap, TP_PLOT_BUCKETS * sizeof *a->means);
        if (!grown) {
            into->ok = false;
            break;
        }
        a->means = grown;
        memcpy(a->means + a->rows * TP_PLOT_BUCKETS, b->means,
               b->rows * TP_PLOT_BUCKETS * sizeof *b->means);
        a->rows = rows;
    }
    return into->ok;
}

/* One of the threads that read the node files: files w, w + W, w + 2W... */
typedef struct file_worker {
    pthread_t thread;
    envelope_acc acc;
    const char *const *paths;
    size_t n, first, stride;
    int64_t earliest;
    bool ok;
    char err[512];
} file_worker;

static void *read_files(void *arg)
{
    file_worker *w = arg;
    for (size_t i = w->first; w->ok && i < w->n; i += w->stride)
        w->ok = add_file(&w->acc, w->paths[i], w->earliest, w->err, sizeof w->err);
    return NULL;
}

/* The threads that read: one per CPU, at most WORKERS_MAX and n. */
#define WORKERS_MAX 4

static size_t workers_for(size_t n)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t w = cpus > 0 ? (size_t)cpus : 1;
    w = w < WORKERS_MAX ? w : WORKERS_MAX;
    w = w < n ? w : n;
    return tp_runs_open_in_threads() && w > 0 ? w : 1;
}

bool tp_envelopes_from_files(const char *const *paths, size_t n, const char *merged_path,
                             double span, tp_envelopes *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    tp_run *merged = tp_run_open(merged_path, err, cap);
    if (!merged)
        return false;
    int64_t earliest = meta_int(merged, TP_META_START_WALL_NS);
    tp_run_close(merged);
    /* the files read by a few threads at once (reading their points is most
     * of the work), each into rows of its own, joined at the end */
    size_t nw = workers_for(n);
    file_worker *w = calloc(nw, sizeof *w);
    bool ok = w != NULL;
    size_t started = 0;
    for (size_t k = 0; ok && k < nw; k++) {
        w[k] =
            (file_worker){.paths = paths, .n = n, .first = k, .stride = nw, .earliest = earliest};
        w[k].ok = acc_init(&w[k].acc, span);
        if (!w[k].ok)
            snprintf(w[k].err, sizeof w[k].err, "out of memory for the envelopes");
        else if (k > 0 && pthread_create(&w[k].thread, NULL, read_files, &w[k]) != 0)
            read_files(&w[k]); /* no thread: read here */
        else if (k > 0)
            started |= (size_t)1 << k;
    }
    if (ok && w[0].ok)
        read_files(&w[0]);
    for (size_t k = 1; ok && k < nw; k++)
        if (started >> k & 1)
            pthread_join(w[k].thread, NULL);
    for (size_t k = 0; ok && k < nw; k++)
        if (!w[k].ok) {
            snprintf(err, cap, "%s", w[k].err);
            ok = false;
        }
    if (!ok && !w)
        snprintf(err, cap, "out of memory for the envelopes");
    for (size_t k = 1; ok && k < nw; k++)
        if (!acc_join(&w[0].acc, &w[k].acc)) {
            snprintf(err, cap, "out of memory for the envelopes");
            ok = false;
        }
    for (size_t k = 1; w && k < nw; k++) { /* their rows moved, or not wanted */
        w[k].acc.ok = false;
        tp_envelopes none;
        acc_take(&w[k].acc, &none);
    }
    if (w) {
        w[0].acc.ok = w[0].acc.ok && ok;
        if (!acc_take(&w[0].acc, out) && ok) {
            snprintf(err, cap, "out of memory for the envelopes");
            ok = false;
        }
    }
    free(w);
    return ok;
}

/* A stored metric's envelope, copied. */
static bool load_one(void *ctx, const tp_envelope_rows *r)
{
    tp_envelopes *out = ctx;
    const tp_metric_def *def = tp_metric_find(r->metric);
    if (!def) /* a name of no catalogue: not drawn */
        return true;
    tp_metric_envelope *e = &out->v[out->n];
    tp_envelope *v = &e->e;
    v->x = malloc(r->n * sizeof *v->x);
    v->low = malloc(r->n * sizeof *v->low);
    v->median = malloc(r->n * sizeof *v->median);
    v->high = malloc(r->n * sizeof *v->high);
    if (!v->x || !v->low || !v->median || !v->high) {
        tp_envelope_free(v);
        return false;
    }
    for (size_t k = 0; k < r->n; k++) { /* a file's values: only finite points drawn */
        if (!isfinite(r->x[k]) || !isfinite(r->low[k]) || !isfinite(r->median[k]) ||
            !isfinite(r->high[k]))
            continue;
        v->x[v->n] = r->x[k], v->low[v->n] = r->low[k];
        v->median[v->n] = r->median[k], v->high[v->n++] = r->high[k];
    }
    e->metric = def->name;
    e->lines = r->lines;
    out->n++;
    return true;
}

/* How many metrics the stored table can name at most: the catalogue's,
 * each once (a file that repeats one is read to that bound). */
static bool load_bounded(void *ctx, const tp_envelope_rows *r)
{
    tp_envelopes *out = ctx;
    size_t ndefs;
    tp_metric_catalog(&ndefs);
    return out->n < ndefs && load_one(ctx, r);
}

bool tp_envelopes_load(tp_run *run, tp_envelopes *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    size_t ndefs;
    tp_metric_catalog(&ndefs);
    out->v = calloc(ndefs + 1, sizeof *out->v);
    if (!out->v) {
        snprintf(err, cap, "out of memory for the envelopes");
        return false;
    }
    bool ok = tp_stored_envelopes(run, load_bounded, out, err, cap);
    if (!ok)
        tp_envelopes_free(out);
    return ok;
}

void tp_envelopes_free(tp_envelopes *e)
{
    for (size_t i = 0; e->v && i < e->n; i++)
        tp_envelope_free(&e->v[i].e);
    free(e->v);
    memset(e, 0, sizeof *e);
}
