/* ops.h: the capture windows' rows made facts (core/ops_facts.h): which
 * operators each phase of a rank's captured steps ran (calls, CPU total and
 * self, device total), which kernels and the operators that launched them,
 * how long the GPU sat idle and in which of the host's phases, and the
 * caching allocator's peak (docs/ops.md).
 *
 * An operator's phase is the step thread's innermost region when it began
 * (operators of other threads, the autograd engine's among them, go by the
 * step thread's too); its self time is its total less its direct
 * children's on the same thread; a kernel belongs to the operator open on
 * its launch's thread when the launch (the runtime call of its
 * correlation) began, and counts in that operator's device total and its
 * ancestors'. Only the captured steps count: from the window's first step
 * mark to the mark `steps` later. */
#ifndef TP_ANALYZE_OPS_H
#define TP_ANALYZE_OPS_H

#include <stdbool.h>
#include <stddef.h>

#include "core/ops_facts.h"
#include "store/reader_ops.h"

/* The run's windows, read one at a time. False with the reason in err. */
bool tp_ops_facts_build(tp_run *run, tp_ops_facts *f, char *err, size_t cap);
void tp_ops_facts_free(tp_ops_facts *f);

/* A rank's time in phase over its captured steps; 0 when none. */
double tp_ops_phase_time_s(const tp_ops_facts *f, int rank, const char *phase);

/* A rank's phases with operators, by their time in the captured steps,
 * most first: up to max into out (interned: compare pointers); how many. */
size_t tp_ops_phases_by_time(const tp_ops_facts *f, int rank, const char **out, size_t max);

/* A rank's phase's operators with the most time no other operator encloses,
 * most first: up to max of them into out; returns how many there are
 * (which may be more than max). */
size_t tp_ops_top_outer(const tp_ops_facts *f, int rank, const char *phase, const tp_op_fact **out,
                        size_t max);

#endif
