/* stack_own.c: see stack_own.h. */
#include "analyze/stack_own.h"

#include <stdlib.h>
#include <string.h>

#include "util/oom.h"

bool tp_stack_file_ours(const char *file)
{
    if (!file)
        return false;
    const char *base = strrchr(file, '/');
    if (!base || base - file < 10 || strncmp(base - 10, "/trainprof", 10) != 0)
        return false;
    base++;
    size_t len = strlen(base);
    if (len < 4 || strcmp(base + len - 3, ".py") != 0)
        return false;
    /* the package's modules: its face, its torch patches, its private ones */
    return base[0] == '_' || strcmp(base, "torch.py") == 0 || strcmp(base, "parquet.py") == 0;
}

void tp_stack_tree_hide_own(tp_stack_tree *t)
{
    bool *ours = tp_xcalloc(t->nframes + 1, sizeof *ours);
    for (size_t f = 1; f <= t->nframes; f++)
        ours[f] = tp_stack_file_ours(t->file[f - 1]);
    uint32_t *kept = tp_xcalloc(t->n + 1, sizeof *kept); /* each node's nearest kept node */
    for (uint32_t id = 1; id <= t->n; id++) {
        uint32_t parent = t->parent[id - 1], frame = t->frame[id - 1];
        if (parent >= id) { /* a damaged tree: left as it is */
            kept[id] = id;
            continue;
        }
        uint32_t up = kept[parent]; /* parents come first: already settled */
        if (frame >= 1 && frame <= t->nframes && ours[frame] && up != 0) {
            t->frame[id - 1] = t->frame[up - 1];
            t->line[id - 1] = t->line[up - 1];
            t->parent[id - 1] = t->parent[up - 1];
            kept[id] = up;
        } else {
            t->parent[id - 1] = up;
            kept[id] = id;
        }
    }
    free(kept);
    free(ours);
}

bool tp_stack_tree_load(tp_run *run, tp_stack_tree *out, char *err, size_t cap)
{
    if (!tp_run_stack_tree(run, out, err, cap))
        return false;
    tp_stack_tree_hide_own(out);
    return true;
}
