/* timing_facts.c: freeing timing facts, and finding a rank's. */
#include "core/timing_facts.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void tp_timings_free(tp_timings *t)
{
    for (size_t i = 0; i < t->nrows; i++)
        free(t->rows[i].name);
    free(t->rows);
    free(t->steps);
    free(t->epochs);
    memset(t, 0, sizeof *t);
}

static int row_order(const void *x, const void *y)
{
    const tp_timing_row *a = x, *b = y;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return strcmp(a->name, b->name);
}

static int step_order(const void *x, const void *y)
{
    const tp_step_row *a = x, *b = y;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

const tp_timing_row *tp_timings_row(const tp_timings *t, int rank, const char *name)
{
    tp_timing_row key = {.rank = rank, .name = (char *)name};
    return t->nrows ? bsearch(&key, t->rows, t->nrows, sizeof *t->rows, row_order) : NULL;
}

const tp_step_row *tp_timings_steps_of(const tp_timings *t, int rank)
{
    tp_step_row key = {.rank = rank};
    return t->nsteps ? bsearch(&key, t->steps, t->nsteps, sizeof *t->steps, step_order) : NULL;
}

/* Whether n items of size bytes at v are in order (no two equal keys
 * out of place). */
static bool in_order(const void *v, size_t n, size_t size, int (*order)(const void *, const void *))
{
    for (size_t i = 1; i < n; i++)
        if (order((const char *)v + (i - 1) * size, (const char *)v + i * size) > 0)
            return false;
    return true;
}

void tp_timings_order(tp_timings *t)
{
    if (!in_order(t->rows, t->nrows, sizeof *t->rows, row_order))
        qsort(t->rows, t->nrows, sizeof *t->rows, row_order);
    if (!in_order(t->steps, t->nsteps, sizeof *t->steps, step_order))
        qsort(t->steps, t->nsteps, sizeof *t->steps, step_order);
}
