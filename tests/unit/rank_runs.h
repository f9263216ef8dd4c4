/* rank_runs.h: run files of ranks side by side, written through the real
 * writer, for the ranks' unit tests (test_ranks.c, test_rank_gpus.c). Each
 * rank's step is [0, 10 s] with input, compute, communication and a region
 * of no category (rank_runs_regions), so a test varies only what it judges. */
#ifndef TP_TESTS_RANK_RUNS_H
#define TP_TESTS_RANK_RUNS_H

#include <stdbool.h>

#include "analyze/ranks.h"
#include "core/sink.h"

#define S 1000000000ull /* one second in ns */

/* What a rank's threads saw of their environment. */
typedef struct rank_env {
    bool no_local_rank;  /* no LOCAL_RANK (mp.spawn): local rank -1 */
    const char *visible; /* CUDA_VISIBLE_DEVICES, NULL when unset */
} rank_env;

/* A new path named name in the test's own temporary folder (free it). */
char *rank_runs_path(const char *name);

/* Thread tid of rank (pid 100 + rank, world size 4) in s; env may be NULL. */
uint32_t rank_runs_thread(tp_sink *s, int rank, int tid, const rank_env *env);

/* Rank r over [0, 10 s] (two step marks; idle s more in "other" at its end):
 * on its main thread input [0, 3] (plus extra_input s), compute [1, 8] with a
 * nested region, and on a second thread communication [2, 5]. env may be NULL. */
void rank_runs_regions(tp_sink *s, int rank, double extra_input, double idle, const rank_env *env);

/* A capture window that ran over [a, b) on thread (of rank, tid 1000 +
 * rank, as rank_runs_regions's main thread). */
void rank_runs_window(tp_sink *s, uint32_t thread, int rank, uint64_t a, uint64_t b);

/* A sink for one node's run of "train". */
tp_sink *rank_runs_sink(void);

/* Writes what s holds into a new run file at path, through the real writer;
 * frees s. */
void rank_runs_write(const char *path, tp_sink *s);

/* Ranks 0..n-1, rank r fetching extra[r] s longer, each idle s at its end. */
void rank_runs_write_idle(const char *path, const double *extra, int n, double idle);

/* The ranks of the run file at path, from its rows (raw) or its stored summary. */
tp_ranks rank_runs_build(const char *path, bool raw);

/* A straggler's cause in the words the report says it (a single-agent run:
 * no node is named); valid until the next call. */
const char *rank_runs_cause_words(const tp_rank_row *row);

#endif
