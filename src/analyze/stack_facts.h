/* stack_facts.h: where each phase's time goes in the code, from the sampled
 * Python stacks (store/reader_stacks.h).
 *
 * Samples are grouped by rank and by what their thread was doing: the
 * region it had open (a step phase or a user region), the DataLoader
 * workers (every sample of a worker's thread, whatever it had open), the
 * threads that only waited all run, or no region at all (start-up, code
 * outside the steps, threads that also worked). In each group, a function's self
 * share is the part of the group's samples whose innermost frame is it, its total share the part
 * with it anywhere on the stack (once per sample, however deep it recurses);
 * on_cpu is how much of its self samples the kernel saw running, of those
 * whose state it knew, blocked how much in uninterruptible sleep (state D:
 * waiting on storage, or a device). Functions are (function, file); line is the line of
 * its most self samples. No words: render/ names everything. */
#ifndef TP_ANALYZE_STACK_FACTS_H
#define TP_ANALYZE_STACK_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/region_within.h"
#include "analyze/regimes.h"
#include "store/reader_stacks.h"

#define TP_STACK_TOP_FUNCTIONS 10 /* kept per group, most self samples first */
/* The phase the workers' samples are named by (report --json, export). */
#define TP_STACK_WORKERS_PHASE "dataloader_worker"
/* ... and the threads' that only waited (a group of their own, one line). */
#define TP_STACK_WAITED_PHASE "waiting_threads"

typedef struct tp_stack_function {
    uint32_t frame; /* in the facts' tree */
    int32_t line;
    uint64_t self, total;
    uint64_t self_known, self_on_cpu, self_blocked;
} tp_stack_function;

/* A box of a group's icicle (flame graph, outermost frame on top): a
 * function called along one path (its calls from different lines of its
 * caller merged; line: the first one's), depth levels down, spanning
 * [x, x + width) of the group's samples (fractions), samples of them. Boxes
 * narrower than TP_FLAME_MIN_WIDTH, or deeper than TP_FLAME_DEPTH, are left
 * out. */
#define TP_FLAME_MIN_WIDTH 0.002
#define TP_FLAME_DEPTH     64
typedef struct tp_flame_rect {
    uint32_t frame;
    int32_t line;
    uint32_t depth;
    double x, width;
    uint64_t samples;
} tp_flame_rect;

typedef struct tp_stack_group {
    int rank;
    const char *phase; /* the region, NULL for none (and for the workers) */
    bool workers;      /* the DataLoader workers' samples */
    bool waited;       /* the samples of threads that only waited (TP_STACK_STATE_WAITED) */
    /* a user region's: the standard region it ran inside (analyze/
     * region_within.h), NULL for none or unknown */
    const char *within;
    /* a standard region's: how many of samples are its user regions'
     * (they count in both groups, once in the facts' samples) */
    uint64_t borrowed;
    uint64_t samples;
    /* samples whose state the kernel said; of those running, and in state D */
    uint64_t known, on_cpu, blocked;
    tp_stack_function functions[TP_STACK_TOP_FUNCTIONS];
    size_t nfunctions;
    tp_flame_rect *flame; /* depth first, each node before its children */
    size_t nflame;
    uint32_t flame_depth; /* levels the icicle has */
} tp_stack_group;

typedef struct tp_stack_facts {
    tp_stack_tree tree;
    tp_stack_count *counts; /* the rows the groups were made from (their texts) */
    size_t ncounts;
    tp_stack_group *groups; /* by rank, then most samples first, outside regions last */
    size_t n;
    tp_region_withins withins; /* what the groups' user regions ran inside */
    uint64_t samples;
    /* samples the samplers could not send, their rings full: the shares
     * miss them (store/reader.h: tp_run_stack_samples_dropped) */
    uint64_t dropped;
} tp_stack_facts;

/* False (reason in err) when the file can't be read; a run without stacks
 * gives no groups. withins: the run's user regions' places, made here
 * where not yet (tp_region_withins_once; the caller's to free, the facts
 * keep a copy). tp_stack_facts_free in every case. */
bool tp_stack_facts_build(tp_run *run, tp_region_withins *withins, tp_stack_facts *out, char *err,
                          size_t cap);
void tp_stack_facts_free(tp_stack_facts *f);

/* The same groups and top functions (no icicles) of the samples taken over
 * regime g's span (t0_s to t1_s, the run's clock) only: the stored
 * summary's counts for g's steps where it holds them (summary_stack_latest:
 * a report reads those, not every sample since the change), else from the
 * samples, a run of identical samples that straddles a bound counting for
 * its part inside, rounded to whole samples per stack. A file that keeps
 * only the stored whole-run counts (a summary-only merge) knows no span: no
 * groups. dropped is not known per span (0). withins as for
 * tp_stack_facts_build. tp_stack_facts_free in every case. */
bool tp_stack_facts_build_over(tp_run *run, const tp_regime *g, tp_region_withins *withins,
                               tp_stack_facts *out, char *err, size_t cap);

/* The same in parts, for a pass over the samples shared with other readers
 * (tp_run_each_stack_run_to): begin sets out up and *reader (fn NULL where
 * nothing is to be read; withins, living until the end, what the user
 * regions' samples count for, NULL none) and returns the pass (NULL where there is none to
 * end; *ok false where the file could not be read, the reason in err); end
 * groups what the pass read where it read it all (read) and frees it. */
typedef struct tp_span_pass tp_span_pass;
tp_span_pass *tp_stack_facts_over_begin(tp_run *run, const tp_regime *g,
                                        const tp_region_withins *withins, tp_stack_facts *out,
                                        tp_stack_reader *reader, char *err, size_t cap, bool *ok);
void tp_stack_facts_over_end(tp_span_pass *p, bool read);

/* The samples of run taken between a_ns and b_ns (the run's clock): its
 * count where its samples are one instant, else its part of its span
 * inside; 0 where it lies outside. */
double tp_stack_run_part(const tp_stack_thread_run *run, int64_t a_ns, int64_t b_ns);

/* A frame's function and file in the facts' tree ("?" when unknown). */
const char *tp_stack_facts_function(const tp_stack_facts *f, uint32_t frame);
const char *tp_stack_facts_file(const tp_stack_facts *f, uint32_t frame);

#endif
