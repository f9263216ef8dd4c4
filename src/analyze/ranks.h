/* ranks.h: ranks side by side: their own work, their waiting, stragglers.
 *
 * In synchronous data-parallel training every rank's step lasts as long as
 * the slowest rank's, so step time hides a straggler. For each rank, over its
 * steps (those from its first to its last step mark: the evaluations,
 * checkpoints and epochs' ends between them left out, which one rank may
 * spend alone while the others wait), time is split by interval union of
 * all its threads' regions, communication first:
 *   communication  any reduce_metrics in flight (collectives, DDP's gradient
 *                  all-reduce from hook call to completion)
 *   input          dataloader_next or to_device, outside communication
 *   compute        train_batch, forward, loss, backward, optimizer_step,
 *                  step_lr_schedulers, from_device, outside both
 *   other          the rest of its steps' time
 * so the four add up to the window; overlap is the part of communication
 * during which a compute region was open too (hidden behind backward, or the
 * host waiting inside it: host timings can't tell the two apart).
 * A rank's own work is input + compute per step; a rank whose own work is
 * more than 10 % above the median rank's, by at least 2 % of the median
 * rank's step (less costs the job too little to name, and is noise on steps
 * whose own work is small), is a straggler, and the cause is
 * the part (input or compute) that exceeds its median by the most, with its
 * GPU's clock and utilization (GPU index = local rank on its agent) and its
 * node when every rank of that node is slow. */
#ifndef TP_ANALYZE_RANKS_H
#define TP_ANALYZE_RANKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/rank_compare.h"
#include "analyze/regimes.h"
#include "core/rank_facts.h"
#include "store/reader.h"

/* Builds the parts of every rank (rank >= 0) that marked two or more steps
 * from the run's rows, and compares them (tp_ranks_compare); out->n is 0
 * when none did. False (reason in err) if the run can't be read. Whether
 * to read the stored rows instead (summary_store.h) is the summary's call
 * (summary.c), made there only. */
bool tp_ranks_from_rows(tp_run *run, tp_ranks *out, char *err, size_t cap);

/* The same over the steps each rank began at from_ns or later and ended by
 * to_ns (run times, ns): its window runs from the first such step's mark to
 * the last one's end. The ranks over the latest of the first rank's paces
 * (summary.h: ranks_latest), where a straggler that appeared midway is not
 * diluted by the steps before it. */
bool tp_ranks_from_rows_between(tp_run *run, int64_t from_ns, int64_t to_ns, tp_ranks *out,
                                char *err, size_t cap);

/* The ranks over the latest of the first rank's paces (regimes: its
 * regimes, tp_regimes_latest) from the rows, compared (tp_ranks_compare):
 * what the straggler verdicts judge where the pace changed. out empty, and
 * true, where the pace did not change, its times are unknown (a file stored
 * before) or fewer than min_ranks ranks marked steps over it (a report
 * compares two or more; a node's recorder keeps even its one rank's, which
 * a merge sets beside the other nodes'). */
bool tp_ranks_latest_from_rows(tp_run *run, const tp_regimes *regimes, size_t min_ranks,
                               tp_ranks *out, char *err, size_t cap);

/* Where a rank is a straggler over the latest regime g (latest: the ranks
 * over it) and its own work a step grew by half or more against its steps
 * before (the whole run's table less the latest one's), says so among g's
 * causes, right after the phase that moved: the first rank's steps slowed
 * because they wait for it. The straggler with the most excess only; a
 * cause pushed off the end where g's were full. */
void tp_ranks_pace_cause(const tp_ranks *whole, const tp_ranks *latest, tp_regime *g);

#endif
