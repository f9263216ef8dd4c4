/* sink.c: the thread-safe hand-over between collectors and the writer. */
#include "record/sink.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "name_index.h"

typedef struct series_entry {
    char *metric;
    char *labels;
    double latest;
    bool has_latest;
} series_entry;

struct tp_sink {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    uint64_t start_ns;
    bool closed;
    TP_VEC(series_entry) registry;
    TP_VEC(tp_thread_info) threads; /* every thread ever seen */
    TP_VEC(char *) names;           /* names[id - 1] */
    tp_name_index name_index;       /* text -> id */
    tp_batch pending;
    uint64_t total_samples;
    uint32_t total_unavailable;
};

/* Grows a TP_VEC to hold one more item; aborts on out-of-memory, which the
 * recorder cannot recover from anyway. */
#define VEC_PUSH(v, item)                                            \
    do {                                                             \
        if ((v).len == (v).cap) {                                    \
            size_t ncap = (v).cap ? (v).cap * 2 : 64;                \
            void *np = realloc((v).items, ncap * sizeof *(v).items); \
            if (!np)                                                 \
                abort();                                             \
            (v).items = np;                                          \
            (v).cap = ncap;                                          \
        }                                                            \
        (v).items[(v).len++] = (item);                               \
    } while (0)

static char *xstrdup(const char *s)
{
    char *d = strdup(s ? s : "");
    if (!d)
        abort();
    return d;
}

tp_sink *tp_sink_new(uint64_t start_mono_ns)
{
    tp_sink *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_init(&s->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->ready, &attr);
    pthread_condattr_destroy(&attr);
    s->start_ns = start_mono_ns;
    return s;
}

void tp_sink_free(tp_sink *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->registry.len; i++) {
        free(s->registry.items[i].metric);
        free(s->registry.items[i].labels);
    }
    free(s->registry.items);
    for (size_t i = 0; i < s->names.len; i++)
        free(s->names.items[i]);
    free(s->names.items);
    free(s->name_index.slots);
    free(s->threads.items);
    tp_batch_free(&s->pending);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->ready);
    free(s);
}

uint64_t tp_sink_start_ns(const tp_sink *s) { return s->start_ns; }

static long find_series(const tp_sink *s, const char *metric, const char *labels)
{
    for (size_t i = 0; i < s->registry.len; i++) {
        const series_entry *e = &s->registry.items[i];
        if (strcmp(e->metric, metric) == 0 && strcmp(e->labels, labels) == 0)
            return (long)i;
    }
    return -1;
}

uint32_t tp_sink_series(tp_sink *s, const char *metric, const char *labels)
{
    pthread_mutex_lock(&s->lock);
    long idx = find_series(s, metric, labels);
    if (idx < 0) {
        series_entry e = {xstrdup(metric), xstrdup(labels), 0, false};
        VEC_PUSH(s->registry, e);
        idx = (long)s->registry.len - 1;
        tp_series_def def = {(uint32_t)idx + 1, xstrdup(metric), xstrdup(labels)};
        VEC_PUSH(s->pending.series, def);
    }
    pthread_mutex_unlock(&s->lock);
    return (uint32_t)idx + 1; /* ids start at 1 */
}

void tp_sink_sample(tp_sink *s, uint32_t series, uint64_t t_mono_ns, double value)
{
    if (!isfinite(value) || value < 0 || series == 0)
        return;
    uint64_t t = t_mono_ns > s->start_ns ? t_mono_ns - s->start_ns : 0;
    pthread_mutex_lock(&s->lock);
    if (series <= s->registry.len) {
        tp_sample smp = {series, t, value};
        VEC_PUSH(s->pending.samples, smp);
        s->registry.items[series - 1].latest = value;
        s->registry.items[series - 1].has_latest = true;
        s->total_samples++;
    }
    pthread_mutex_unlock(&s->lock);
}

static void push_pair(tp_sink *s, bool unavailable, const char *k, const char *v)
{
    tp_text_pair p = {xstrdup(k), xstrdup(v)};
    pthread_mutex_lock(&s->lock);
    if (unavailable) {
        VEC_PUSH(s->pending.unavailable, p);
        s->total_unavailable++;
    } else {
        VEC_PUSH(s->pending.meta, p);
    }
    pthread_cond_signal(&s->ready);
    pthread_mutex_unlock(&s->lock);
}

void tp_sink_unavailable(tp_sink *s, const char *source, const char *reason)
{
    push_pair(s, true, source, reason);
}

void tp_sink_meta(tp_sink *s, const char *key, const char *value)
{
    push_pair(s, false, key, value);
}

void tp_sink_gpu(tp_sink *s, const tp_gpu_info *gpu)
{
    pthread_mutex_lock(&s->lock);
    VEC_PUSH(s->pending.gpus, *gpu);
    pthread_mutex_unlock(&s->lock);
}

bool tp_sink_latest(tp_sink *s, const char *metric, const char *labels, double *value)
{
    pthread_mutex_lock(&s->lock);
    long idx = find_series(s, metric, labels);
    bool ok = idx >= 0 && s->registry.items[idx].has_latest;
    if (ok)
        *value = s->registry.items[idx].latest;
    pthread_mutex_unlock(&s->lock);
    return ok;
}

void tp_sink_latest_each(tp_sink *s, const char *metric, tp_sink_latest_fn fn, void *ctx)
{
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < s->registry.len; i++) {
        const series_entry *e = &s->registry.items[i];
        if (e->has_latest && strcmp(e->metric, metric) == 0)
            fn(ctx, e->labels, e->latest);
    }
    pthread_mutex_unlock(&s->lock);
}

void tp_sink_counts(tp_sink *s, uint64_t *samples, uint32_t *series, uint32_t *unavailable)
{
    pthread_mutex_lock(&s->lock);
    if (samples)
        *samples = s->total_samples;
    if (series)
        *series = (uint32_t)s->registry.len;
    if (unavailable)
        *unavailable = s->total_unavailable;
    pthread_mutex_unlock(&s->lock);
}

static bool has_pending(const tp_sink *s)
{
    const tp_batch *b = &s->pending;
    return b->series.len || b->samples.len || b->unavailable.len || b->meta.len || b->gpus.len ||
           b->threads.len || b->names.len || b->intervals.len || b->marks.len ||
           b->device_spans.len;
}

static uint64_t since_start(const tp_sink *s, uint64_t t)
{
    return t > s->start_ns ? t - s->start_ns : 0;
}

uint32_t tp_sink_thread(tp_sink *s, const tp_thread_info *info)
{
    pthread_mutex_lock(&s->lock);
    tp_thread_info t = *info;
    t.id = (uint32_t)s->threads.len + 1;
    VEC_PUSH(s->threads, t);
    VEC_PUSH(s->pending.threads, t);
    pthread_mutex_unlock(&s->lock);
    return t.id;
}

void tp_sink_thread_dropped(tp_sink *s, uint32_t thread, uint64_t dropped)
{
    pthread_mutex_lock(&s->lock);
    if (thread >= 1 && thread <= s->threads.len) {
        tp_thread_info *t = &s->threads.items[thread - 1];
        t->dropped = dropped;
        VEC_PUSH(s->pending.threads, *t);
    }
    pthread_mutex_unlock(&s->lock);
}

void tp_sink_thread_rank(tp_sink *s, uint32_t thread, int32_t rank, int32_t local_rank,
                         int32_t world_size)
{
    pthread_mutex_lock(&s->lock);
    if (thread >= 1 && thread <= s->threads.len) {
        tp_thread_info *t = &s->threads.items[thread - 1];
        t->rank = rank, t->local_rank = local_rank, t->world_size = world_size;
        VEC_PUSH(s->pending.threads, *t);
    }
    pthread_mutex_unlock(&s->lock);
}

static const char *name_text(const void *owner, uint32_t id)
{
    return ((const tp_sink *)owner)->names.items[id - 1];
}

uint32_t tp_sink_name(tp_sink *s, const char *text)
{
    pthread_mutex_lock(&s->lock);
    uint32_t id = tp_name_index_find(&s->name_index, text, name_text, s);
    if (!id) {
        if (!tp_name_index_reserve(&s->name_index, (uint32_t)s->names.len, name_text, s))
            abort(); /* as VEC_PUSH */
        VEC_PUSH(s->names, xstrdup(text));
        *tp_name_index_slot(&s->name_index, text, name_text, s) = (uint32_t)s->names.len;
        id = (uint32_t)s->names.len;
        tp_name_def def = {id, xstrdup(text)};
        VEC_PUSH(s->pending.names, def);
    }
    pthread_mutex_unlock(&s->lock);
    return id;
}

void tp_sink_interval(tp_sink *s, uint32_t thread, uint32_t name, uint32_t depth,
                      uint64_t start_mono_ns, uint64_t end_mono_ns)
{
    tp_interval iv = {thread, name, depth, since_start(s, start_mono_ns),
                      since_start(s, end_mono_ns)};
    if (iv.end_ns < iv.start_ns)
        iv.end_ns = iv.start_ns;
    pthread_mutex_lock(&s->lock);
    VEC_PUSH(s->pending.intervals, iv);
    pthread_mutex_unlock(&s->lock);
}

void tp_sink_mark(tp_sink *s, uint32_t thread, uint32_t kind, uint64_t t_mono_ns, int64_t value)
{
    tp_mark m = {thread, kind, since_start(s, t_mono_ns), value};
    pthread_mutex_lock(&s->lock);
    VEC_PUSH(s->pending.marks, m);
    pthread_mutex_unlock(&s->lock);
}

void tp_sink_device_span(tp_sink *s, uint32_t thread, uint32_t name, uint64_t start_mono_ns,
                         uint64_t device_ns)
{
    tp_device_span d = {thread, name, since_start(s, start_mono_ns), device_ns};
    pthread_mutex_lock(&s->lock);
    VEC_PUSH(s->pending.device_spans, d);
    pthread_mutex_unlock(&s->lock);
}

bool tp_sink_wait(tp_sink *s, int timeout_ms)
{
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&s->lock);
    while (!s->closed) {
        if (pthread_cond_timedwait(&s->ready, &s->lock, &deadline) == ETIMEDOUT)
            break;
    }
    bool alive = !s->closed || has_pending(s);
    pthread_mutex_unlock(&s->lock);
    return alive;
}

/* Swaps one vector of the pending batch with the (empty) one in out, so both
 * keep their allocations across takes. */
#define VEC_SWAP(a, b)            \
    do {                          \
        __typeof__(a) tmp_ = (a); \
        (a) = (b);                \
        (b) = tmp_;               \
    } while (0)

void tp_sink_take(tp_sink *s, tp_batch *out)
{
    pthread_mutex_lock(&s->lock);
    VEC_SWAP(s->pending.series, out->series);
    VEC_SWAP(s->pending.samples, out->samples);
    VEC_SWAP(s->pending.unavailable, out->unavailable);
    VEC_SWAP(s->pending.meta, out->meta);
    VEC_SWAP(s->pending.gpus, out->gpus);
    VEC_SWAP(s->pending.threads, out->threads);
    VEC_SWAP(s->pending.names, out->names);
    VEC_SWAP(s->pending.intervals, out->intervals);
    VEC_SWAP(s->pending.marks, out->marks);
    VEC_SWAP(s->pending.device_spans, out->device_spans);
    pthread_mutex_unlock(&s->lock);
}

void tp_sink_close(tp_sink *s)
{
    pthread_mutex_lock(&s->lock);
    s->closed = true;
    pthread_cond_broadcast(&s->ready);
    pthread_mutex_unlock(&s->lock);
}

void tp_batch_clear(tp_batch *b)
{
    for (size_t i = 0; i < b->series.len; i++) {
        free(b->series.items[i].metric);
        free(b->series.items[i].labels);
    }
    for (size_t i = 0; i < b->unavailable.len; i++) {
        free(b->unavailable.items[i].key);
        free(b->unavailable.items[i].value);
    }
    for (size_t i = 0; i < b->meta.len; i++) {
        free(b->meta.items[i].key);
        free(b->meta.items[i].value);
    }
    for (size_t i = 0; i < b->names.len; i++)
        free(b->names.items[i].text);
    b->series.len = b->samples.len = b->unavailable.len = b->meta.len = b->gpus.len = 0;
    b->threads.len = b->names.len = b->intervals.len = b->marks.len = b->device_spans.len = 0;
}

void tp_batch_free(tp_batch *b)
{
    tp_batch_clear(b);
    free(b->series.items);
    free(b->samples.items);
    free(b->unavailable.items);
    free(b->meta.items);
    free(b->gpus.items);
    free(b->threads.items);
    free(b->names.items);
    free(b->intervals.items);
    free(b->marks.items);
    free(b->device_spans.items);
    memset(b, 0, sizeof *b);
}
