/* stall_where.c: see stall_where.h. */
#include "record/stall_where.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/stack_own.h"
#include "clock.h"
#include "store/reader_live.h"
#include "store/reader_stacks.h"
#include "util/utf8.h"

void tp_stall_where_words(char *out, size_t cap, const tp_stall_where *w)
{
    if (!w->place[0]) {
        snprintf(out, cap, "%s", "");
        return;
    }
    snprintf(out, cap, ", last seen in %s%s%s", w->place, w->doing ? ", " : "",
             tp_doing_words[w->doing]);
}

/* A pass's finding for the followed ranks: their sample's node and state,
 * the words made again (from the tree, loaded once a pass) where they
 * changed. */
typedef struct pass {
    tp_stall_places *p;
    tp_stack_tree tree;
    bool loaded, failed;
    bool changed[TP_STALL_PLACES_MAX];
} pass;

static void found(void *ctx, int32_t rank, uint32_t node, int state)
{
    pass *c = ctx;
    for (size_t i = 0; i < c->p->n; i++) {
        tp_stall_where *w = &c->p->at[i].where;
        if (c->p->at[i].rank != rank || (w->node == node && w->state == state))
            continue;
        char err[160], place[800];
        if (!c->loaded && !c->failed)
            c->failed = !(c->loaded = tp_stack_tree_load(c->p->run, &c->tree, err, sizeof err));
        *w = (tp_stall_where){.node = node, .state = state};
        c->changed[i] = true;
        if (!c->loaded) { /* no words: the next pass tries again */
            w->node = 0;
            return;
        }
        tp_report_place(place, sizeof place, &c->tree, node,
                        tp_stack_outside_stdlib(&c->tree, node));
        tp_text_escape(w->place, sizeof w->place, place);
        bool known = tp_stack_state_known(state);
        w->doing = tp_doing_of(known, known && tp_stack_state_on_cpu(state),
                               tp_stack_state_blocked(state));
        return;
    }
}

/* Follows the ranks stalled now (forgetting, here and in live, the others);
 * whether one of them has no place yet. */
static bool follow(tp_stall_places *p, tp_live *live, const int32_t *stalled, size_t n)
{
    for (size_t i = 0; i < p->n;) {
        bool still = false;
        for (size_t k = 0; k < n && !still; k++)
            still = stalled[k] == p->at[i].rank;
        if (still) {
            i++;
            continue;
        }
        tp_live_set_where(live, p->at[i].rank, NULL, NULL);
        p->at[i] = p->at[--p->n];
    }
    bool missing = false;
    for (size_t k = 0; k < n; k++) {
        size_t i = 0;
        while (i < p->n && p->at[i].rank != stalled[k])
            i++;
        if (i == p->n) {
            p->at[p->n].rank = stalled[k];
            p->at[p->n++].where = (tp_stall_where){0};
        }
        missing = missing || !p->at[i].where.place[0];
    }
    return missing;
}

void tp_stall_places_refresh(tp_stall_places *p, tp_live *live, uint64_t live_now_ns, int32_t rank,
                             char *out, size_t cap)
{
    snprintf(out, cap, "%s", "");
    int32_t stalled[TP_STALL_PLACES_MAX];
    size_t n = tp_live_stalled_ranks(live, live_now_ns, stalled, TP_STALL_PLACES_MAX);
    n = n < TP_STALL_PLACES_MAX ? n : TP_STALL_PLACES_MAX;
    bool missing = follow(p, live, stalled, n);
    if (n && p->path && !p->run && p->tries < 5) {
        char err[256];
        if (!(p->run = tp_run_open(p->path, err, sizeof err)))
            p->tries++;
    }
    uint64_t now = tp_clock_mono_ns();
    if (n && p->run && now - p->read_ns >= (missing ? 1000000000ull : TP_STALL_PLACES_EVERY_NS)) {
        p->read_ns = now;
        pass c = {.p = p};
        tp_run_live_wheres(p->run, found, &c);
        if (c.loaded)
            tp_stack_tree_free(&c.tree);
        for (size_t i = 0; i < p->n; i++)
            if (c.changed[i]) {
                const tp_stall_where *w = &p->at[i].where;
                tp_live_set_where(live, p->at[i].rank, w->place[0] ? w->place : NULL,
                                  tp_doing_keys[w->doing] ? tp_doing_keys[w->doing] : "");
            }
    }
    for (size_t i = 0; i < p->n; i++)
        if (p->at[i].rank == rank)
            tp_stall_where_words(out, cap, &p->at[i].where);
}

void tp_stall_places_close(tp_stall_places *p)
{
    if (p->path)
        tp_run_close(p->run);
    p->run = NULL;
    p->n = 0;
}

static bool same_place(const tp_stall_where *a, const tp_stall_where *b)
{
    return a->doing == b->doing && strcmp(a->place, b->place) == 0;
}

static int by_rank(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* "rank 3", or "ranks 0, 2-4" of ranks (ascending). */
static void ranks_text(char *out, size_t cap, const int32_t *ranks, size_t n)
{
    size_t len = (size_t)snprintf(out, cap, "%s", n == 1 ? "rank " : "ranks ");
    for (size_t i = 0; i < n && len < cap;) {
        size_t j = i;
        while (j + 1 < n && ranks[j + 1] == ranks[j] + 1)
            j++;
        const char *sep = i ? ", " : "";
        len += (size_t)(j > i ? snprintf(out + len, cap - len, "%s%d-%d", sep, (int)ranks[i],
                                         (int)ranks[j])
                              : snprintf(out + len, cap - len, "%s%d", sep, (int)ranks[i]));
        i = j + 1;
    }
}

bool tp_stall_places_group(const tp_stall_places *p, int32_t except, size_t *from, char *out,
                           size_t cap)
{
    for (size_t i = *from; i < p->n; i++) {
        const tp_stall_where *w = &p->at[i].where;
        bool told = p->at[i].rank == except; /* or in an earlier group */
        for (size_t j = 0; j < i && !told; j++)
            told = p->at[j].rank != except && same_place(&p->at[j].where, w);
        if (told)
            continue;
        int32_t ranks[TP_STALL_PLACES_MAX];
        size_t n = 0;
        for (size_t j = i; j < p->n; j++)
            if (p->at[j].rank != except && same_place(&p->at[j].where, w))
                ranks[n++] = p->at[j].rank;
        qsort(ranks, n, sizeof *ranks, by_rank);
        char who[256], words[900];
        ranks_text(who, sizeof who, ranks, n);
        tp_stall_where_words(words, sizeof words, w);
        snprintf(out, cap, "%s%s", who, words);
        *from = i + 1;
        return true;
    }
    return false;
}
