/* harness.c: fixture trees and sink capture for the C unit tests. */
#include "harness.h"

#include "store/writer.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *fx_root(void)
{
    char tmpl[] = "/tmp/trainprof-fx-XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

static void mkdirs(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(buf, 0755);
            *p = '/';
        }
    }
    mkdir(buf, 0755);
}

void fx_mkdir(const char *root, const char *rel)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    mkdirs(path);
}

void fx_write(const char *root, const char *rel, const char *content)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    char *slash = strrchr(path, '/');
    *slash = '\0';
    mkdirs(path);
    *slash = '/';
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
}

void fx_printf(const char *root, const char *rel, const char *fmt, ...)
{
    char *text = NULL;
    va_list ap;
    va_start(ap, fmt);
    assert_true(vasprintf(&text, fmt, ap) >= 0);
    va_end(ap);
    fx_write(root, rel, text);
    free(text);
}

void fx_remove(const char *root, const char *rel)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    unlink(path);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

void fx_rmtree(const char *root) { nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* Appends src's contents to dst (taking ownership of src's strings). */
void cap_take(tp_sink *sink, tp_batch *b)
{
    tp_batch fresh = {0};
    tp_sink_take(sink, &fresh);
    /* Merge into b so repeated takes accumulate. */
#define APPEND(field)                                                                        \
    for (size_t i = 0; i < fresh.field.len; i++) {                                           \
        if (b->field.len == b->field.cap) {                                                  \
            b->field.cap = b->field.cap ? b->field.cap * 2 : 64;                             \
            b->field.items = realloc(b->field.items, b->field.cap * sizeof *b->field.items); \
        }                                                                                    \
        b->field.items[b->field.len++] = fresh.field.items[i];                               \
    }                                                                                        \
    fresh.field.len = 0;
    APPEND(series)
    APPEND(samples)
    APPEND(unavailable)
    APPEND(meta)
    APPEND(gpus)
    APPEND(threads)
    APPEND(names)
    APPEND(intervals)
    APPEND(marks)
    APPEND(device_spans)
#undef APPEND
    tp_batch_free(&fresh);
}

static long series_id(const tp_batch *b, const char *metric, const char *labels)
{
    for (size_t i = 0; i < b->series.len; i++)
        if (strcmp(b->series.items[i].metric, metric) == 0 &&
            strcmp(b->series.items[i].labels, labels) == 0)
            return b->series.items[i].id;
    return -1;
}

/* The samples of series (metric, labels): their values into values and
 * their times into times (either NULL), at most max of each; how many. */
static size_t cap_samples(const tp_batch *b, const char *metric, const char *labels, double *values,
                          uint64_t *times, size_t max)
{
    long id = series_id(b, metric, labels);
    size_t n = 0;
    for (size_t i = 0; id >= 0 && i < b->samples.len; i++) {
        if (b->samples.items[i].series != (uint32_t)id)
            continue;
        if (n < max && values)
            values[n] = b->samples.items[i].value;
        if (n < max && times)
            times[n] = b->samples.items[i].t_ns;
        n++;
    }
    return n;
}

size_t cap_values(const tp_batch *b, const char *metric, const char *labels, double *out,
                  size_t max)
{
    return cap_samples(b, metric, labels, out, NULL, max);
}

size_t cap_times(const tp_batch *b, const char *metric, const char *labels, uint64_t *out,
                 size_t max)
{
    return cap_samples(b, metric, labels, NULL, out, max);
}

size_t cap_series_count(const tp_batch *b, const char *metric)
{
    size_t n = 0;
    for (size_t i = 0; i < b->series.len; i++)
        n += strcmp(b->series.items[i].metric, metric) == 0;
    return n;
}

bool cap_unavailable(const tp_batch *b, const char *source, const char *text)
{
    for (size_t i = 0; i < b->unavailable.len; i++)
        if (strcmp(b->unavailable.items[i].key, source) == 0 &&
            strstr(b->unavailable.items[i].value, text))
            return true;
    return false;
}

const char *cap_meta(const tp_batch *b, const char *key)
{
    const char *v = NULL;
    for (size_t i = 0; i < b->meta.len; i++)
        if (strcmp(b->meta.items[i].key, key) == 0)
            v = b->meta.items[i].value;
    return v;
}

void test_env_open(test_env *t, const char *root_path, pid_t target)
{
    assert_true(tp_sysroot_open(&t->root, root_path));
    t->sink = tp_sink_new(0);
    assert_non_null(t->sink);
    t->env = (tp_collect_env){&t->root, t->sink, target};
}

void test_env_close(test_env *t)
{
    tp_sink_free(t->sink);
    tp_sysroot_close(&t->root);
}

void fx_write_sink(const char *path, tp_sink *s, const char *agent)
{
    char err[256];
    tp_writer *w = tp_writer_create(path, false, agent, err, sizeof err);
    assert_non_null(w);
    tp_batch b = {0};
    tp_sink_take(s, &b);
    assert_true(tp_writer_apply(w, &b, err, sizeof err));
    tp_batch_free(&b);
    tp_sink_free(s);
    tp_writer_finish(w);
}
