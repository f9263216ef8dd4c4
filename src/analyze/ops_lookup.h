/* ops_lookup.h: the look-ups of a capture window's reading (analyze/ops.c):
 * which operator launched a device activity, and each profiler thread's open
 * operators, both by open hashing (a crafted window may name hundreds of
 * thousands of threads or correlations: no scan per event). */
#ifndef TP_ANALYZE_OPS_LOOKUP_H
#define TP_ANALYZE_OPS_LOOKUP_H

#include <stddef.h>
#include <stdint.h>

/* correlation id -> the operator that launched it (open addressing). */
typedef struct tp_launch_map {
    int64_t *keys;
    long *ops;
    size_t cap;
} tp_launch_map;

/* A thread's open operators (indices into the events), innermost last. */
typedef struct tp_open_ops {
    uint32_t thread;
    long *v;
    size_t n, cap;
} tp_open_ops;

/* Every profiler thread's open operators, found by thread through an open
 * hash (a window may name hundreds of thousands of threads: a crafted one). */
typedef struct tp_thread_stacks {
    tp_open_ops *v;
    size_t n, cap;
    uint32_t *slot; /* index into v plus one, 0 empty; nslots a power of two */
    size_t nslots;
} tp_thread_stacks;

/* Sets key's operator (keys: INT64_MIN marks an empty slot; cap a power of
 * two with room left). */
void tp_launch_put(tp_launch_map *m, int64_t key, long op);
/* key's operator, -1 where none. */
long tp_launch_get(const tp_launch_map *m, int64_t key);

/* thread's open operators, made empty the first time. */
tp_open_ops *tp_thread_stack_of(tp_thread_stacks *t, uint32_t thread);
void tp_thread_stacks_free(tp_thread_stacks *t);

#endif
