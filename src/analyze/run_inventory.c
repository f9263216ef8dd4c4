/* run_inventory.c: see run_inventory.h. */
#include "analyze/run_inventory.h"

#include <stdlib.h>
#include <string.h>

#include "store/model_facts_file.h"

bool tp_run_inventory_build(const tp_run *run, tp_run_inventory *inv)
{
    memset(inv, 0, sizeof *inv);
    if (run->nagents) {
        inv->hosts = calloc(run->nagents, sizeof *inv->hosts);
        if (!inv->hosts)
            return false;
    }
    inv->path = run->path;
    tp_run_facts_get(run, &inv->facts);
    inv->start_wall_ns = tp_run_start_wall_ns(run);
    inv->merged = run->nagent_meta && run->nagents > 1;
    inv->summary_foreign = run->summary_foreign;
    inv->summary_only = run->settings.summary_only;
    inv->agents = run->agents;
    inv->nagents = run->nagents;
    inv->agents_by_id = true;
    for (size_t a = 0; a < run->nagents; a++) {
        tp_host_facts_of(run, run->agents[a].id, &inv->hosts[a]);
        if (a && run->agents[a - 1].id >= run->agents[a].id)
            inv->agents_by_id = false;
    }
    tp_host_facts_of(run, run->nagents ? run->agents[0].id : 1, &inv->host);
    inv->gpus = run->gpus;
    inv->ngpus = run->ngpus;
    inv->unavailable = run->unavailable;
    inv->nunavailable = run->nunavailable;
    inv->meta = run->meta;
    inv->nmeta = run->nmeta;
    inv->agent_meta = run->agent_meta;
    inv->nagent_meta = run->nagent_meta;
    tp_run_model_facts(run, &inv->model); /* each unknown where the run told none */
    inv->device_times_every = run->settings.device_times_every;
    return true;
}

void tp_run_inventory_free(tp_run_inventory *inv)
{
    free(inv->hosts);
    memset(inv, 0, sizeof *inv);
}

ptrdiff_t tp_inventory_agent_at(const tp_run_inventory *inv, int64_t id)
{
    if (!inv->agents_by_id) {
        for (size_t i = 0; i < inv->nagents; i++)
            if (inv->agents[i].id == id)
                return (ptrdiff_t)i;
        return -1;
    }
    size_t lo = 0, hi = inv->nagents;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (inv->agents[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < inv->nagents && inv->agents[lo].id == id ? (ptrdiff_t)lo : -1;
}

const char *tp_inventory_agent_name(const tp_run_inventory *inv, int64_t id)
{
    ptrdiff_t at = tp_inventory_agent_at(inv, id);
    return at >= 0 ? inv->agents[at].name : "?";
}
