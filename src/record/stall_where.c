/* stall_where.c: see stall_where.h. */
#include "record/stall_where.h"

#include <stdio.h>

#include "analyze/stack_own.h"
#include "store/reader_live.h"
#include "store/reader_stacks.h"
#include "util/utf8.h"

bool tp_stall_where_read(tp_run *run, int32_t rank, tp_stall_where *w)
{
    uint32_t node;
    int state;
    if (!run || !tp_run_live_where(run, rank, &node, &state))
        node = 0, state = 0;
    if (node == w->node && state == w->state)
        return w->place[0] != '\0';
    *w = (tp_stall_where){.node = node, .state = state};
    tp_stack_tree tree;
    char err[160], place[800];
    if (!node || !tp_stack_tree_load(run, &tree, err, sizeof err))
        return false;
    tp_report_place(place, sizeof place, &tree, node, tp_stack_outside_stdlib(&tree, node));
    tp_stack_tree_free(&tree);
    tp_text_escape(w->place, sizeof w->place, place);
    bool known = tp_stack_state_known(state);
    w->doing =
        tp_doing_of(known, known && tp_stack_state_on_cpu(state), tp_stack_state_blocked(state));
    return w->place[0] != '\0';
}

void tp_stall_where_words(char *out, size_t cap, const tp_stall_where *w)
{
    if (!w->place[0]) {
        snprintf(out, cap, "%s", "");
        return;
    }
    snprintf(out, cap, ", last seen in %s%s%s", w->place, w->doing ? ", " : "",
             tp_doing_words[w->doing]);
}

/* The place followed for rank, made where there is room; NULL beyond. */
static tp_stall_where *place_of(tp_stall_places *p, int32_t rank)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->at[i].rank == rank)
            return &p->at[i].where;
    if (p->n == TP_STALL_PLACES_MAX)
        return NULL;
    p->at[p->n].rank = rank;
    p->at[p->n].where = (tp_stall_where){0};
    return &p->at[p->n++].where;
}

void tp_stall_places_refresh(tp_stall_places *p, tp_live *live, int32_t rank, char *out, size_t cap)
{
    snprintf(out, cap, "%s", "");
    int32_t stalled[TP_STALL_PLACES_MAX];
    size_t n = tp_live_stalled_ranks(live, stalled, TP_STALL_PLACES_MAX);
    n = n < TP_STALL_PLACES_MAX ? n : TP_STALL_PLACES_MAX;
    /* the ranks no longer stalled forgotten, here and in live */
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
    if (n && !p->run && p->tries < 5) {
        char err[256];
        if (!(p->run = tp_run_open(p->path, err, sizeof err)))
            p->tries++;
    }
    for (size_t k = 0; k < n && p->run; k++) {
        tp_stall_where *w = place_of(p, stalled[k]);
        if (!w)
            break;
        uint32_t node = w->node;
        int state = w->state;
        bool said = tp_stall_where_read(p->run, stalled[k], w);
        if (node != w->node || state != w->state || !said)
            tp_live_set_where(live, stalled[k], said ? w->place : NULL,
                              tp_doing_keys[w->doing] ? tp_doing_keys[w->doing] : "");
        if (stalled[k] == rank)
            tp_stall_where_words(out, cap, w);
    }
}

void tp_stall_places_close(tp_stall_places *p)
{
    tp_run_close(p->run);
    p->run = NULL;
    p->n = 0;
}
