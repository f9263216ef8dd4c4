/* compare_functions.c: see compare_functions.h. */
#include "analyze/compare_functions.h"

#include <string.h>

#include "analyze/regime_stacks.h"
#include "core/step_phase_facts.h"
#include "util/utf8.h"

/* f's stack group of rank for phase (its workers' where workers; NULL
 * phase: the samples with no region open, "other"'s). */
static const tp_stack_group *stack_group(const tp_stack_facts *f, int rank, const char *phase,
                                         bool workers)
{
    for (size_t i = 0; i < f->n; i++) {
        const tp_stack_group *g = &f->groups[i];
        bool same = phase ? g->phase && strcmp(g->phase, phase) == 0 : !g->phase;
        if (g->rank == rank && (workers ? g->workers : !g->workers && same))
            return g;
    }
    return NULL;
}

/* function's self share of g's samples (0 where it is not among g's top
 * functions); its line in *line where asked. */
static double share_of(const tp_stack_facts *f, const tp_stack_group *g, const char *function,
                       const char *file, int32_t *line)
{
    for (size_t i = 0; i < g->nfunctions; i++) {
        const tp_stack_function *fn = &g->functions[i];
        if (strcmp(tp_stack_facts_function(f, fn->frame), function) == 0 &&
            strcmp(tp_stack_facts_file(f, fn->frame), file) == 0) {
            if (line)
                *line = fn->line;
            return (double)fn->self / (double)g->samples;
        }
    }
    return 0;
}

/* The function of the two groups' tops that moved the most (see the
 * header), into *out; whether one did. */
static bool most_moved(const tp_stack_facts *fa, const tp_stack_group *ga, const tp_stack_facts *fb,
                       const tp_stack_group *gb, double sign, tp_regime_cause *out)
{
    double best = TP_REGIME_FUNCTION_MOVE;
    bool any = false;
    for (int side = 0; side < 2; side++) { /* the functions of both sides' tops */
        const tp_stack_facts *f = side ? fb : fa;
        const tp_stack_group *g = side ? gb : ga;
        for (size_t i = 0; i < g->nfunctions; i++) {
            const char *fn = tp_stack_facts_function(f, g->functions[i].frame);
            const char *file = tp_stack_facts_file(f, g->functions[i].frame);
            int32_t line = g->functions[i].line;
            double before = share_of(fa, ga, fn, file, NULL);
            double after = share_of(fb, gb, fn, file, &line);
            if (sign * (after - before) >= best) {
                best = sign * (after - before);
                out->before = before;
                out->after = after;
                out->line = line;
                tp_utf8_clean(out->function, sizeof out->function, fn);
                tp_utf8_clean(out->file, sizeof out->file, file);
                any = true;
            }
        }
    }
    return any;
}

bool tp_compare_function_cause(const tp_compare_samples *a, const tp_compare_samples *b,
                               const tp_regime_cause *phase, tp_regime_cause *out)
{
    if (phase->kind != TP_CAUSE_PHASE || phase->phase >= TP_STEP_PHASES)
        return false;
    const tp_stack_facts *fa = a->facts, *fb = b->facts;
    /* "other", the step's time outside the phases: the loop's own code */
    const char *name =
        phase->phase == TP_STEP_PHASES - 1 ? NULL : tp_step_phase_names[phase->phase];
    bool workers = phase->phase == 0 && stack_group(fa, a->rank, name, true) &&
                   stack_group(fb, b->rank, name, true);
    const tp_stack_group *ga = stack_group(fa, a->rank, name, workers);
    const tp_stack_group *gb = stack_group(fb, b->rank, name, workers);
    if (!ga || !gb || (double)ga->samples < TP_REGIME_FUNCTION_SAMPLES ||
        (double)gb->samples < TP_REGIME_FUNCTION_SAMPLES)
        return false;
    memset(out, 0, sizeof *out);
    out->kind = TP_CAUSE_FUNCTION;
    out->phase = phase->phase;
    out->workers = workers;
    return most_moved(fa, ga, fb, gb, phase->after > phase->before ? 1 : -1, out);
}
