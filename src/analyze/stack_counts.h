/* stack_counts.h: a run's stack samples counted by (rank, phase, worker,
 * node, state) from a pass over them that other readers share (the
 * recorder's summary: its own cost, the changes' function causes, the
 * latest pace), as store/reader_stacks.h's tp_stack_counts_sql counts them
 * in SQL: the same groups, the same order, the same waited threads
 * (TP_STACK_STATE_WAITED), where SQL made a second pass over the samples to
 * find those and sorted every sample to group them. A crafted file's counts
 * below 1 count 1, and its node ids out of range are node 0, as every other
 * reader of the runs takes them. No words. */
#ifndef TP_ANALYZE_STACK_COUNTS_H
#define TP_ANALYZE_STACK_COUNTS_H

#include <stdbool.h>
#include <stddef.h>

#include "store/reader.h"
#include "store/reader_stacks.h"

/* A count under way: begin sets *reader (every run, from the start), end
 * gives the counts ordered by rank, phase (none first), worker, node and
 * state (*out, *n: tp_stack_counts_free them) where the pass read them all
 * (read; else none), and frees the pass. */
typedef struct tp_counts_pass tp_counts_pass;
tp_counts_pass *tp_stack_counts_begin(tp_stack_reader *reader);
void tp_stack_counts_end(tp_counts_pass *p, bool read, tp_stack_count **out, size_t *n);

#endif
