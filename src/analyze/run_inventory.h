/* run_inventory.h: what a run holds that the renderers list (its file, its
 * agents and their hosts, its GPUs, the collectors that were unavailable, its
 * metadata as recorded) with the facts read from its metadata (run_facts.h,
 * the model's facts), taken once when the summary is built. The renderers
 * read these, never the run itself (test_layers holds render/ to it, the
 * exports that stream the rows aside). The rows and their texts stay the
 * run's: an inventory lives no longer than its run. */
#ifndef TP_ANALYZE_RUN_INVENTORY_H
#define TP_ANALYZE_RUN_INVENTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/run_facts.h"
#include "core/model_facts.h"
#include "store/reader.h"

typedef struct tp_run_inventory {
    const char *path;      /* the file it was read from */
    tp_run_facts facts;    /* its end, command, start, sampling, merge */
    int64_t start_wall_ns; /* the recording's start, ns since the epoch; -1 unknown */
    bool merged;           /* several agents, each with its own metadata */
    /* its stored summary is another analysis's (tp_run's summary_foreign),
     * set aside for the rows unless the file is a summary-only merge */
    bool summary_foreign, summary_only;
    const tp_run_agent *agents;
    tp_host_facts *hosts; /* each agent's, in agents' order */
    tp_host_facts host;   /* the first agent's (the run's own where it has none) */
    size_t nagents;
    const tp_run_gpu *gpus;
    size_t ngpus;
    const tp_run_unavailable *unavailable;
    size_t nunavailable;
    const tp_run_meta *meta; /* the run's metadata as recorded */
    size_t nmeta;
    const tp_run_agent_meta *agent_meta; /* each agent's, in a merged run */
    size_t nagent_meta;
    /* the regions' device times taken on one step in this many from the start
     * (TRAINPROF_DEVICE_TIMES=N; the recorder's back-off is own_cost.h's) */
    int device_times_every;
    tp_model_facts model; /* the model's device, dtype, autocast, the loader */
    bool agents_by_id;    /* agents are in id order (looked up by bisection) */
} tp_run_inventory;

/* Takes run's inventory into inv. False (inv empty) when out of memory. */
bool tp_run_inventory_build(const tp_run *run, tp_run_inventory *inv);
void tp_run_inventory_free(tp_run_inventory *inv);

/* The index of agent id in inv->agents, or -1. */
ptrdiff_t tp_inventory_agent_at(const tp_run_inventory *inv, int64_t id);

/* The name of agent id (its node), or "?" where the run has no such agent. */
const char *tp_inventory_agent_name(const tp_run_inventory *inv, int64_t id);

#endif
