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

bool tp_stack_file_stdlib(const char *file)
{
    if (!file)
        return false;
    if (strncmp(file, "<frozen ", 8) == 0)
        return true;
    /* the last "/lib/python3.N/" of the path: a virtual environment's too */
    const char *lib = NULL;
    for (const char *at = strstr(file, "/lib/python"); at; at = strstr(at + 1, "/lib/python"))
        lib = at;
    if (!lib)
        return false;
    const char *version = lib + strlen("/lib/python");
    size_t digits = strspn(version, "0123456789.");
    if (digits == 0 || version[digits] != '/')
        return false;
    const char *rest = version + digits + 1;
    return strncmp(rest, "site-packages/", 14) != 0 && strncmp(rest, "dist-packages/", 14) != 0;
}

uint32_t tp_stack_outside_stdlib(const tp_stack_tree *t, uint32_t node)
{
    for (uint32_t at = node; at >= 1 && at <= t->n; at = t->parent[at - 1]) {
        uint32_t frame = t->frame[at - 1];
        if (frame < 1 || frame > t->nframes || !tp_stack_file_stdlib(t->file[frame - 1]))
            return at;
    }
    return node;
}

/* Modules of ours that work for trainprof itself: what their functions call
 * (torch's CUDA events and streams, its profiler, a model's parameters) is
 * our work, not the user's, and is taken for the user's frame above as our
 * own frames are. The few functions in them that wrap a call of the user's
 * instead (the call they stand in for is the user's work) are named in
 * wrappers, by the last part of their qualified name (3.10 and older give
 * only that). tests/py/test_stacks_own.py holds these names to the package. */
static const struct {
    const char *module; /* under trainprof/ */
    const char *wrappers[2];
} own_work[] = {
    {"patches/device.py", {"capture_begin", "capture_end"}}, /* device times */
    {"runtime/ops.py", {"started"}},                         /* capture windows */
    {"steps/facts.py", {NULL}},                              /* the run's facts */
};

/* Whether file ends in "/trainprof/<module>". */
static bool module_is(const char *file, const char *module)
{
    size_t n = strlen(file), m = strlen(module), k = sizeof "/trainprof/" - 1;
    return n >= m + k && strcmp(file + n - m, module) == 0 &&
           strncmp(file + n - m - k, "/trainprof/", k) == 0;
}

bool tp_stack_frame_works_for_us(const char *file, const char *function)
{
    if (!file || !function)
        return false;
    const char *dot = strrchr(function, '.');
    const char *last = dot ? dot + 1 : function;
    for (size_t i = 0; i < sizeof own_work / sizeof *own_work; i++) {
        if (!module_is(file, own_work[i].module))
            continue;
        for (size_t w = 0; w < 2 && own_work[i].wrappers[w]; w++)
            if (strcmp(last, own_work[i].wrappers[w]) == 0)
                return false;
        return true;
    }
    return false;
}

void tp_stack_own_work(const tp_stack_tree *t, unsigned char *out)
{
    bool *under = tp_xcalloc(t->n + 1, sizeof *under); /* a node our own work called */
    out[0] = TP_WORK_USERS;
    for (uint32_t id = 1; id <= t->n; id++) {
        uint32_t parent = t->parent[id - 1], frame = t->frame[id - 1];
        bool settled = parent < id; /* parents come first; a damaged tree's node stands alone */
        const char *file = frame >= 1 && frame <= t->nframes ? t->file[frame - 1] : NULL;
        const char *function = file ? t->function[frame - 1] : NULL;
        if (settled && under[parent]) { /* what our own work calls is ours */
            under[id] = true;
            out[id] = out[parent];
        } else if (tp_stack_frame_works_for_us(file, function)) {
            under[id] = true;
            out[id] = module_is(file, "patches/device.py") ? TP_WORK_DEVICE_TIMES
                      : module_is(file, "runtime/ops.py")  ? TP_WORK_WINDOWS
                                                           : TP_WORK_WRAPPERS;
        } else {
            out[id] = file && tp_stack_file_ours(file) ? TP_WORK_WRAPPERS : TP_WORK_USERS;
        }
    }
    free(under);
}

enum { FRAME_USERS, FRAME_OURS, FRAME_WORKS_FOR_US };

void tp_stack_tree_hide_own(tp_stack_tree *t)
{
    unsigned char *kind = tp_xcalloc(t->nframes + 1, 1);
    for (size_t f = 1; f <= t->nframes; f++)
        kind[f] = tp_stack_frame_works_for_us(t->file[f - 1], t->function[f - 1])
                      ? FRAME_WORKS_FOR_US
                  : tp_stack_file_ours(t->file[f - 1]) ? FRAME_OURS
                                                       : FRAME_USERS;
    uint32_t *kept = tp_xcalloc(t->n + 1, sizeof *kept);         /* each node's nearest kept node */
    bool *ours_below = tp_xcalloc(t->n + 1, sizeof *ours_below); /* its callees are our work */
    for (uint32_t id = 1; id <= t->n; id++) {
        uint32_t parent = t->parent[id - 1], frame = t->frame[id - 1];
        if (parent >= id) { /* a damaged tree: left as it is */
            kept[id] = id;
            continue;
        }
        uint32_t up = kept[parent]; /* parents come first: already settled */
        int k = frame >= 1 && frame <= t->nframes ? kind[frame] : FRAME_USERS;
        ours_below[id] = k == FRAME_WORKS_FOR_US || ours_below[parent];
        if ((k != FRAME_USERS || ours_below[parent]) && up != 0) {
            t->frame[id - 1] = t->frame[up - 1];
            t->line[id - 1] = t->line[up - 1];
            t->parent[id - 1] = t->parent[up - 1];
            kept[id] = up;
        } else {
            t->parent[id - 1] = up;
            kept[id] = id;
        }
    }
    free(ours_below);
    free(kept);
    free(kind);
}

bool tp_stack_tree_load(tp_run *run, tp_stack_tree *out, char *err, size_t cap)
{
    if (!tp_run_stack_tree(run, out, err, cap))
        return false;
    tp_stack_tree_hide_own(out);
    return true;
}
