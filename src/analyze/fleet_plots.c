/* fleet_plots.c: see fleet_plots.h. */
#include "analyze/fleet_plots.h"

#include <stdio.h>
#include <stdlib.h>

#include "analyze/fleet_envelopes.h"
#include "store/envelopes.h"
#include "store/reader.h"

bool tp_fleet_plots_store(const char *merged_path, const char *const *paths, size_t n, char *err,
                          size_t cap)
{
    tp_run *merged = tp_run_open(merged_path, err, cap);
    if (!merged)
        return false;
    /* the page's time line: the merged run's (page_facts.c) */
    double span = merged->last_t_ns > 0 ? (double)merged->last_t_ns / 1e9 : 0;
    tp_run_close(merged);
    tp_envelopes e;
    if (!tp_envelopes_from_files(paths, n, merged_path, span, &e, err, cap))
        return false;
    tp_envelope_rows *rows = calloc(e.n + 1, sizeof *rows);
    bool ok = rows != NULL;
    for (size_t i = 0; ok && i < e.n; i++)
        rows[i] = (tp_envelope_rows){e.v[i].metric,   e.v[i].lines,  e.v[i].e.x, e.v[i].e.low,
                                     e.v[i].e.median, e.v[i].e.high, e.v[i].e.n};
    if (!ok)
        snprintf(err, cap, "out of memory for the envelopes");
    else
        ok = tp_envelopes_write(merged_path, rows, e.n, err, cap);
    free(rows);
    tp_envelopes_free(&e);
    return ok;
}
