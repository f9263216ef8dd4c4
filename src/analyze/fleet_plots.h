/* fleet_plots.h: what a merge of many node files keeps of their plots: the
 * envelopes of their metrics (analyze/fleet_envelopes.h), made from the node
 * files one at a time and stored in the merged file (store/envelopes.h),
 * instead of every series' points copied in. `html` of many files and
 * `merge --summary` of more than TP_FLEET_PLOTS_MAX use it. */
#ifndef TP_FLEET_PLOTS_H
#define TP_FLEET_PLOTS_H

#include <stdbool.h>
#include <stddef.h>

/* A summary-only merge of more node files than this stores the envelopes,
 * not each agent's plots (its html draws those of every agent: --all on the
 * node files). */
#define TP_FLEET_PLOTS_MAX 16

/* Such a merge keeps at most this many groups of each rank's steps (the
 * lowest rank's all), for the heatmap and the phase charts. */
#define TP_FLEET_STEP_GROUPS 60

/* Makes the envelopes of the node files paths[0..n) merged into the run at
 * merged_path and stores them there; false (reason in err) when it can't. */
bool tp_fleet_plots_store(const char *merged_path, const char *const *paths, size_t n, char *err,
                          size_t cap);

#endif
