/* html_pace.c: the changes of pace on the html step chart: a mark where
 * each begins, every other regime shaded (analyze/regimes.h); where the
 * pace drifted, its first and last quarters shaded instead, and no step
 * marked as a change (there was none). */
#include <stdio.h>
#include <string.h>

#include "render/html.h"
#include "render/units.h"

/* The group of ph where step (from 0) falls. */
static size_t group_of(const tp_step_phases *ph, double step)
{
    size_t g = 0;
    while (g + 1 < ph->ngroups && ph->first_step[g + 1] <= step)
        g++;
    return g;
}

/* Marks the group of steps where each change of pace begins ("the pace
 * changed here: 24 ms a step instead of 13 ms"), after its pause note. */
void tp_html_regime_marks(const tp_regimes *rg, const tp_step_phases *ph, char (*notes)[96],
                          const char **marks)
{
    for (size_t r = 1; r < rg->n && !rg->drift.found; r++) {
        size_t g = group_of(ph, (double)rg->v[r].first_step - 1); /* from 0 */
        char a[32], b[32];
        tp_format_duration(a, sizeof a, rg->v[r].typical_s);
        tp_format_duration(b, sizeof b, rg->v[r - 1].typical_s);
        size_t len = marks[g] ? strlen(notes[g]) : 0;
        snprintf(notes[g] + len, sizeof notes[g] - len,
                 "%sthe pace changed at step %zu: %s a step "
                 "instead of %s",
                 len ? "; " : "", rg->v[r].first_step, a, b);
        marks[g] = notes[g];
    }
}

/* Every other regime after the first shaded over its groups of steps, named
 * ("steps 349-600: 24 ms a step"); returns how many. */
size_t tp_html_regime_shades(const tp_regimes *rg, const tp_step_phases *ph, tp_svg_shade *shades,
                             char (*labels)[96])
{
    const tp_regimes_drift *d = &rg->drift;
    if (d->found) { /* "the first quarter, steps 1-278: 7.84 ms a step", and the last */
        size_t from[2] = {d->first_from, d->last_from}, to[2] = {d->first_to, d->last_to};
        const double level[2] = {d->first_s, d->last_s};
        for (int q = 0; q < 2; q++) {
            char typical[32];
            tp_format_duration(typical, sizeof typical, level[q]);
            snprintf(labels[q], sizeof labels[q], "the %s quarter, steps %zu-%zu: %s a step",
                     q ? "last" : "first", from[q], to[q], typical);
            shades[q] = (tp_svg_shade){(double)group_of(ph, (double)from[q] - 1),
                                       (double)group_of(ph, (double)to[q] - 1) + 1, labels[q]};
        }
        return 2;
    }
    size_t n = 0;
    for (size_t r = 1; r < rg->n; r += 2) {
        char typical[32];
        tp_format_duration(typical, sizeof typical, rg->v[r].typical_s);
        snprintf(labels[n], sizeof labels[n], "steps %zu-%zu: %s a step", rg->v[r].first_step,
                 rg->v[r].last_step, typical);
        shades[n] =
            (tp_svg_shade){(double)group_of(ph, (double)rg->v[r].first_step - 1),
                           (double)group_of(ph, (double)rg->v[r].last_step - 1) + 1, labels[n]};
        n++;
    }
    return n;
}
