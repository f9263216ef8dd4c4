/* stack_own.c: see stack_own.h. */
#include "analyze/stack_own.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "util/oom.h"

/* The package's subpackages (python/trainprof/ by role). */
static const char *const subpackages[] = {"startup", "steps", "patches", "frameworks", "runtime"};

/* Whether the directory that ends at end (exclusive) in file is named
 * name: "/name" right before end. */
static bool directory_is(const char *file, const char *end, const char *name)
{
    size_t n = strlen(name);
    return (size_t)(end - file) >= n + 1 && end[-(ptrdiff_t)n - 1] == '/' &&
           strncmp(end - n, name, n) == 0;
}

bool tp_stack_file_ours(const char *file)
{
    if (!file)
        return false;
    const char *base = strrchr(file, '/');
    if (!base)
        return false;
    size_t len = strlen(base + 1);
    if (len < 4 || strcmp(base + 1 + len - 3, ".py") != 0)
        return false;
    if (directory_is(file, base, "trainprof")) /* its face, and its private modules */
        return base[1] == '_' || strcmp(base + 1, "torch.py") == 0 ||
               strcmp(base + 1, "parquet.py") == 0;
    for (size_t i = 0; i < sizeof subpackages / sizeof *subpackages; i++) {
        size_t n = strlen(subpackages[i]);
        if (directory_is(file, base, subpackages[i]) &&
            directory_is(file, base - n - 1, "trainprof"))
            return true; /* trainprof/<subpackage>/<module>.py */
    }
    return false;
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
