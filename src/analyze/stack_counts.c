/* stack_counts.c: see stack_counts.h. */
#include "analyze/stack_counts.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"
#include "util/oom.h"

/* The samples of one (sampler's thread row, sampled thread, region id,
 * node, counted state: tp_stack_state_counted), with what its thread is: its rank, a worker's or
 * not. */
typedef struct fine {
    int64_t thread_id, phase_id;
    int32_t tid;
    uint32_t node;
    int state;
    int rank;
    bool worker;
    size_t thread; /* its entry in threads */
    uint64_t samples;
} fine;

/* One (sampler's thread row, sampled thread) over the run: what decides
 * whether it only waited (tp_stack_counts_sql's "waited"). */
typedef struct thread_stats {
    int64_t thread_id;
    int32_t tid;
    int64_t max_phase_id;
    bool all_known; /* every sample's state known */
    uint64_t on_cpu, total;
} thread_stats;

/* An open-addressing index of entries (slot: entry + 1, 0 empty). */
typedef struct index_table {
    uint32_t *slot;
    size_t cap; /* a power of two, or 0 */
} index_table;

struct tp_counts_pass {
    fine *fines;
    size_t nfines, fines_cap;
    thread_stats *threads;
    size_t nthreads, threads_cap;
    index_table fine_index, thread_index;
    /* each region id's text (NULL none), as the rows gave it */
    struct phase {
        int64_t id;
        char *text;
    } * phases;
    size_t nphases, phases_cap;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static uint64_t fine_hash(const fine *f)
{
    uint64_t h = mix(mix(0, (uint64_t)f->thread_id), (uint64_t)(uint32_t)f->tid);
    return mix(mix(mix(h, (uint64_t)f->phase_id), f->node), (uint64_t)f->state);
}

static bool fine_same(const fine *a, const fine *b)
{
    return a->thread_id == b->thread_id && a->tid == b->tid && a->phase_id == b->phase_id &&
           a->node == b->node && a->state == b->state;
}

static uint64_t thread_hash(int64_t thread_id, int32_t tid)
{
    return mix(mix(1, (uint64_t)thread_id), (uint64_t)(uint32_t)tid);
}

/* Doubles t (at half full) and puts back the n entries, each hashed by
 * hash_of(ctx, i). */
static void index_grow(index_table *t, size_t n, uint64_t (*hash_of)(const void *, size_t),
                       const void *ctx)
{
    if ((n + 1) * 2 <= t->cap)
        return;
    size_t cap = t->cap ? t->cap * 2 : 1024;
    free(t->slot);
    t->slot = tp_xcalloc(cap, sizeof *t->slot);
    t->cap = cap;
    for (size_t i = 0; i < n; i++) {
        size_t at = hash_of(ctx, i) & (cap - 1);
        while (t->slot[at])
            at = (at + 1) & (cap - 1);
        t->slot[at] = (uint32_t)(i + 1);
    }
}

static uint64_t fine_hash_at(const void *ctx, size_t i)
{
    return fine_hash(&((const tp_counts_pass *)ctx)->fines[i]);
}

static uint64_t thread_hash_at(const void *ctx, size_t i)
{
    const thread_stats *t = &((const tp_counts_pass *)ctx)->threads[i];
    return thread_hash(t->thread_id, t->tid);
}

static uint64_t add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* The entry of run's thread, made at its first run. */
static size_t thread_of(tp_counts_pass *p, const tp_stack_thread_run *run)
{
    index_grow(&p->thread_index, p->nthreads, thread_hash_at, p);
    size_t mask = p->thread_index.cap - 1, at = thread_hash(run->thread_id, run->tid) & mask;
    for (; p->thread_index.slot[at]; at = (at + 1) & mask) {
        size_t i = p->thread_index.slot[at] - 1;
        if (p->threads[i].thread_id == run->thread_id && p->threads[i].tid == run->tid)
            return i;
    }
    p->threads = tp_grow(p->threads, p->nthreads, &p->threads_cap, sizeof *p->threads);
    p->threads[p->nthreads] = (thread_stats){run->thread_id, run->tid, run->phase_id, true, 0, 0};
    p->thread_index.slot[at] = (uint32_t)(p->nthreads + 1);
    return p->nthreads++;
}

/* Remembers region id's text (NULL none) at its first sight. */
static void see_phase(tp_counts_pass *p, int64_t id, const char *text)
{
    for (size_t i = p->nphases; i-- > 0;) /* a run's regions are few: the latest first */
        if (p->phases[i].id == id)
            return;
    p->phases = tp_grow(p->phases, p->nphases, &p->phases_cap, sizeof *p->phases);
    p->phases[p->nphases++] = (struct phase){id, text ? tp_xstrdup(text) : NULL};
}

static void count(void *ctx, const tp_stack_thread_run *run)
{
    tp_counts_pass *p = ctx;
    size_t th = thread_of(p, run);
    thread_stats *t = &p->threads[th];
    t->max_phase_id = run->phase_id > t->max_phase_id ? run->phase_id : t->max_phase_id;
    t->all_known = t->all_known && tp_stack_state_known(run->state);
    t->total = add_sat(t->total, run->count);
    if (tp_stack_state_on_cpu(run->state))
        t->on_cpu = add_sat(t->on_cpu, run->count);
    fine key = {
        run->thread_id, run->phase_id, run->tid, run->node, tp_stack_state_counted(run->state),
        run->rank,      run->worker,   th,       0};
    index_grow(&p->fine_index, p->nfines, fine_hash_at, p);
    size_t mask = p->fine_index.cap - 1, at = fine_hash(&key) & mask;
    for (; p->fine_index.slot[at]; at = (at + 1) & mask) {
        fine *f = &p->fines[p->fine_index.slot[at] - 1];
        if (fine_same(f, &key)) {
            f->samples = add_sat(f->samples, run->count);
            return;
        }
    }
    if (p->nfines >= UINT32_MAX - 1)
        return; /* a crafted file's: past what an index holds */
    see_phase(p, run->phase_id, run->phase);
    p->fines = tp_grow(p->fines, p->nfines, &p->fines_cap, sizeof *p->fines);
    key.samples = run->count;
    p->fines[p->nfines] = key;
    p->fine_index.slot[at] = (uint32_t)(p->nfines + 1);
    p->nfines++;
}

tp_counts_pass *tp_stack_counts_begin(tp_stack_reader *reader)
{
    tp_counts_pass *p = tp_xcalloc(1, sizeof *p);
    *reader = (tp_stack_reader){INT64_MIN, count, p};
    return p;
}

static const char *phase_text(const tp_counts_pass *p, int64_t id)
{
    for (size_t i = 0; i < p->nphases; i++)
        if (p->phases[i].id == id)
            return p->phases[i].text;
    return NULL;
}

/* SQLite's order: NULL first, then the texts' bytes. */
static int text_cmp(const char *a, const char *b)
{
    if (!a || !b)
        return (a != NULL) - (b != NULL);
    return strcmp(a, b);
}

static int by_count_key(const void *x, const void *y)
{
    const tp_stack_count *a = x, *b = y;
    int c;
    if (a->rank != b->rank)
        return (a->rank > b->rank) - (a->rank < b->rank);
    if ((c = text_cmp(a->phase, b->phase)))
        return c;
    if (a->worker != b->worker)
        return (int)a->worker - (int)b->worker;
    if (a->node != b->node)
        return (a->node > b->node) - (a->node < b->node);
    int sa = a->on_cpu | a->cpu_known << 1 | a->waited << 3 | a->blocked << 4,
        sb = b->on_cpu | b->cpu_known << 1 | b->waited << 3 | b->blocked << 4;
    return (sa > sb) - (sa < sb);
}

void tp_stack_counts_end(tp_counts_pass *p, bool read, tp_stack_count **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!p)
        return;
    tp_stack_count *v = read && p->nfines ? tp_xcalloc(p->nfines, sizeof *v) : NULL;
    for (size_t i = 0; v && i < p->nfines; i++) {
        const fine *f = &p->fines[i];
        const thread_stats *t = &p->threads[f->thread];
        bool waited = !f->worker && t->max_phase_id == 0 && t->all_known &&
                      (t->on_cpu > UINT64_MAX / TP_STACK_WAITED_ONCPU_MAX
                           ? false
                           : t->on_cpu * TP_STACK_WAITED_ONCPU_MAX <=
                                 add_sat(t->total, (uint64_t)TP_STACK_WAITED_ONCPU_MAX *
                                                       TP_STACK_WAITED_ONCPU_FEW));
        v[i] = (tp_stack_count){.rank = f->rank,
                                .phase = (char *)phase_text(p, f->phase_id),
                                .worker = f->worker,
                                .node = f->node,
                                .on_cpu = tp_stack_state_on_cpu(f->state),
                                .cpu_known = tp_stack_state_known(f->state),
                                .blocked = tp_stack_state_blocked(f->state),
                                .waited = waited,
                                .samples = f->samples};
    }
    if (v)
        qsort(v, p->nfines, sizeof *v, by_count_key);
    for (size_t i = 0; v && i < p->nfines;) { /* the groups, their texts made their own */
        tp_stack_count c = v[i];
        size_t j = i + 1;
        for (; j < p->nfines && !by_count_key(&v[i], &v[j]); j++)
            c.samples = add_sat(c.samples, v[j].samples);
        c.phase = c.phase ? tp_xstrdup(c.phase) : NULL;
        v[(*n)++] = c;
        i = j;
    }
    *out = v;
    for (size_t i = 0; i < p->nphases; i++)
        free(p->phases[i].text);
    free(p->phases);
    free(p->fines);
    free(p->threads);
    free(p->fine_index.slot);
    free(p->thread_index.slot);
    free(p);
}
