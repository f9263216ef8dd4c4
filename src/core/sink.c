/* sink.c: the thread-safe hand-over between collectors and the writer: the
 * pending batch, what was lost, and the tables of series (series_table.c)
 * and names (name_table.c) it keeps under its lock (the sampled stacks'
 * part: sink_stacks.c). */
#include "core/sink.h"
#include "core/sink_internal.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    s->events_max = TP_SINK_PENDING_EVENTS_MAX;
    return s;
}

void tp_sink_set_pending_events_max(tp_sink *s, size_t n)
{
    pthread_mutex_lock(&s->lock);
    s->events_max = n;
    pthread_mutex_unlock(&s->lock);
}

uint64_t tp_sink_behind(tp_sink *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t n = s->behind;
    pthread_mutex_unlock(&s->lock);
    return n;
}

uint64_t tp_sink_events_not_kept(tp_sink *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t n = s->behind + s->lost[TP_LOST_EVENTS];
    pthread_mutex_unlock(&s->lock);
    return n;
}

void tp_sink_threads_unrecorded(tp_sink *s, uint64_t n)
{
    pthread_mutex_lock(&s->lock);
    s->threads_unrecorded =
        n > UINT64_MAX - s->threads_unrecorded ? UINT64_MAX : s->threads_unrecorded + n;
    pthread_mutex_unlock(&s->lock);
}

/* Whether one more timing event may join the pending ones of its kind,
 * pending of them now (the lock held): the regions and device times count
 * together, the marks apart (a flood of regions then never costs a step's
 * boundary); where the writer is events_max behind, false and counted. */
static bool event_room(tp_sink *s, size_t pending)
{
    if (!s->events_max || pending < s->events_max)
        return true;
    s->behind++;
    return false;
}

void tp_sink_free(tp_sink *s)
{
    if (!s)
        return;
    tp_series_table_free(&s->registry);
    tp_name_table_free(&s->names);
    tp_name_table_free(&s->frames);
    tp_name_table_free(&s->said);
    tp_name_table_free(&s->fact_keys[0]);
    tp_name_table_free(&s->fact_keys[1]);
    tp_stack_table_free(&s->stacks);
    tp_stack_runs_free(&s->runs);
    free(s->threads.items);
    tp_batch_free(&s->pending);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->ready);
    free(s);
}

uint64_t tp_sink_start_ns(const tp_sink *s) { return s->start_ns; }

/* Adds a series to the registry and to the pending definitions, both or
 * neither: false when memory ran out. */
static bool add_series(tp_sink *s, const char *metric, const char *labels)
{
    bool room_registry = tp_series_table_reserve(&s->registry), room_pending;
    VEC_ROOM(s->pending.series, room_pending);
    tp_series_entry e = {strdup(metric), strdup(labels)};
    tp_series_def def = {(uint32_t)s->registry.len + 1, strdup(metric), strdup(labels)};
    if (!room_registry || !room_pending || !e.metric || !e.labels || !def.metric || !def.labels) {
        free(e.metric), free(e.labels), free(def.metric), free(def.labels);
        return false;
    }
    s->registry.items[s->registry.len++] = e;
    s->pending.series.items[s->pending.series.len++] = def;
    return true;
}

uint32_t tp_sink_series(tp_sink *s, const char *metric, const char *labels)
{
    pthread_mutex_lock(&s->lock);
    long idx = tp_series_table_find(&s->registry, metric, labels);
    if (idx < 0 && !add_series(s, metric, labels))
        s->lost[TP_LOST_OTHER]++;
    else if (idx < 0)
        idx = (long)s->registry.len - 1;
    pthread_mutex_unlock(&s->lock);
    return (uint32_t)(idx + 1); /* ids start at 1; 0 when memory ran out */
}

void tp_sink_sample(tp_sink *s, uint32_t series, uint64_t t_mono_ns, double value)
{
    if (!isfinite(value) || value < 0)
        return;
    uint64_t t = t_mono_ns > s->start_ns ? t_mono_ns - s->start_ns : 0;
    pthread_mutex_lock(&s->lock);
    if (series == 0) { /* its series could not be made */
        s->lost[TP_LOST_SAMPLES]++;
    } else if (series <= s->registry.len) {
        tp_sample smp = {series, t, value};
        VEC_PUSH(s, s->pending.samples, smp, TP_LOST_SAMPLES);
        s->total_samples++;
    }
    if (t > s->stacks_now_ns) /* the runs' clock goes on while no stacks come */
        s->stacks_now_ns = t;
    pthread_mutex_unlock(&s->lock);
}

static void push_pair(tp_sink *s, bool unavailable, const char *k, const char *v)
{
    tp_text_pair p = {strdup(k ? k : ""), strdup(v ? v : "")};
    pthread_mutex_lock(&s->lock);
    bool ok = p.key && p.value;
    if (ok && unavailable)
        VEC_ROOM(s->pending.unavailable, ok);
    else if (ok)
        VEC_ROOM(s->pending.meta, ok);
    if (!ok) {
        free(p.key), free(p.value);
        s->lost[TP_LOST_OTHER]++;
    } else if (unavailable) {
        s->pending.unavailable.items[s->pending.unavailable.len++] = p;
        s->total_unavailable++;
    } else {
        s->pending.meta.items[s->pending.meta.len++] = p;
    }
    pthread_cond_signal(&s->ready);
    pthread_mutex_unlock(&s->lock);
}

void tp_sink_unavailable(tp_sink *s, const char *source, const char *reason)
{
    /* the same loss told again (by each process a sandbox covers): one row */
    size_t a = strlen(source ? source : ""), b = strlen(reason ? reason : "");
    char *both = malloc(a + b + 2);
    if (both) {
        memcpy(both, source ? source : "", a);
        both[a] = '\n';
        memcpy(both + a + 1, reason ? reason : "", b + 1);
        pthread_mutex_lock(&s->lock);
        bool said = tp_name_table_find(&s->said, both) != 0;
        if (!said && tp_name_table_reserve(&s->said))
            tp_name_table_add(&s->said, both, both), both = NULL;
        pthread_mutex_unlock(&s->lock);
        free(both);
        if (said)
            return;
    }
    push_pair(s, true, source, reason);
}

void tp_sink_meta(tp_sink *s, const char *key, const char *value)
{
    push_pair(s, false, key, value);
}

void tp_sink_fact(tp_sink *s, bool of_process, const char *key, const char *value)
{
    tp_name_table *keys = &s->fact_keys[of_process];
    size_t most = of_process ? TP_SINK_PROCESS_FACT_KEYS_MAX : TP_SINK_FACT_KEYS_MAX;
    pthread_mutex_lock(&s->lock);
    bool keep = tp_name_table_find(keys, key) != 0;
    if (!keep && keys->len < most && tp_name_table_reserve(keys)) {
        char *own = strdup(key);
        if (own) {
            tp_name_table_add(keys, own, own);
            keep = true;
        }
    }
    if (!keep)
        s->facts_refused++;
    pthread_mutex_unlock(&s->lock);
    if (keep)
        push_pair(s, false, key, value);
}

void tp_sink_gpu(tp_sink *s, const tp_gpu_info *gpu)
{
    pthread_mutex_lock(&s->lock);
    VEC_PUSH(s, s->pending.gpus, *gpu, TP_LOST_OTHER);
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

void tp_sink_lost(tp_sink *s, tp_lost_kind kind, uint64_t n)
{
    pthread_mutex_lock(&s->lock);
    s->lost[kind] += n;
    pthread_mutex_unlock(&s->lock);
}

void tp_sink_losses(tp_sink *s, uint64_t out[TP_LOST_KINDS])
{
    pthread_mutex_lock(&s->lock);
    memcpy(out, s->lost, sizeof s->lost);
    pthread_mutex_unlock(&s->lock);
}

static bool has_pending(const tp_sink *s)
{
    const tp_batch *b = &s->pending;
    return b->series.len || b->samples.len || b->unavailable.len || b->meta.len || b->gpus.len ||
           b->threads.len || b->names.len || b->intervals.len || b->marks.len ||
           b->device_spans.len || b->frames.len || b->stack_nodes.len || b->stacks.len ||
           b->ops_windows.len;
}

/* A rank, local rank or world size a process wrote (its ring's header, or
 * the rank it told): -1 (none) for any negative one, as the readers take -1
 * and no other. */
static int32_t rank_or_none(int32_t v) { return v >= 0 ? v : -1; }

uint32_t tp_sink_thread(tp_sink *s, const tp_thread_info *info)
{
    pthread_mutex_lock(&s->lock);
    tp_thread_info t = *info;
    t.rank = rank_or_none(t.rank), t.local_rank = rank_or_none(t.local_rank);
    t.world_size = rank_or_none(t.world_size);
    t.id = (uint32_t)s->threads.len + 1;
    bool room_all, room_pending;
    VEC_ROOM(s->threads, room_all);
    VEC_ROOM(s->pending.threads, room_pending);
    if (room_all && room_pending) {
        s->threads.items[s->threads.len++] = t;
        s->pending.threads.items[s->pending.threads.len++] = t;
    } else {
        s->lost[TP_LOST_THREADS]++;
        t.id = 0;
    }
    pthread_mutex_unlock(&s->lock);
    return t.id;
}

void tp_sink_thread_dropped(tp_sink *s, uint32_t thread, uint64_t dropped)
{
    pthread_mutex_lock(&s->lock);
    if (thread >= 1 && thread <= s->threads.len) {
        tp_thread_info *t = &s->threads.items[thread - 1];
        t->dropped = dropped;
        VEC_PUSH(s, s->pending.threads, *t, TP_LOST_OTHER);
    }
    pthread_mutex_unlock(&s->lock);
}

void tp_sink_thread_rank(tp_sink *s, uint32_t thread, int32_t rank, int32_t local_rank,
                         int32_t world_size)
{
    pthread_mutex_lock(&s->lock);
    if (thread >= 1 && thread <= s->threads.len) {
        tp_thread_info *t = &s->threads.items[thread - 1];
        t->rank = rank_or_none(rank), t->local_rank = rank_or_none(local_rank);
        t->world_size = rank_or_none(world_size);
        VEC_PUSH(s, s->pending.threads, *t, TP_LOST_OTHER);
    }
    pthread_mutex_unlock(&s->lock);
}

void tp_sink_thread_device(tp_sink *s, uint32_t thread, const char *uuid)
{
    pthread_mutex_lock(&s->lock);
    if (thread >= 1 && thread <= s->threads.len) {
        tp_thread_info *t = &s->threads.items[thread - 1];
        snprintf(t->device_uuid, sizeof t->device_uuid, "%s", uuid);
        VEC_PUSH(s, s->pending.threads, *t, TP_LOST_OTHER);
    }
    pthread_mutex_unlock(&s->lock);
}

/* Interns a new text in table, and defines it in pending: its id, or 0
 * (nothing changed) when memory ran out. */
static uint32_t add_text(tp_name_table *table, void *pending_vec, const char *text)
{
    TP_VEC(tp_name_def) *pending = pending_vec;
    bool room_pending;
    VEC_ROOM(*pending, room_pending);
    char *own = strdup(text), *copy = strdup(text);
    if (!room_pending || !own || !copy || !tp_name_table_reserve(table)) {
        free(own), free(copy);
        return 0;
    }
    uint32_t id = tp_name_table_add(table, text, own);
    pending->items[pending->len++] = (tp_name_def){id, copy};
    return id;
}

static uint32_t intern(tp_sink *s, tp_name_table *table, void *pending_vec, const char *text)
{
    pthread_mutex_lock(&s->lock);
    uint32_t id = tp_name_table_find(table, text);
    if (!id && !(id = add_text(table, pending_vec, text)))
        s->lost[TP_LOST_OTHER]++;
    pthread_mutex_unlock(&s->lock);
    return id;
}

uint32_t tp_sink_name(tp_sink *s, const char *text)
{
    return intern(s, &s->names, &s->pending.names, text);
}

uint32_t tp_sink_frame(tp_sink *s, const char *text)
{
    return intern(s, &s->frames, &s->pending.frames, text);
}

static bool text_of(tp_sink *s, const tp_name_table *table, uint32_t id, char *out, size_t cap)
{
    pthread_mutex_lock(&s->lock);
    bool known = id >= 1 && id <= table->len && table->texts[id - 1];
    snprintf(out, cap, "%s", known ? table->texts[id - 1] : "");
    pthread_mutex_unlock(&s->lock);
    return known;
}

bool tp_sink_name_text(tp_sink *s, uint32_t id, char *out, size_t cap)
{
    return text_of(s, &s->names, id, out, cap);
}

bool tp_sink_frame_text(tp_sink *s, uint32_t id, char *out, size_t cap)
{
    return text_of(s, &s->frames, id, out, cap);
}

void tp_sink_interval(tp_sink *s, uint32_t thread, uint32_t name, uint32_t depth,
                      uint64_t start_mono_ns, uint64_t end_mono_ns)
{
    tp_interval iv = {thread, name, depth, start_mono_ns, end_mono_ns};
    tp_sink_intervals(s, &iv, 1);
}

void tp_sink_intervals(tp_sink *s, const tp_interval *v, size_t n)
{
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < n; i++) {
        tp_interval iv = {v[i].thread, v[i].name, v[i].depth, tp_sink_since_start(s, v[i].start_ns),
                          tp_sink_since_start(s, v[i].end_ns)};
        if (iv.end_ns < iv.start_ns)
            iv.end_ns = iv.start_ns;
        if (!iv.thread || !iv.name) /* its thread or name could not be kept */
            s->lost[TP_LOST_EVENTS]++;
        else if (event_room(s, s->pending.intervals.len + s->pending.device_spans.len))
            VEC_PUSH(s, s->pending.intervals, iv, TP_LOST_EVENTS);
    }
    pthread_mutex_unlock(&s->lock);
}

void tp_sink_mark(tp_sink *s, uint32_t thread, uint32_t kind, uint64_t t_mono_ns, int64_t value)
{
    tp_mark m = {thread, kind, tp_sink_since_start(s, t_mono_ns), value};
    pthread_mutex_lock(&s->lock);
    if (!thread)
        s->lost[TP_LOST_EVENTS]++;
    else if (event_room(s, s->pending.marks.len))
        VEC_PUSH(s, s->pending.marks, m, TP_LOST_EVENTS);
    pthread_mutex_unlock(&s->lock);
}

void tp_sink_device_span(tp_sink *s, uint32_t thread, uint32_t name, uint64_t start_mono_ns,
                         uint64_t device_ns)
{
    tp_device_span d = {thread, name, tp_sink_since_start(s, start_mono_ns), device_ns};
    pthread_mutex_lock(&s->lock);
    if (!thread || !name)
        s->lost[TP_LOST_EVENTS]++;
    else if (event_room(s, s->pending.intervals.len + s->pending.device_spans.len))
        VEC_PUSH(s, s->pending.device_spans, d, TP_LOST_EVENTS);
    pthread_mutex_unlock(&s->lock);
}

void tp_sink_ops_window(tp_sink *s, tp_ops_window *w)
{
    w->start_ns = (int64_t)tp_sink_since_start(s, (uint64_t)w->start_ns);
    w->end_ns = (int64_t)tp_sink_since_start(s, (uint64_t)w->end_ns);
    for (uint32_t i = 0; i < w->nevents; i++)
        w->events[i].start_ns = (int64_t)tp_sink_since_start(s, (uint64_t)w->events[i].start_ns);
    pthread_mutex_lock(&s->lock);
    bool kept;
    VEC_ROOM(s->pending.ops_windows, kept);
    if (kept)
        s->pending.ops_windows.items[s->pending.ops_windows.len++] = w;
    else
        s->lost[TP_LOST_OTHER]++;
    pthread_mutex_unlock(&s->lock);
    if (!kept)
        tp_ops_window_free(w);
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
    tp_sink_hand_open_runs(s, false);
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
    VEC_SWAP(s->pending.frames, out->frames);
    VEC_SWAP(s->pending.stack_nodes, out->stack_nodes);
    VEC_SWAP(s->pending.stacks, out->stacks);
    VEC_SWAP(s->pending.ops_windows, out->ops_windows);
    pthread_mutex_unlock(&s->lock);
}

void tp_sink_close(tp_sink *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t refused = s->facts_refused, unrecorded = s->threads_unrecorded;
    pthread_mutex_unlock(&s->lock);
    if (unrecorded) {
        char reason[300];
        snprintf(reason, sizeof reason,
                 "%llu threads of the training could not hand their ring to the recorder (its "
                 "socket full while it was short of CPU, or no memory for a ring): their events "
                 "were not recorded",
                 (unsigned long long)unrecorded);
        tp_sink_unavailable(s, "timings", reason);
    }
    if (refused) {
        char reason[200];
        snprintf(reason, sizeof reason,
                 "%llu facts the training told were not kept: their keys came past the first "
                 "%u distinct ones (%u of processes' own)",
                 (unsigned long long)refused, TP_SINK_FACT_KEYS_MAX, TP_SINK_PROCESS_FACT_KEYS_MAX);
        tp_sink_unavailable(s, "facts", reason);
    }
    pthread_mutex_lock(&s->lock);
    tp_sink_hand_open_runs(s, true); /* the producers have stopped: every run ends here */
    s->closed = true;
    pthread_cond_broadcast(&s->ready);
    pthread_mutex_unlock(&s->lock);
}
