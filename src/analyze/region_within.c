/* region_within.c: see region_within.h. */
#include "analyze/region_within.h"

#include <stdlib.h>
#include <string.h>

#include "core/phases.h"
#include "util/grow.h"
#include "util/oom.h"
#include "store/reader_stream.h"
#include "store/summary_tables.h"

#define NO_NAME SIZE_MAX

/* A name of the file: its id, its text, whether it is a standard one. */
typedef struct name_entry {
    int64_t id;
    char *text;
    bool standard;
} name_entry;

/* A chain of user regions still waiting for a standard one around them:
 * the outermost of them sits at level top (depth), their names' times. */
typedef struct chain {
    size_t name; /* index into names */
    int top;
    double seconds;
} chain;

/* The chains of one thread. */
typedef struct pending {
    int64_t thread;
    chain *v;
    size_t n, cap;
} pending;

/* A resolved pair's time. */
typedef struct pair {
    size_t name, within; /* within: NO_NAME for none */
    double seconds;
} pair;

struct tp_within_acc {
    name_entry *names;
    size_t nnames, names_cap;
    bool sorted, any_user;
    pending *threads;
    size_t nthreads, threads_cap;
    size_t last; /* the thread found last */
    pair *pairs;
    size_t npairs, pairs_cap;
    uint32_t *slots; /* open addressing over pairs: index + 1, 0 empty */
};

#define PENDING_MAX 256  /* chains one thread may hold (a crafted file's beyond: dropped) */
#define THREADS_MAX 4096 /* threads with chains */
#define SLOTS       (4 * TP_WITHIN_PAIRS_MAX)

tp_within_acc *tp_within_acc_new(void) { return tp_xcalloc(1, sizeof(tp_within_acc)); }

void tp_within_acc_name(tp_within_acc *a, int64_t id, const char *text)
{
    a->names = tp_grow(a->names, a->nnames, &a->names_cap, sizeof *a->names);
    bool standard = tp_phase_kind_of(text) != TP_PHASE_KIND_NONE;
    a->names[a->nnames++] = (name_entry){id, tp_xstrdup(text), standard};
    a->any_user |= !standard;
    a->sorted = false;
}

bool tp_within_acc_has_user_names(const tp_within_acc *a) { return a->any_user; }

static int by_id(const void *x, const void *y)
{
    const name_entry *a = x, *b = y;
    return (a->id > b->id) - (a->id < b->id);
}

static size_t name_index(tp_within_acc *a, int64_t id)
{
    if (!a->sorted) {
        if (a->nnames)
            qsort(a->names, a->nnames, sizeof *a->names, by_id);
        a->sorted = true;
    }
    name_entry key = {.id = id};
    const name_entry *e = a->nnames ? bsearch(&key, a->names, a->nnames, sizeof key, by_id) : NULL;
    return e ? (size_t)(e - a->names) : NO_NAME;
}

/* thread's chains; NULL where it has none and make is false (or no room). */
static pending *thread_pending(tp_within_acc *a, int64_t thread, bool make)
{
    if (a->last < a->nthreads && a->threads[a->last].thread == thread)
        return &a->threads[a->last];
    for (size_t i = 0; i < a->nthreads; i++)
        if (a->threads[i].thread == thread) {
            a->last = i;
            return &a->threads[i];
        }
    if (!make || a->nthreads >= THREADS_MAX)
        return NULL;
    a->threads = tp_grow(a->threads, a->nthreads, &a->threads_cap, sizeof *a->threads);
    a->threads[a->nthreads] = (pending){.thread = thread};
    a->last = a->nthreads;
    return &a->threads[a->nthreads++];
}

/* Adds seconds to the pair's time (a region of many names, one a step,
 * must not make every row walk the pairs). */
static void add_pair(tp_within_acc *a, size_t name, size_t within, double seconds)
{
    if (!a->slots)
        a->slots = tp_xcalloc(SLOTS, sizeof *a->slots);
    uint64_t h = ((uint64_t)name * 0x9E3779B97F4A7C15u) ^ ((uint64_t)within * 0xC2B2AE3D27D4EB4Fu);
    for (size_t k = (size_t)(h >> 40) % SLOTS;; k = (k + 1) % SLOTS) {
        uint32_t at = a->slots[k];
        if (!at) {
            if (a->npairs >= TP_WITHIN_PAIRS_MAX)
                return;
            a->pairs = tp_grow(a->pairs, a->npairs, &a->pairs_cap, sizeof *a->pairs);
            a->pairs[a->npairs++] = (pair){name, within, seconds};
            a->slots[k] = (uint32_t)a->npairs;
            return;
        }
        if (a->pairs[at - 1].name == name && a->pairs[at - 1].within == within) {
            a->pairs[at - 1].seconds += seconds;
            return;
        }
    }
}

/* The chains at level top of p end in the region at level top - 1, named
 * name: resolved where it is standard, else one level up. Those deeper
 * still lost the regions between (events not kept under a flood): this
 * one, closing after them, encloses them too. */
static void close_chains(tp_within_acc *a, pending *p, int top, size_t name)
{
    size_t kept = 0;
    for (size_t i = 0; i < p->n; i++) {
        chain c = p->v[i];
        if (c.top >= top && a->names[name].standard)
            add_pair(a, c.name, name, c.seconds);
        else {
            if (c.top >= top)
                c.top = top - 1;
            p->v[kept++] = c;
        }
    }
    p->n = kept;
}

void tp_within_acc_region(tp_within_acc *a, int64_t thread, int64_t name_id, int depth,
                          int64_t start_ns, int64_t end_ns)
{
    size_t name = name_index(a, name_id);
    if (name == NO_NAME || depth < 0)
        return;
    bool user = !a->names[name].standard;
    pending *p = thread_pending(a, thread, user);
    if (!p)
        return;
    close_chains(a, p, depth + 1, name);
    if (user) {
        double s = end_ns > start_ns ? (double)(end_ns - start_ns) / 1e9 : 0;
        if (p->n < PENDING_MAX) {
            p->v = tp_grow(p->v, p->n, &p->cap, sizeof *p->v);
            p->v[p->n++] = (chain){name, depth, s};
        }
    }
    if (depth == 0) { /* nothing encloses the outermost: its chains ran outside every one */
        size_t kept = 0;
        for (size_t i = 0; i < p->n; i++)
            if (p->v[i].top == 0)
                add_pair(a, p->v[i].name, NO_NAME, p->v[i].seconds);
            else
                p->v[kept++] = p->v[i];
        p->n = kept;
    }
}

static int by_name(const void *x, const void *y)
{
    const tp_region_within *a = x, *b = y;
    return strcmp(a->name, b->name);
}

/* By name, then most time first (the first found where two tie). */
static int by_name_then_time(const void *x, const void *y)
{
    const pair *a = x, *b = y;
    if (a->name != b->name)
        return (a->name > b->name) - (a->name < b->name);
    if (a->seconds != b->seconds)
        return (a->seconds < b->seconds) - (a->seconds > b->seconds);
    return (a->within > b->within) - (a->within < b->within);
}

/* Each name's pair of the most time. */
static void keep_most(pair *pairs, size_t n, const name_entry *names, tp_region_withins *out)
{
    size_t cap = 0;
    if (n)
        qsort(pairs, n, sizeof *pairs, by_name_then_time);
    for (size_t i = 0; i < n; i++) {
        if (i && pairs[i].name == pairs[i - 1].name)
            continue;
        out->v = tp_grow(out->v, out->n, &cap, sizeof *out->v);
        out->v[out->n++] = (tp_region_within){
            tp_xstrdup(names[pairs[i].name].text),
            pairs[i].within == NO_NAME ? NULL : tp_xstrdup(names[pairs[i].within].text),
            pairs[i].seconds};
    }
    if (out->n)
        qsort(out->v, out->n, sizeof *out->v, by_name);
}

void tp_within_acc_finish(tp_within_acc *a, tp_region_withins *out)
{
    memset(out, 0, sizeof *out);
    keep_most(a->pairs, a->npairs, a->names, out);
    for (size_t i = 0; i < a->nnames; i++)
        free(a->names[i].text);
    for (size_t i = 0; i < a->nthreads; i++)
        free(a->threads[i].v);
    free(a->names);
    free(a->threads);
    free(a->pairs);
    free(a->slots);
    free(a);
}

static void acc_name(void *ctx, int64_t id, const char *text) { tp_within_acc_name(ctx, id, text); }

static void acc_region(void *ctx, int64_t thread, int64_t name_id, int depth, int64_t start_ns,
                       int64_t end_ns)
{
    tp_within_acc_region(ctx, thread, name_id, depth, start_ns, end_ns);
}

bool tp_region_withins_from_rows(tp_run *run, tp_region_withins *out, char *err, size_t cap)
{
    tp_within_acc *a = tp_within_acc_new();
    bool ok =
        tp_run_each_name(run, acc_name, a, err, cap) &&
        (!tp_within_acc_has_user_names(a) || tp_run_each_region_id(run, acc_region, a, err, cap));
    tp_within_acc_finish(a, out);
    if (!ok)
        tp_region_withins_free(out);
    return ok;
}

/* A stored pair, into the accumulator's pairs as the rows would give it;
 * the names found by hash (a merge's table holds every node's rows, a
 * crafted one any number). */
#define STORED_SLOTS (4 * TP_WITHIN_PAIRS_MAX) /* 2 names a pair at most: half empty */
typedef struct stored_ctx {
    tp_within_acc *acc;
    int64_t next_id;
    uint32_t *slots; /* index into acc's names + 1, 0 empty */
} stored_ctx;

/* text's index among the names, added where new (NO_NAME past the bound). */
static size_t stored_name(stored_ctx *c, const char *text)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        h = (h ^ *p) * 1099511628211u;
    size_t k = (size_t)(h % STORED_SLOTS);
    for (; c->slots[k]; k = (k + 1) % STORED_SLOTS)
        if (strcmp(c->acc->names[c->slots[k] - 1].text, text) == 0)
            return c->slots[k] - 1;
    if (c->acc->nnames >= STORED_SLOTS / 2) /* a crafted file's rows of rejected names */
        return NO_NAME;
    tp_within_acc_name(c->acc, ++c->next_id, text);
    c->acc->sorted = true; /* ids given in order */
    c->slots[k] = (uint32_t)c->acc->nnames;
    return c->acc->nnames - 1;
}

static void add_stored(void *ctx, const char *name, const char *within, double seconds)
{
    stored_ctx *c = ctx;
    if (c->acc->npairs >= TP_WITHIN_PAIRS_MAX || !(seconds >= 0))
        return;
    size_t n = stored_name(c, name);
    size_t w = within && n != NO_NAME ? stored_name(c, within) : NO_NAME;
    if (n == NO_NAME || (within && w == NO_NAME) || c->acc->names[n].standard ||
        (w != NO_NAME && !c->acc->names[w].standard))
        return; /* a crafted file's: no user region, inside another user's, past the bound */
    add_pair(c->acc, n, w, seconds);
}

bool tp_region_withins_build(tp_run *run, tp_region_withins *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    stored_ctx c = {tp_within_acc_new(), 0, tp_xcalloc(STORED_SLOTS, sizeof(uint32_t))};
    bool stored = false;
    bool ok = tp_stored_region_withins(run, add_stored, &c, &stored, err, cap);
    tp_within_acc_finish(c.acc, out); /* a merge's nodes' pairs summed, as one file's */
    free(c.slots);
    if (!ok || stored)
        return ok;
    return tp_region_withins_from_rows(run, out, err, cap);
}

bool tp_region_withins_once(tp_run *run, tp_region_withins *w, char *err, size_t cap)
{
    if (w->built)
        return true;
    bool ok = tp_region_withins_build(run, w, err, cap);
    w->built = ok;
    return ok;
}

void tp_region_withins_copy(const tp_region_withins *from, tp_region_withins *to)
{
    memset(to, 0, sizeof *to);
    if (!from->n)
        return;
    to->v = tp_xcalloc(from->n, sizeof *to->v);
    for (size_t i = 0; i < from->n; i++)
        to->v[i] = (tp_region_within){tp_xstrdup(from->v[i].name),
                                      from->v[i].within ? tp_xstrdup(from->v[i].within) : NULL,
                                      from->v[i].seconds};
    to->n = from->n;
    to->built = true;
}

void tp_region_withins_free(tp_region_withins *w)
{
    for (size_t i = 0; i < w->n; i++) {
        free(w->v[i].name);
        free(w->v[i].within);
    }
    free(w->v);
    memset(w, 0, sizeof *w);
}

const tp_region_within *tp_region_within_find(const tp_region_withins *w, const char *region)
{
    if (!w || !w->n || !region)
        return NULL;
    tp_region_within key = {.name = (char *)region};
    return bsearch(&key, w->v, w->n, sizeof key, by_name);
}

const char *tp_region_counts_for(const tp_region_withins *w, const char *region)
{
    if (!region || tp_phase_kind_of(region) != TP_PHASE_KIND_NONE)
        return region;
    const tp_region_within *e = tp_region_within_find(w, region);
    return e ? e->within : region;
}
