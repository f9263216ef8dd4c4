/* stall_where.c: see stall_where.h. */
#include "record/stall_where.h"

#include <stdio.h>

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
