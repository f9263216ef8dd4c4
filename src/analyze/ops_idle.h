/* ops_idle.h: what the host's step thread was running while the GPU sat
 * idle in a capture window's steps: the innermost functions of its sampled
 * stacks that fell in each idle gap, counted per idle row (core/ops_facts.h's
 * tp_gpu_idle_fact), and the top one named. */
#ifndef TP_ANALYZE_OPS_IDLE_H
#define TP_ANALYZE_OPS_IDLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/ops_facts.h"
#include "store/reader_ops.h"
#include "store/reader_stacks.h"

typedef struct tp_ops_idle {
    struct tp_ops_idle_count {
        size_t row;    /* the idle row */
        uint32_t node; /* an innermost node (its frame and line) */
        uint64_t samples;
    } * v;
    size_t n, cap;
} tp_ops_idle;

/* Counts the samples of s[0..n) whose times fall in [g0, g1) for idle row
 * `row` (a run of count samples spreads them evenly over its span). */
void tp_ops_idle_note(tp_ops_idle *acc, size_t row, const tp_run_op_sample *s, size_t n, int64_t g0,
                      int64_t g1);

/* Names each idle row's top function (its frame's text from tree, interned
 * by intern) with its share of the row's samples and their number; frees
 * acc. A sample is told by its innermost frame outside the standard library
 * (the user's line that called os.stat, not os.stat's), where it has one. */
void tp_ops_idle_finish(tp_ops_idle *acc, tp_ops_facts *f, const tp_stack_tree *tree,
                        const char *(*intern)(tp_ops_facts *f, const char *text));

#endif
