/* regimes.h: where a rank's step time changed lastingly, and what changed
 * with it.
 *
 * Change points over the step durations of a rank (its groups of steps,
 * below), its warm-up and stalled steps left out (analyze/change_points.h
 * says how they are found and which last). At most TP_REGIMES_MAX
 * regimes. Each regime has its figures (steps, times, mean and median step),
 * the seconds per step of each standard phase on the rank's step thread,
 * and the machine over it (CPUs used by processes not the training's, CPU
 * and I/O pressure, memory, swap, its GPU's clock and busy share), which
 * say what changed with the pace, and the step verdicts of its own split.
 * No words: render/ says it. */
#ifndef TP_ANALYZE_REGIMES_H
#define TP_ANALYZE_REGIMES_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/change_points.h"
#include "core/step_phase_facts.h"
#include "store/reader.h"
#include "core/timing_facts.h"

/* What the machine did over a regime (NaN where not recorded). */
typedef struct tp_regime_machine {
    /* the CPUs' busy share less the training's tree's and the steal, % of all */
    double others_cpu_percent;
    /* the hypervisor's steal (cpu_steal_percent), % of all: a virtual
     * machine's CPUs given to others while they had work (NaN: not counted) */
    double cpu_steal_percent;
    double cpu_pressure, io_pressure; /* "some" pressure stall, % of time */
    /* the training's threads waiting on storage (proc_blocked: state D),
     * mean threads over the regime (NaN: not recorded) */
    double training_blocked;
    /* the training's processes' main threads waiting for a CPU, % of the
     * time (run-queue delay: proc_cpu_wait_percent) */
    double training_cpu_wait;
    /* the rank's step thread waiting for a CPU, % of the time
     * (step_thread_cpu_wait_percent of its process; NaN: not recorded) */
    double step_cpu_wait;
    /* the rank's step thread on a CPU, % of the time
     * (step_thread_cpu_percent of its process; NaN: not recorded) */
    double step_cpu_busy;
    double mem_used_bytes, swap_used_bytes;
    /* the rank's GPU: its SM clock (MHz) and the share of its samples with a
     * troubling clock event reason (NaN: no GPU known, or none recorded) */
    double gpu_sm_clock_mhz, gpu_trouble_share;
    /* its GPU's busy share over the regime (NVML's utilization, mean, %;
     * NaN: no GPU known, or none recorded) */
    double gpu_busy_percent;
    /* the medians an input-bound verdict's cause judges over the regime
     * (verdicts.h: tp_input_cause), -1 where not recorded (or not known: a
     * summary-only file): the CPUs' busy share, the training's process
     * tree's CPU (100 a core), its processes' wait for a CPU, tasks waiting
     * on storage, and the busiest disk (disk: its series, NULL for none) */
    double cpu_busy_p50, proc_cpu_p50, cpu_wait_p50, io_p50, disk_p50;
    const tp_run_series *disk;
} tp_regime_machine;

/* A machine nothing was recorded of: every figure NaN. */
static inline tp_regime_machine tp_regime_machine_unknown(void)
{
    return (tp_regime_machine){.others_cpu_percent = NAN,
                               .cpu_steal_percent = NAN,
                               .cpu_pressure = NAN,
                               .io_pressure = NAN,
                               .training_blocked = NAN,
                               .training_cpu_wait = NAN,
                               .step_cpu_wait = NAN,
                               .step_cpu_busy = NAN,
                               .mem_used_bytes = NAN,
                               .swap_used_bytes = NAN,
                               .gpu_sm_clock_mhz = NAN,
                               .gpu_busy_percent = NAN,
                               .cpu_busy_p50 = -1,
                               .proc_cpu_p50 = -1,
                               .cpu_wait_p50 = -1,
                               .io_p50 = -1,
                               .disk_p50 = -1,
                               .gpu_trouble_share = NAN};
}

/* Other processes' share of a machine's CPUs, %: its busy share (%, steal
 * inside) less the steal (%, NaN: not counted) and the training's tree's
 * CPU (100 a core) over its cores; NaN where the cores are unknown. */
static inline double tp_others_cpu_percent(double busy, double steal, double own, double cores)
{
    if (!(cores >= 1))
        return NAN;
    double others = busy - (isfinite(steal) ? steal : 0) - own / cores;
    return others > 0 ? others : 0;
}

/* What changed with the pace, from the regime before to this one. */
typedef enum {
    TP_CAUSE_PHASE,      /* a standard phase's seconds per step (phase: its index) */
    TP_CAUSE_OTHERS_CPU, /* other processes' share of the CPUs, +-15 points or more */
    /* the training's processes' wait for a CPU, +-10 points or more (where
     * recorded; CPU pressure is said only where it is not) */
    TP_CAUSE_CPU_WAIT,
    TP_CAUSE_CPU_PRESSURE, /* CPU pressure, +-10 points or more */
    TP_CAUSE_IO_PRESSURE,  /* I/O pressure, +-10 points or more (where the training's
                              own wait on storage is not recorded) */
    TP_CAUSE_SWAP,         /* swap used, up by 64 MiB or more */
    TP_CAUSE_GPU_CLOCK,    /* the rank's GPU's SM clock, down (or up) by 10 % or more */
    TP_CAUSE_GPU_THROTTLE, /* its samples held back by heat, a hardware slowdown or the
                              power brake (TP_GPU_REASONS_TROUBLE), +-20 points or more */
    TP_CAUSE_FUNCTION,     /* a function's share of the moved phase's stack samples (or of
                              its DataLoader workers'), +-TP_REGIME_FUNCTION_MOVE or more
                              (analyze/regime_stacks.h) */
    /* the rank's step thread's wait for a CPU, +-10 points or more: said
     * instead of TP_CAUSE_CPU_WAIT where both sides recorded it */
    TP_CAUSE_STEP_CPU_WAIT,
    /* another rank's own work (input + compute) a step, which grew by half
     * or more and made it a straggler over the regime (analyze/ranks.h:
     * tp_ranks_pace_cause): seconds a step, before and after */
    TP_CAUSE_STRAGGLER,
    /* the hypervisor's steal, +-TP_CAUSE_STEAL_POINTS or more: a virtual
     * machine's host gave its CPUs to others */
    TP_CAUSE_CPU_STEAL,
    /* the rank's step thread's CPU time a step (its share on a CPU times
     * the mean step: seconds, before and after), where it moved the way the
     * step did by half of its change or more, on a rank without a GPU (whose
     * host may spin while it waits for it): the same code computed slower
     * (the CPU's clock, another guest's or process's work on its core) or
     * did more */
    TP_CAUSE_STEP_COMPUTED,
    /* the training's threads waiting on storage (state D: proc_blocked,
     * mean threads), +-0.1 or more: said instead of TP_CAUSE_IO_PRESSURE,
     * the machine's, where both sides recorded it */
    TP_CAUSE_STORAGE_WAIT,
} tp_cause_kind;

#define TP_CAUSE_STEAL_POINTS 5.0
#define TP_CAUSE_BLOCKED_MOVE 0.1 /* processes in D, on average: a tenth of one's time */

#define TP_CAUSE_TEXT 160 /* a function's or file's text kept in a cause, cut beyond */

typedef struct tp_regime_cause {
    tp_cause_kind kind;
    size_t phase;         /* TP_CAUSE_PHASE, TP_CAUSE_FUNCTION: index in tp_step_phase_names */
    double before, after; /* seconds per step, percent, bytes or a share (0..1) */
    /* TP_CAUSE_FUNCTION: the function (valid UTF-8, cut on a character
     * boundary), its file and its line of the most samples, and whether
     * its samples are the DataLoader workers' rather than the step thread's */
    bool workers;
    int32_t line;
    /* TP_CAUSE_STRAGGLER: the straggler, whether its input (else its compute)
     * is what exceeds the median rank's the most, and the median rank's own
     * work a step over the regime */
    int rank;
    double median_after;
    char function[TP_CAUSE_TEXT], file[TP_CAUSE_TEXT];
} tp_regime_cause;

#define TP_REGIME_CAUSES 6

typedef struct tp_regime {
    size_t first_step, last_step; /* the rank's step numbers, from 1 */
    double t0_s, t1_s; /* the first step's begin, the last one's end (NaN: a file stored before) */
    double mean_s, median_s; /* its steps' durations */
    /* its typical step: the geometric mean of its durations without the
     * lowest and highest 10 %, the level the change points compare (steps
     * that alternate between two speeds have no telling median) */
    double typical_s;
    double phase_s[TP_STEP_PHASES]; /* seconds per step of each standard phase; "other": the rest */
    /* the levels a change is judged and said in: the step's (typical_s
     * here, a mean in compare's sides) and each phase's in the same
     * statistic (here the mean of its groups' seconds per step without the
     * lowest and highest 10 %) */
    double level_s, phase_level_s[TP_STEP_PHASES];
    tp_regime_machine machine;
    /* against the regime before (none for the first): the phase that moved
     * the most per step, first, then the machine's changes */
    tp_regime_cause causes[TP_REGIME_CAUSES];
    size_t ncauses;
    /* the step verdicts its phase split fires (core/step_rules.h), where the
     * run had more than one regime; a computing regime whose GPU was busy
     * under TP_HOST_BOUND_GPU_BUSY of it is host-bound, not compute-bound */
    bool input_bound, transfer_bound, compute_bound, host_bound;
} tp_regime;

/* A pace that drifted (analyze/pace_drift.h): the first and the last
 * quarter of the steps' span, their steps (from 1) and levels (the typical
 * step, seconds). */
typedef struct tp_regimes_drift {
    bool found;
    size_t first_from, first_to, last_from, last_to;
    double first_s, last_s;
} tp_regimes_drift;

typedef struct tp_regimes {
    int rank;         /* the rank followed; regimes empty when none had steps */
    int64_t agent_id; /* its agent, whose machine the regimes' figures are of */
    tp_regime v[TP_REGIMES_MAX];
    size_t n; /* 1 for a steady run, 0 without enough steps */
    /* whether the steps grew or shrank steadily rather than at the regimes'
     * changes (which still split them, for the latest pace's verdicts) */
    tp_regimes_drift drift;
} tp_regimes;

/* What changed from regime p to g, into g's causes (tp_cause_kind's
 * thresholds): the phase that carries at least half of the change in the
 * mean step, then the machine's changes. compare uses it between two runs. */
void tp_regime_find_causes(const tp_regime *p, tp_regime *g);

/* The regime after the change that moved the typical step the most (index
 * >= 1), or 0 when there was none. */
size_t tp_regimes_biggest_change(const tp_regimes *r);

/* A rank's step split over a span of the run (tp_rank_pace_over). */
typedef struct tp_rank_pace {
    int rank;
    size_t steps;                   /* the steps averaged */
    double mean_s;                  /* their mean */
    double phase_s[TP_STEP_PHASES]; /* seconds per step of each standard phase; "other": the rest */
} tp_rank_pace;

/* rank's split over the groups of its step phases ph that lie within
 * [t0_s, t1_s] (their first step's begin and their last one's end, run
 * seconds), stalled groups left out as the regimes leave them: its latest
 * pace where the first rank's pace changed (the span of that rank's latest
 * regime: in synchronous training every rank keeps one pace). False where no
 * group lies within, or the groups' times are unknown (a file stored before). */
bool tp_rank_pace_over(const tp_run *run, const tp_step_phases *ph, int rank, double t0_s,
                       double t1_s, tp_rank_pace *out);

/* The latest regime of rank's steps where their pace changed lastingly (two
 * regimes or more), its mean and its phases' seconds usable (a stored
 * summary's are checked here: a positive mean, finite phases); NULL for a
 * steady run, another rank, or figures that cannot be used. What the step
 * verdicts judge and the report's split of a step says (verdicts.h: pace). */
const tp_regime *tp_regimes_latest(const tp_regimes *r, int rank);

/* The labels ({"pid":"N"}) of the series of rank's process on agent_id
 * that has step_thread_cpu_wait_percent (rank -1: a process without one);
 * false where none has. */
bool tp_rank_step_thread_labels(tp_run *run, int rank, int64_t agent_id, char *labels, size_t cap);

/* The regimes of rank's steps, from its step phases (analyze/step_phases.h:
 * at most TP_STEP_GROUPS groups of consecutive steps after its warm-up, the
 * recorder's stored ones where the file has them), the machine's figures
 * from agent_id's series (its GPU's: gpu, -1 unknown). A group is the unit: each step while a rank
 * has no more steps than groups, so changes are placed to the step; in a longer run to the group.
 */
void tp_regimes_build(tp_run *run, const tp_step_phases *ph, int rank, int64_t agent_id, int gpu,
                      tp_regimes *out);

#endif
