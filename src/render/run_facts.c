/* run_facts.c: the facts about a run that every renderer shows. */
#include <stdlib.h>
#include <string.h>

#include "render/report.h"

void tp_run_facts_get(const tp_run *run, tp_run_facts *f)
{
    const char *v;
    f->complete = (v = tp_run_meta_get(run, "status")) && strcmp(v, "finished") == 0;
    v = tp_run_meta_get(run, "duration_ns");
    if (v)
        f->duration_s = (double)strtoll(v, NULL, 10) / 1e9;
    else
        f->duration_s = run->last_t_ns > 0 ? (double)run->last_t_ns / 1e9 : 0;
    v = tp_run_meta_get(run, "exit_status");
    f->exit_status = v ? strtoll(v, NULL, 10) : -1;
    v = tp_run_meta_get(run, "command");
    f->command = v ? v : "";
}
