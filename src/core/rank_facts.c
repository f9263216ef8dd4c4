/* rank_facts.c: freeing rank facts, and finding a rank's. */
#include "core/rank_facts.h"

#include <stdlib.h>
#include <string.h>

void tp_ranks_free(tp_ranks *r)
{
    free(r->rows);
    memset(r, 0, sizeof *r);
}

static int rank_order(const void *x, const void *y)
{
    const tp_rank_row *a = x, *b = y;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

const tp_rank_row *tp_ranks_find(const tp_ranks *r, int rank)
{
    tp_rank_row key = {.rank = rank};
    return r->n ? bsearch(&key, r->rows, r->n, sizeof *r->rows, rank_order) : NULL;
}
