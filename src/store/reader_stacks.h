/* reader_stacks.h: a run's sampled Python stacks (schema 8), read for the
 * analysis: the tree of stack nodes with each frame's function and file, and
 * the samples counted by (rank, region open, worker process, node, on a
 * CPU or in state D). Files from before schema 8, and runs recorded with stack sampling
 * off, have none. Reading commands stop on out of memory (util/oom.h). */
#ifndef TP_STORE_READER_STACKS_H
#define TP_STORE_READER_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/batch.h"
#include "store/reader.h"

/* The tree: node ids 1..n, each with its parent (0: outermost), frame and
 * line; frames 1..nframes with their texts (frame 0 and ids the file lacks
 * read "?"). */
typedef struct tp_stack_tree {
    uint32_t *parent, *frame; /* by node id - 1 */
    int32_t *line;
    size_t n;
    char **function, **file; /* by frame id - 1 */
    size_t nframes;
} tp_stack_tree;

/* Samples of one (rank, phase, worker, node, state), with how many. */
typedef struct tp_stack_count {
    int rank;       /* the sampler's process's rank, -1 none */
    char *phase;    /* the region the thread had open, NULL none */
    bool worker;    /* a DataLoader worker's thread (the one named "DL worker N") */
    uint32_t node;  /* its innermost frame's node, 0 for an empty stack */
    bool on_cpu;    /* the kernel had it running or runnable */
    bool cpu_known; /* ... and said so */
    bool blocked;   /* not on a CPU: in uninterruptible sleep (state D), the kernel said */
    bool waited;    /* its thread only waited (TP_STACK_STATE_WAITED) */
    uint64_t samples;
} tp_stack_count;

/* The bit of a stack count's stored state (summary_stack.state: 1 on a CPU,
 * 2 the state known) that marks a thread that only waited all run: every
 * sample outside any region with its state known, at most 1 in
 * TP_STACK_WAITED_ONCPU_MAX on a CPU besides TP_STACK_WAITED_ONCPU_FEW (its
 * start), not a DataLoader worker (a resource sharer's accept, a pool's
 * Condition.wait, a launcher waiting for its children). */
#define TP_STACK_STATE_WAITED     8
#define TP_STACK_WAITED_ONCPU_MAX 50
#define TP_STACK_WAITED_ONCPU_FEW 10

/* Whether a stored state (TP_STACK_STATE_*) says the kernel's word on the
 * thread's state was read, and whether it was running or runnable (with the
 * state unknown: the sampler's guess from the thread's CPU time). */
static inline bool tp_stack_state_known(int64_t state)
{
    return (state & TP_STACK_STATE_KNOWN) != 0;
}

static inline bool tp_stack_state_on_cpu(int64_t state)
{
    return (state & TP_STACK_STATE_ON_CPU) != 0;
}

/* Whether a stored state (TP_STACK_STATE_*) says state D: the bit only where
 * the state was known and not running (a crafted file's other mixes: no). */
static inline bool tp_stack_state_blocked(int64_t state)
{
    int64_t bits = TP_STACK_STATE_BLOCKED | TP_STACK_STATE_KNOWN | TP_STACK_STATE_ON_CPU;
    return (state & bits) == (TP_STACK_STATE_BLOCKED | TP_STACK_STATE_KNOWN);
}

/* The bits of a stored state a stack count is keyed by (TP_STACK_STATE_COUNTED,
 * the blocked bit only where tp_stack_state_blocked): a crafted file's mixes
 * count as what they can be, by the SQL readers and the summary's pass alike. */
static inline int tp_stack_state_counted(int64_t state)
{
    return (int)(state & (TP_STACK_STATE_ON_CPU | TP_STACK_STATE_KNOWN)) |
           (tp_stack_state_blocked(state) ? TP_STACK_STATE_BLOCKED : 0);
}

/* Whether the file holds stack samples at all. */
bool tp_run_has_stacks(tp_run *run);

bool tp_run_stack_tree(tp_run *run, tp_stack_tree *out, char *err, size_t cap);
void tp_stack_tree_free(tp_stack_tree *t);

/* The nodes from node up to its outermost frame into path (room for cap),
 * innermost first; returns how many (0 for node 0 or one the tree lacks).
 * Stops at cap, and never loops on a damaged tree (parents come first). */
size_t tp_stack_path(const tp_stack_tree *t, uint32_t node, uint32_t *path, size_t cap);

/* Every (rank, phase, worker, node, state) with its sample count, ordered by
 * rank, phase, worker, node and state: from the stored summary where it
 * holds them (summary_stack), else counted from the rows. */
bool tp_run_stack_counts(tp_run *run, tp_stack_count **out, size_t *n, char *err, size_t cap);
void tp_stack_counts_free(tp_stack_count *c, size_t n);

/* The stack counts the stored summary holds over the latest pace of steps
 * first_step..last_step (summary_stack_latest), in the order written; none
 * where it holds none for those steps (a file summarized before them, a
 * merge, another pace). */
bool tp_stored_stack_counts_latest(tp_run *run, size_t first_step, size_t last_step,
                                   tp_stack_count **out, size_t *n, char *err, size_t cap);

/* The SQL (sqlite3_mprintf'd: sqlite3_free it; NULL out of memory) that
 * counts the stack samples of the database attached as schema, of schema
 * version version: rows of (rank, phase text or NULL, worker, node_id,
 * state & 3, samples), one per such group, unordered. The reader counts a
 * file's rows with it, and `merge --summary` an input's with no stored
 * counts. */
char *tp_stack_counts_sql(const char *schema, int version);

/* A run of identical samples of one thread (one sample in a file of
 * schema 8): the sampler's thread row, the sampled thread's kernel id,
 * the first sample's time and the last's span_ns later, the region it had
 * open (a name id), its state bits and its innermost frame's node. */
typedef struct tp_stack_run {
    int64_t thread_id;
    int32_t tid;
    int64_t t_ns, span_ns;
    int64_t phase;
    int state;
    uint32_t node;
    uint64_t count;
} tp_stack_run;

/* Each run in time order (of its first sample), for the trace export. */
typedef void (*tp_stack_sample_fn)(void *ctx, const tp_stack_run *run);
bool tp_run_each_stack_sample(tp_run *run, tp_stack_sample_fn fn, void *ctx, char *err, size_t cap);

/* A run of identical samples of one thread, with whose it is: the sampled
 * process's rank, agent and pid, the thread's kernel id, whether it is a
 * DataLoader worker's, the region it had open (text, NULL none; valid during
 * the call only), its state bits, innermost node, and the run's first sample
 * and span; and as stored, its sampler's thread row and the region's name
 * id (0 none). */
typedef struct tp_stack_thread_run {
    int64_t thread_id, phase_id;
    int rank;
    int64_t agent_id, pid;
    int32_t tid;
    bool worker;
    const char *phase;
    int state;
    uint32_t node;
    uint64_t count;
    int64_t t_ns, span_ns;
} tp_stack_thread_run;

/* Each run whose last sample is at or after since_ns, in time order (of its
 * first sample): where every thread was at the end of a run. */
typedef void (*tp_stack_since_fn)(void *ctx, const tp_stack_thread_run *run);
bool tp_run_each_stack_run_since(tp_run *run, int64_t since_ns, tp_stack_since_fn fn, void *ctx,
                                 char *err, size_t cap);

/* One reader of the runs: fn(ctx, run) for each run whose last sample is at
 * or after since_ns; fn NULL: none. */
typedef struct tp_stack_reader {
    int64_t since_ns;
    tp_stack_since_fn fn;
    void *ctx;
} tp_stack_reader;

/* The same for n readers at once, in one pass over the samples (from the
 * earliest since_ns): each reader is given what
 * tp_run_each_stack_run_since would give it, in the same order. */
bool tp_run_each_stack_run_to(tp_run *run, const tp_stack_reader *readers, size_t n, char *err,
                              size_t cap);

#endif
