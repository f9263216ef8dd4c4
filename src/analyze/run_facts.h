/* run_facts.h: the facts about a run that every renderer shows, from its
 * metadata (the renderers read no metadata key themselves): its end (how
 * complete, its exit), its command, when it started, how it was sampled,
 * what was merged, and each agent's host. */
#ifndef TP_ANALYZE_RUN_FACTS_H
#define TP_ANALYZE_RUN_FACTS_H

#include <stdbool.h>
#include <stdint.h>

#include "store/reader.h"

typedef struct tp_run_facts {
    double duration_s;
    bool complete;         /* every agent's recorder finished normally, its file whole */
    long long exit_status; /* -1 when unknown */
    const char *command;
    const char *exit_signal; /* what killed the command, or NULL */
    /* In a merged run, the agent whose recorder stopped early, else the one
     * whose command failed (exit_status and exit_signal are its), else NULL. */
    const char *failed_agent;
    /* When (seconds since the start) and why the recorder (of failed_agent, in a
     * merged run) could no longer write the run file's rows; -1 and NULL if never */
    double write_failed_s;
    const char *write_failed;
    const char *start_wall; /* "2026-11-27T06:18:26Z", NULL unknown */
    const char *argv;       /* the command's words as a JSON array, NULL unknown */
    /* the command runs Python (its program, past `env` and NAME=VALUE words, is
     * python*, pypy* or a launcher of Python programs: torchrun, accelerate,
     * deepspeed), stacks were sampled, yet no process of it made a ring, not
     * even the stack sampler's: trainprof's package did not load in it */
    bool package_unloaded;
    const char *host, *agent; /* the (first) recorder's host and agent name */
    const char *trainprof_version;
    const char *interval_s;      /* the sampling interval as recorded, NULL unknown */
    const char *merged_from;     /* how many files a merge joined, NULL for none */
    const char *merge_anchor_ns; /* the merge's anchors' uncertainty, NULL unknown */
} tp_run_facts;

void tp_run_facts_get(const tp_run *run, tp_run_facts *f);

/* The run's start on the wall clock, ns since the epoch; -1 unknown. */
int64_t tp_run_start_wall_ns(const tp_run *run);

/* Where agent_id's own times sit on a merged run's time line: its start's
 * distance from the run's (both wall clock, as merge shifts them), in s; 0
 * for a node file. */
double tp_run_agent_shift_s(const tp_run *run, int64_t agent_id);

/* An agent's host as its metadata says it (each node's, in a merged run);
 * each NULL where unknown. The limits are "none" where there are none. */
typedef struct tp_host_facts {
    const char *host, *kernel, *cpu_count, *cpu_model, *mem_total_bytes;
    const char *cgroup_version, *cgroup_cpu_limit_cores, *cgroup_memory_limit_bytes;
} tp_host_facts;

void tp_host_facts_of(const tp_run *run, int64_t agent_id, tp_host_facts *h);

#endif
