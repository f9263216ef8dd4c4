/* timing_facts.c: freeing timing facts. */
#include "core/timing_facts.h"

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
