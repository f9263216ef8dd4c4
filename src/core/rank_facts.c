/* rank_facts.c: freeing rank facts. */
#include "core/rank_facts.h"

#include <stdlib.h>
#include <string.h>

void tp_ranks_free(tp_ranks *r)
{
    free(r->rows);
    memset(r, 0, sizeof *r);
}
