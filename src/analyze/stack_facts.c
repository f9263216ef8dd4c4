/* stack_facts.c: see stack_facts.h. */
#include "analyze/stack_facts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/stack_own.h"
#include "core/stack_table.h"
#include "util/grow.h"
#include "util/ns_math.h"
#include "util/oom.h"

/* Per frame of one group while counting. */
typedef struct frame_acc {
    uint64_t self, total, self_known, self_on_cpu, self_blocked;
    uint64_t stamp;    /* the row that last counted it in total: once per sample */
    int32_t best_line; /* the line of its most self samples so far */
    uint64_t best_line_self;
} frame_acc;

static bool same_group(const tp_stack_count *a, const tp_stack_count *b)
{
    if (a->rank != b->rank || a->worker != b->worker || a->waited != b->waited)
        return false;
    if (a->worker)
        return true;
    return (!a->phase && !b->phase) || (a->phase && b->phase && strcmp(a->phase, b->phase) == 0);
}

/* Counts rows[0..n) (one group) into acc (a frame_acc per frame id, index
 * 0 for frames the file lacks). Lines per frame: the row's node's line. */
static void count_group(const tp_stack_tree *t, const tp_stack_count *rows, size_t n,
                        frame_acc *acc, tp_stack_group *g)
{
    for (size_t r = 0; r < n; r++) {
        const tp_stack_count *c = &rows[r];
        g->samples += c->samples;
        g->known += c->cpu_known ? c->samples : 0;
        g->on_cpu += c->cpu_known && c->on_cpu ? c->samples : 0;
        g->blocked += c->blocked ? c->samples : 0;
        if (c->node == 0 || c->node > t->n)
            continue;
        uint32_t leaf = t->frame[c->node - 1];
        frame_acc *a = &acc[leaf <= t->nframes ? leaf : 0];
        a->self += c->samples;
        a->self_known += c->cpu_known ? c->samples : 0;
        a->self_on_cpu += c->cpu_known && c->on_cpu ? c->samples : 0;
        a->self_blocked += c->blocked ? c->samples : 0;
        /* the leaf's line: the line of its row with the most samples */
        if (c->samples > a->best_line_self || a->best_line == 0) {
            a->best_line_self = c->samples;
            a->best_line = t->line[c->node - 1];
        }
        uint64_t stamp = (uint64_t)r + 1; /* acc is zeroed per group: unique per row */
        for (uint32_t node = c->node; node >= 1 && node <= t->n; node = t->parent[node - 1]) {
            uint32_t f = t->frame[node - 1];
            frame_acc *b = &acc[f <= t->nframes ? f : 0];
            if (b->stamp != stamp) {
                b->stamp = stamp;
                b->total += c->samples;
            }
            if (t->parent[node - 1] >= node)
                break; /* the reader keeps parents before children; never loop */
        }
    }
}

/* The group's TP_STACK_TOP_FUNCTIONS frames with the most self samples. */
static void top_functions(const frame_acc *acc, size_t nframes, tp_stack_group *g)
{
    for (size_t f = 0; f <= nframes; f++) {
        if (!acc[f].self)
            continue;
        tp_stack_function fn = {(uint32_t)f,        acc[f].best_line,  acc[f].self,
                                acc[f].total,       acc[f].self_known, acc[f].self_on_cpu,
                                acc[f].self_blocked};
        size_t at = g->nfunctions;
        while (at > 0 && g->functions[at - 1].self < fn.self)
            at--;
        if (at >= TP_STACK_TOP_FUNCTIONS)
            continue;
        size_t keep = g->nfunctions < TP_STACK_TOP_FUNCTIONS ? g->nfunctions : g->nfunctions - 1;
        memmove(&g->functions[at + 1], &g->functions[at], (keep - at) * sizeof *g->functions);
        g->functions[at] = fn;
        if (g->nfunctions < TP_STACK_TOP_FUNCTIONS)
            g->nfunctions++;
    }
}

/* A group's icicle tree: its stacks with the calls of one function from one
 * call path merged whatever their lines (a box per function), kept as a
 * stack table (core/stack_table.h, line 0); per merged node its samples and
 * the line of the first original node merged into it. */
typedef struct flame_tree {
    tp_stack_table table;
    uint64_t *total; /* by merged id */
    int32_t *line;
    uint32_t *first, *next; /* children lists (index 0 the root), in id order */
} flame_tree;

static void flame_tree_free(flame_tree *m)
{
    tp_stack_table_free(&m->table);
    free(m->total);
    free(m->line);
    free(m->first);
    free(m->next);
}

/* Merges the group's nodes into m. count[] holds each original node's own
 * samples (index 0: empty stacks) and becomes its totals. Two originals
 * merge only when their whole function paths are the same, so no sample
 * passes through both: a merged total is the sum of its originals'. */
static void merge_group(const tp_stack_tree *t, uint64_t *count, flame_tree *m)
{
    memset(m, 0, sizeof *m);
    for (size_t id = t->n; id >= 1; id--)
        if (t->parent[id - 1] < id)
            count[t->parent[id - 1]] += count[id];
    uint32_t *map = tp_xcalloc(t->n + 1, sizeof *map);
    size_t cap = 0, lcap = 0;
    for (size_t id = 1; id <= t->n; id++) {
        uint32_t parent = t->parent[id - 1];
        if (!count[id] || parent >= id || (parent && !map[parent]))
            continue;
        bool made;
        uint32_t to = tp_stack_table_node(&m->table, map[parent], t->frame[id - 1], 0, &made);
        if (!to)
            tp_out_of_memory();
        if (made) {
            m->total = tp_grow(m->total, to, &cap, sizeof *m->total);
            m->line = tp_grow(m->line, to, &lcap, sizeof *m->line);
            m->total[to] = 0;
            m->line[to] = t->line[id - 1];
        }
        m->total[to] += count[id];
        map[id] = to;
    }
    free(map);
    size_t n = m->table.len;
    m->first = tp_xcalloc(n + 1, sizeof *m->first);
    m->next = tp_xcalloc(n + 1, sizeof *m->next);
    for (size_t id = n; id >= 1; id--) { /* backwards: lists come out in id order */
        uint32_t p = m->table.nodes[id - 1].parent;
        m->next[id] = m->first[p];
        m->first[p] = (uint32_t)id;
    }
}

typedef struct visit {
    uint32_t node, depth;
    double x;
} visit;

/* Pushes node's children onto todo, laid out from x, so that the first
 * child is visited first. */
static void push_children(const flame_tree *m, uint32_t node, uint32_t depth, double x,
                          uint64_t samples, visit **todo, size_t *n, size_t *cap)
{
    size_t from = *n;
    for (uint32_t k = m->first[node]; k; k = m->next[k]) {
        *todo = tp_grow(*todo, *n, cap, sizeof **todo);
        (*todo)[(*n)++] = (visit){k, depth, x};
        x += (double)m->total[k] / (double)samples;
    }
    for (size_t i = from, j = *n; j > i + 1; i++) {
        j--;
        visit w = (*todo)[i];
        (*todo)[i] = (*todo)[j];
        (*todo)[j] = w;
    }
}

/* The group's icicle: each merged node wide enough laid out under its
 * parent, depth first. count[]: each original node's own samples. */
static void build_flame(const tp_stack_tree *t, uint64_t *count, tp_stack_group *g)
{
    if (!g->samples)
        return;
    flame_tree m;
    merge_group(t, count, &m);
    visit *todo = NULL;
    size_t ntodo = 0, todo_cap = 0, cap = 0;
    push_children(&m, 0, 0, 0, g->samples, &todo, &ntodo, &todo_cap);
    while (ntodo) {
        visit v = todo[--ntodo];
        double width = (double)m.total[v.node] / (double)g->samples;
        if (width < TP_FLAME_MIN_WIDTH || v.depth >= TP_FLAME_DEPTH)
            continue;
        g->flame = tp_grow(g->flame, g->nflame, &cap, sizeof *g->flame);
        g->flame[g->nflame++] = (tp_flame_rect){
            m.table.nodes[v.node - 1].frame, m.line[v.node], v.depth, v.x, width, m.total[v.node]};
        if (v.depth + 1 > g->flame_depth)
            g->flame_depth = v.depth + 1;
        push_children(&m, v.node, v.depth + 1, v.x, g->samples, &todo, &ntodo, &todo_cap);
    }
    free(todo);
    flame_tree_free(&m);
}

/* By rank; in a rank, the phases and the workers by samples, then the
 * samples outside any region (start-up), then the threads that only waited. */
static int by_rank_then_samples(const void *x, const void *y)
{
    const tp_stack_group *a = x, *b = y;
    if (a->rank != b->rank)
        return (a->rank > b->rank) - (a->rank < b->rank);
    int a_none = !a->phase && !a->workers ? 1 + a->waited : 0,
        b_none = !b->phase && !b->workers ? 1 + b->waited : 0;
    if (a_none != b_none)
        return a_none - b_none;
    return (a->samples < b->samples) - (a->samples > b->samples);
}

/* Whether a row's samples also count in another group of its rank (a user
 * region's: region_within.h), and in which: *to the standard region it
 * ran inside, NULL for the samples outside the phases. */
static bool borrower(const tp_region_withins *w, const tp_stack_count *c, const char **to)
{
    if (!w || c->worker || c->waited || !c->phase)
        return false;
    *to = tp_region_counts_for(w, c->phase);
    return *to != c->phase;
}

/* Whether c is the row of rank's plain group for phase (NULL: outside the
 * regions). */
static bool plain_row(const tp_stack_count *c, int rank, const char *phase)
{
    if (c->rank != rank || c->worker || c->waited)
        return false;
    return phase ? c->phase && strcmp(c->phase, phase) == 0 : !c->phase;
}

/* A row of no samples for each (rank, region or none) that user regions
 * ran inside and that has none of its own, so that it is a group (its
 * samples are all in them). */
static void add_empty_phases(tp_stack_facts *out, const tp_region_withins *w)
{
    size_t n = out->ncounts, cap = n;
    for (size_t j = 0; j < n; j++) {
        const char *to;
        if (!borrower(w, &out->counts[j], &to))
            continue;
        int rank = out->counts[j].rank;
        bool has = false;
        for (size_t i = 0; i < out->ncounts && !has; i++)
            has = plain_row(&out->counts[i], rank, to);
        if (has)
            continue;
        out->counts = tp_grow(out->counts, out->ncounts, &cap, sizeof *out->counts);
        out->counts[out->ncounts++] =
            (tp_stack_count){.rank = rank, .phase = to ? tp_xstrdup(to) : NULL};
    }
}

/* Groups out->counts (rows of out->tree) by rank and what their thread
 * was doing, each with its top functions and (flame) its icicle. A user
 * region's rows also count in the group of the standard region it ran
 * inside (withins; NULL: none do). */
static void group_counts(tp_stack_facts *out, const tp_region_withins *withins, bool flame)
{
    add_empty_phases(out, withins);
    /* rows come by rank, then phase, then worker: a worker's rows of
     * several phases are one group, so gather those first */
    size_t gcap = 0;
    frame_acc *acc = tp_xcalloc(out->tree.nframes + 1, sizeof *acc);
    uint64_t *per_node = tp_xcalloc(out->tree.n + 1, sizeof *per_node);
    bool *done = tp_xcalloc(out->ncounts + 1, sizeof *done);
    tp_stack_count *rows = tp_xcalloc(out->ncounts + 1, sizeof *rows);
    for (size_t i = 0; i < out->ncounts; i++) {
        if (done[i])
            continue;
        size_t n = 0;
        uint64_t borrowed = 0;
        const tp_stack_count *key = &out->counts[i];
        for (size_t j = i; j < out->ncounts; j++)
            if (!done[j] && same_group(key, &out->counts[j])) {
                rows[n++] = out->counts[j];
                done[j] = true;
            }
        for (size_t j = 0; !key->worker && !key->waited && j < out->ncounts; j++) {
            const char *to;
            if (borrower(withins, &out->counts[j], &to) &&
                plain_row(key, out->counts[j].rank, to)) {
                rows[n++] = out->counts[j];
                borrowed += out->counts[j].samples;
            }
        }
        out->groups = tp_grow(out->groups, out->n, &gcap, sizeof *out->groups);
        tp_stack_group *g = &out->groups[out->n++];
        memset(g, 0, sizeof *g);
        g->rank = key->rank;
        g->workers = key->worker;
        g->waited = !g->workers && key->waited;
        g->phase = g->workers || g->waited ? NULL : key->phase;
        g->borrowed = borrowed;
        const tp_region_within *in = g->phase ? tp_region_within_find(withins, g->phase) : NULL;
        g->within = in && !g->borrowed ? in->within : NULL;
        memset(acc, 0, (out->tree.nframes + 1) * sizeof *acc);
        count_group(&out->tree, rows, n, acc, g);
        top_functions(acc, out->tree.nframes, g);
        if (flame) {
            memset(per_node, 0, (out->tree.n + 1) * sizeof *per_node);
            for (size_t r = 0; r < n; r++)
                per_node[rows[r].node <= out->tree.n ? rows[r].node : 0] += rows[r].samples;
            build_flame(&out->tree, per_node, g);
        }
        out->samples += g->samples - g->borrowed;
    }
    free(acc);
    free(done);
    free(rows);
    free(per_node);
    if (out->n) /* no groups: no array (qsort's is declared never NULL) */
        qsort(out->groups, out->n, sizeof *out->groups, by_rank_then_samples);
}

bool tp_stack_facts_build(tp_run *run, tp_region_withins *withins, tp_stack_facts *out, char *err,
                          size_t cap)
{
    memset(out, 0, sizeof *out);
    out->dropped = (uint64_t)tp_run_stack_samples_dropped(run); /* where all were, none kept */
    if (!tp_run_has_stacks(run))
        return true;
    if (!tp_stack_tree_load(run, &out->tree, err, cap) ||
        !tp_run_stack_counts(run, &out->counts, &out->ncounts, err, cap) ||
        !tp_region_withins_once(run, withins, err, cap))
        return false;
    tp_region_withins_copy(withins, &out->withins);
    group_counts(out, &out->withins, true);
    return true;
}

/* A span's samples while they are counted: weighted rows of one group's
 * key (the region's text interned in phases[phase - 1], 0 for none). */
typedef struct span_row {
    int rank;
    bool worker, on_cpu, cpu_known, blocked;
    size_t phase;
    uint32_t node;
    double samples;
} span_row;

typedef struct span_ctx {
    int64_t t0_ns, t1_ns;
    span_row *rows;
    size_t n, cap;
    char **phases;
    size_t nphases, pcap;
} span_ctx;

static size_t intern_phase(span_ctx *c, const char *phase)
{
    if (!phase)
        return 0;
    for (size_t i = 0; i < c->nphases; i++)
        if (strcmp(c->phases[i], phase) == 0)
            return i + 1;
    c->phases = tp_grow(c->phases, c->nphases, &c->pcap, sizeof *c->phases);
    c->phases[c->nphases++] = tp_xstrdup(phase);
    return c->nphases;
}

/* Adds the part of a run of samples inside the span (a run that straddles
 * a bound counts for its part inside). */
double tp_stack_run_part(const tp_stack_thread_run *run, int64_t a_ns, int64_t b_ns)
{
    int64_t end = tp_ns_add(run->t_ns, run->span_ns);
    if (end < a_ns || run->t_ns > b_ns)
        return 0;
    int64_t lo = run->t_ns > a_ns ? run->t_ns : a_ns, hi = end < b_ns ? end : b_ns;
    return run->span_ns <= 0
               ? (double)run->count
               : (double)run->count * ((double)hi - (double)lo) / (double)run->span_ns;
}

static void add_span_run(void *ctx, const tp_stack_thread_run *run)
{
    span_ctx *c = ctx;
    double w = tp_stack_run_part(run, c->t0_ns, c->t1_ns);
    if (!(w > 0))
        return;
    c->rows = tp_grow(c->rows, c->n, &c->cap, sizeof *c->rows);
    c->rows[c->n++] = (span_row){run->rank,
                                 run->worker,
                                 tp_stack_state_on_cpu(run->state),
                                 tp_stack_state_known(run->state),
                                 tp_stack_state_blocked(run->state),
                                 intern_phase(c, run->phase),
                                 run->node,
                                 w};
}

static int by_span_key(const void *x, const void *y)
{
    const span_row *a = x, *b = y;
    if (a->rank != b->rank)
        return (a->rank > b->rank) - (a->rank < b->rank);
    if (a->worker != b->worker)
        return (int)a->worker - (int)b->worker;
    if (a->phase != b->phase)
        return (a->phase > b->phase) - (a->phase < b->phase);
    if (a->node != b->node)
        return (a->node > b->node) - (a->node < b->node);
    return (a->blocked * 4 + a->on_cpu * 2 + a->cpu_known) -
           (b->blocked * 4 + b->on_cpu * 2 + b->cpu_known);
}

static bool same_span_key(const span_row *a, const span_row *b) { return !by_span_key(a, b); }

/* A pass over the samples under way for a span's facts. */
struct tp_span_pass {
    span_ctx c;
    tp_stack_facts *out;
    const tp_region_withins *withins;
};

tp_span_pass *tp_stack_facts_over_begin(tp_run *run, const tp_regime *g,
                                        const tp_region_withins *withins, tp_stack_facts *out,
                                        tp_stack_reader *reader, char *err, size_t cap, bool *ok)
{
    memset(out, 0, sizeof *out);
    *reader = (tp_stack_reader){0};
    *ok = true;
    if (!tp_run_has_stacks(run) || tp_run_summary_only(run) || !(g->t1_s >= g->t0_s))
        return NULL;
    if (!(*ok = tp_stored_stack_counts_latest(run, g->first_step, g->last_step, &out->counts,
                                              &out->ncounts, err, cap)))
        return NULL;
    if (out->ncounts) { /* the recorder's, over the same steps */
        if ((*ok = tp_stack_tree_load(run, &out->tree, err, cap)))
            group_counts(out, withins, false);
        return NULL;
    }
    if (!(*ok = tp_stack_tree_load(run, &out->tree, err, cap)))
        return NULL;
    tp_span_pass *p = tp_xcalloc(1, sizeof *p);
    p->out = out;
    p->withins = withins;
    p->c = (span_ctx){.t0_ns = tp_ns_round_s(g->t0_s), .t1_ns = tp_ns_round_s(g->t1_s)};
    *reader = (tp_stack_reader){p->c.t0_ns, add_span_run, &p->c};
    return p;
}

void tp_stack_facts_over_end(tp_span_pass *p, bool read)
{
    if (!p)
        return;
    span_ctx *c = &p->c;
    tp_stack_facts *out = p->out;
    if (read && c->n) {
        qsort(c->rows, c->n, sizeof *c->rows, by_span_key);
        out->counts = tp_xcalloc(c->n, sizeof *out->counts);
        for (size_t i = 0; i < c->n;) {
            double w = 0;
            size_t j = i;
            for (; j < c->n && same_span_key(&c->rows[i], &c->rows[j]); j++)
                w += c->rows[j].samples;
            const span_row *r = &c->rows[i];
            /* a crafted file's counts can sum past any integer: held at 2^62 */
            uint64_t samples = w < 0x1p62 ? (uint64_t)llround(w) : (uint64_t)1 << 62;
            if (samples)
                out->counts[out->ncounts++] =
                    (tp_stack_count){.rank = r->rank,
                                     .phase = r->phase ? tp_xstrdup(c->phases[r->phase - 1]) : NULL,
                                     .worker = r->worker,
                                     .node = r->node,
                                     .on_cpu = r->on_cpu,
                                     .cpu_known = r->cpu_known,
                                     .blocked = r->blocked,
                                     .samples = samples};
            i = j;
        }
        group_counts(out, p->withins, false);
    }
    for (size_t i = 0; i < c->nphases; i++)
        free(c->phases[i]);
    free(c->phases);
    free(c->rows);
    free(p);
}

bool tp_stack_facts_build_over(tp_run *run, const tp_regime *g, tp_region_withins *once,
                               tp_stack_facts *out, char *err, size_t cap)
{
    tp_stack_reader reader;
    tp_region_withins withins;
    if (!tp_region_withins_once(run, once, err, cap)) {
        memset(out, 0, sizeof *out);
        return false;
    }
    tp_region_withins_copy(once, &withins);
    bool ok;
    tp_span_pass *p = tp_stack_facts_over_begin(run, g, &withins, out, &reader, err, cap, &ok);
    ok = ok && tp_run_each_stack_run_to(run, &reader, 1, err, cap);
    tp_stack_facts_over_end(p, ok);
    out->withins = withins; /* the groups' texts point into it */
    return ok;
}

void tp_stack_facts_free(tp_stack_facts *f)
{
    tp_stack_tree_free(&f->tree);
    tp_stack_counts_free(f->counts, f->ncounts);
    tp_region_withins_free(&f->withins);
    for (size_t i = 0; i < f->n; i++)
        free(f->groups[i].flame);
    free(f->groups);
    memset(f, 0, sizeof *f);
}

const char *tp_stack_facts_function(const tp_stack_facts *f, uint32_t frame)
{
    return frame >= 1 && frame <= f->tree.nframes && f->tree.function[frame - 1]
               ? f->tree.function[frame - 1]
               : "?";
}

const char *tp_stack_facts_file(const tp_stack_facts *f, uint32_t frame)
{
    return frame >= 1 && frame <= f->tree.nframes && f->tree.file[frame - 1]
               ? f->tree.file[frame - 1]
               : "?";
}
