/* regime_stacks.c: the functions that moved at a change of pace
 * (regime_stacks.h). */
#include "analyze/regime_stacks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/stack_facts.h"
#include "analyze/stack_own.h"
#include "core/phases.h"
#include "core/step_phase_facts.h"
#include "store/reader_stacks.h"
#include "store/summary_tables.h"
#include "trainprof.h"
#include "util/grow.h"
#include "util/ns_math.h"
#include "util/oom.h"
#include "util/utf8.h"

/* Samples with a (frame, line) on their stack in a group, and the
 * deepest it was seen at (0: outermost). */
typedef struct line_weight {
    uint32_t frame;
    int32_t line;
    uint32_t depth;
    double weight;
} line_weight;

/* The samples of a group over one regime. */
typedef struct group {
    line_weight *lines;
    size_t n, cap;
    double total;
} group;

#define PATH_MAX_DEPTH 256

/* What each change compares: the phase that moved (index, or
 * TP_STEP_PHASES for none), and the step thread's and the workers' groups
 * over the regime before ([0]) and after ([1]). */
typedef struct change {
    size_t phase;
    group thread[2], workers[2];
} change;

typedef struct gather_ctx {
    const tp_regimes *r;
    const tp_region_withins *withins; /* a user region's samples count for its phase's */
    const tp_stack_tree *tree;
    change *changes; /* by regime index: changes[i] compares regime i-1 with i */
} gather_ctx;

/* Adds w samples of the stack path[0..depth) (innermost first) to g: to
 * each function on it once, however often it recurses. */
static void add_weight(group *g, const tp_stack_tree *tree, const uint32_t *path, size_t depth,
                       double w)
{
    g->total += w;
    for (size_t d = 0; d < depth; d++) {
        uint32_t frame = tree->frame[path[d] - 1];
        int32_t line = tree->line[path[d] - 1];
        bool inner = false; /* counted already, deeper in the same stack */
        for (size_t e = 0; e < d && !inner; e++)
            inner = tree->frame[path[e] - 1] == frame;
        if (inner)
            continue;
        uint32_t level = (uint32_t)(depth - 1 - d);
        size_t i = 0;
        while (i < g->n && !(g->lines[i].frame == frame && g->lines[i].line == line))
            i++;
        if (i == g->n) {
            g->lines = tp_grow(g->lines, g->n, &g->cap, sizeof *g->lines);
            g->lines[g->n++] = (line_weight){frame, line, level, 0};
        }
        g->lines[i].weight += w;
        if (level > g->lines[i].depth)
            g->lines[i].depth = level;
    }
}

/* Whether a sample's region (a user region's: the phase it ran inside)
 * belongs to step phase k (train_batch holds the phases inside it;
 * "other", the step's time outside the phases, is the samples with no
 * region open, or a user region outside them: the loop's own code between
 * them, a metric's logging). */
static bool in_phase(const char *region, size_t k)
{
    if (k == TP_STEP_PHASES - 1)
        return !region;
    if (!region || k >= TP_STEP_PHASES)
        return false;
    if (strcmp(region, tp_step_phase_names[k]) == 0)
        return true;
    return strcmp(tp_step_phase_names[k], TP_PHASE_TRAIN_BATCH) == 0 &&
           tp_phase_inside_train_batch(region);
}

/* Adds run's part inside regime i to the changes that compare it: the
 * change into i (as its after side) and the change out of it (before). */
static void add_to_regime(gather_ctx *c, const tp_stack_thread_run *run, size_t i, double w,
                          const uint32_t *path, size_t depth)
{
    for (size_t side = 0; side < 2; side++) {
        size_t at = side == 0 ? i + 1 : i; /* the change whose before/after side i is */
        if (at == 0 || at >= c->r->n)
            continue;
        const change *ch = &c->changes[at];
        if (ch->phase >= TP_STEP_PHASES)
            continue;
        if (!run->worker && in_phase(tp_region_counts_for(c->withins, run->phase), ch->phase))
            add_weight(&c->changes[at].thread[side], c->tree, path, depth, w);
        else if (run->worker &&
                 strcmp(tp_step_phase_names[ch->phase], TP_PHASE_DATALOADER_NEXT) == 0)
            add_weight(&c->changes[at].workers[side], c->tree, path, depth, w);
    }
}

static void gather(void *ctx, const tp_stack_thread_run *run)
{
    gather_ctx *c = ctx;
    if (run->rank != c->r->rank)
        return;
    uint32_t path[PATH_MAX_DEPTH];
    size_t depth = tp_stack_path(c->tree, run->node, path, PATH_MAX_DEPTH);
    if (!depth)
        return;
    for (size_t i = 0; i < c->r->n; i++) {
        double w =
            tp_stack_run_part(run, tp_ns_round_s(c->r->v[i].t0_s), tp_ns_round_s(c->r->v[i].t1_s));
        if (w > 0)
            add_to_regime(c, run, i, w, path, depth);
    }
}

/* A group's samples with frame on their stack: its line of the most
 * samples in *line, the deepest it was seen at in *depth. */
static double frame_weight(const group *g, uint32_t frame, int32_t *line, uint32_t *depth)
{
    double sum = 0, best = -1;
    for (size_t i = 0; i < g->n; i++)
        if (g->lines[i].frame == frame) {
            sum += g->lines[i].weight;
            if (g->lines[i].weight > best) {
                best = g->lines[i].weight;
                *line = g->lines[i].line;
            }
            if (g->lines[i].depth > *depth)
                *depth = g->lines[i].depth;
        }
    return sum;
}

static bool frame_in_stdlib(const tp_stack_tree *tree, uint32_t frame)
{
    return frame >= 1 && frame <= tree->nframes && tp_stack_file_stdlib(tree->file[frame - 1]);
}

/* The function of a pair of groups whose share (of the samples with it on
 * their stack) moved the most in the direction sign (+1 grew, -1 shrank):
 * its frame, line and shares. Its callers move as much where they call it
 * only: of those within a tenth of the most, the deepest is named (the
 * function itself, not main), outside the standard library where one is
 * (the user's __getitem__ at its json.load line, not json's decoder; the
 * DataLoader's _try_get_data, not multiprocessing's Connection._recv).
 * False where none moved enough or a side had too few samples. */
static bool most_moved(const tp_stack_tree *tree, const group *before, const group *after,
                       double sign, uint32_t *frame, int32_t *line, double *share_before,
                       double *share_after)
{
    if (before->total < TP_REGIME_FUNCTION_SAMPLES || after->total < TP_REGIME_FUNCTION_SAMPLES)
        return false;
    double most = 0;
    /* the most moved; the deepest near it outside the standard library; in it */
    for (int pass = 0; pass < 3; pass++) {
        uint32_t deepest = 0;
        bool found = false;
        for (size_t side = 0; side < 2; side++) { /* a frame may be on one side only */
            const group *g = side ? after : before;
            for (size_t i = 0; i < g->n; i++) {
                int32_t la = 0, lb = 0;
                uint32_t depth = 0;
                double a = frame_weight(before, g->lines[i].frame, &lb, &depth) / before->total;
                double b = frame_weight(after, g->lines[i].frame, &la, &depth) / after->total;
                double moved = sign * (b - a);
                if (pass == 0) {
                    most = moved > most ? moved : most;
                    continue;
                }
                if (moved < 0.9 * most || (found && depth <= deepest) ||
                    (pass == 1 && frame_in_stdlib(tree, g->lines[i].frame)))
                    continue;
                found = true;
                deepest = depth;
                *frame = g->lines[i].frame;
                *line = sign > 0 ? la : lb; /* where it spends its samples now, or did */
                *share_before = a;
                *share_after = b;
            }
        }
        if (pass == 0 && most < TP_REGIME_FUNCTION_MOVE)
            return false;
        if (pass >= 1 && found)
            return true;
    }
    return false;
}

/* The function a phase that grew is made of, before and after alike: of
 * those on TP_REGIME_FUNCTION_WHOLE of both groups' samples or more, the
 * deepest, outside the standard library where one is, never a script's
 * <module> (the loop around everything): its frame, line (after) and
 * shares. */
static bool made_of(const tp_stack_tree *tree, const group *before, const group *after,
                    uint32_t *frame, int32_t *line, double *share_before, double *share_after)
{
    if (before->total < TP_REGIME_FUNCTION_SAMPLES || after->total < TP_REGIME_FUNCTION_SAMPLES)
        return false;
    for (int pass = 1; pass <= 2; pass++) {
        bool found = false;
        uint32_t deepest = 0;
        for (size_t i = 0; i < after->n; i++) {
            uint32_t f = after->lines[i].frame, depth = 0;
            int32_t la = 0, lb = 0;
            double a = frame_weight(before, f, &lb, &depth) / before->total;
            double b = frame_weight(after, f, &la, &depth) / after->total;
            if (a < TP_REGIME_FUNCTION_WHOLE || b < TP_REGIME_FUNCTION_WHOLE ||
                (found && depth <= deepest) || (pass == 1 && frame_in_stdlib(tree, f)) ||
                (f >= 1 && f <= tree->nframes && tree->function[f - 1] &&
                 strcmp(tree->function[f - 1], "<module>") == 0))
                continue;
            found = true;
            deepest = depth;
            *frame = f;
            *line = la;
            *share_before = a;
            *share_after = b;
        }
        if (found)
            return true;
    }
    return false;
}

/* Puts the function cause right after the phase's, the last cause falling
 * off a full list. */
static void insert_cause(tp_regime *g, const tp_regime_cause *c)
{
    size_t at = 0;
    while (at < g->ncauses && g->causes[at].kind == TP_CAUSE_PHASE)
        at++;
    if (g->ncauses == TP_REGIME_CAUSES)
        g->ncauses--;
    if (at >= TP_REGIME_CAUSES)
        return;
    memmove(&g->causes[at + 1], &g->causes[at], (g->ncauses - at) * sizeof *g->causes);
    g->causes[at] = *c;
    g->ncauses++;
}

static void name_cause(const tp_stack_tree *tree, uint32_t frame, tp_regime_cause *c)
{
    bool known = frame >= 1 && frame <= tree->nframes;
    tp_utf8_clean(c->function, sizeof c->function,
                  known && tree->function[frame - 1] ? tree->function[frame - 1] : "?");
    tp_utf8_clean(c->file, sizeof c->file,
                  known && tree->file[frame - 1] ? tree->file[frame - 1] : "?");
}

_Static_assert(TP_CAUSE_TEXT == TP_PACE_TEXT, "a stored function's text is a cause's");

/* The function causes the summary stored for r's changes, put as the pass
 * over the samples puts them, where it holds one for each change (*done);
 * none where one is missing (a file stored before them, another pace). */
static bool add_stored(tp_run *run, tp_regimes *r, bool *done, char *err, size_t cap)
{
    tp_pace_function *v = NULL;
    size_t n = 0;
    *done = false;
    if (!tp_stored_pace_functions(run, &v, &n, err, cap))
        return false;
    const tp_pace_function *at[TP_REGIMES_MAX] = {0};
    bool all = n > 0 && r->n <= TP_REGIMES_MAX;
    for (size_t i = 1; all && i < r->n; i++) {
        for (size_t k = 0; k < n && !at[i]; k++)
            if (v[k].first_step == r->v[i].first_step && v[k].last_step == r->v[i].last_step)
                at[i] = &v[k];
        all = at[i] != NULL;
    }
    for (size_t i = 1; all && i < r->n; i++) {
        const tp_pace_function *f = at[i];
        if (!f->found || f->phase >= TP_STEP_PHASES || !isfinite(f->before) ||
            !isfinite(f->after)) /* none; a crafted file's */
            continue;
        tp_regime_cause c = {.kind = TP_CAUSE_FUNCTION,
                             .phase = f->phase,
                             .workers = f->workers,
                             .line = f->line,
                             .before = f->before,
                             .after = f->after};
        tp_utf8_clean(c.function, sizeof c.function, f->function);
        tp_utf8_clean(c.file, sizeof c.file, f->file);
        insert_cause(&r->v[i], &c);
    }
    free(v);
    *done = all;
    return true;
}

tp_pace_function *tp_regimes_pace_functions(const tp_regimes *r, size_t *n)
{
    *n = r->n > 1 ? r->n - 1 : 0;
    tp_pace_function *v = tp_xcalloc(*n ? *n : 1, sizeof *v);
    for (size_t i = 1; i < r->n; i++) {
        tp_pace_function *f = &v[i - 1];
        f->first_step = r->v[i].first_step;
        f->last_step = r->v[i].last_step;
        for (size_t k = 0; k < r->v[i].ncauses && !f->found; k++) {
            const tp_regime_cause *c = &r->v[i].causes[k];
            if (c->kind != TP_CAUSE_FUNCTION)
                continue;
            *f = (tp_pace_function){f->first_step, f->last_step, true,     c->phase, c->workers,
                                    c->line,       c->before,    c->after, "",       ""};
            memcpy(f->function, c->function, sizeof f->function);
            memcpy(f->file, c->file, sizeof f->file);
        }
    }
    return v;
}

/* A pass over the samples under way for r's function causes. */
struct tp_causes_pass {
    tp_regimes *r;
    change *changes; /* by regime index */
    tp_stack_tree tree;
    gather_ctx c;
};

tp_causes_pass *tp_regimes_causes_begin(tp_run *run, tp_regimes *r,
                                        const tp_region_withins *withins, tp_stack_reader *reader,
                                        char *err, size_t cap, bool *ok)
{
    *reader = (tp_stack_reader){0};
    *ok = true;
    if (r->n < 2 || !tp_run_has_stacks(run))
        return NULL;
    for (size_t i = 0; i < r->n; i++)
        if (!isfinite(r->v[i].t0_s) || !isfinite(r->v[i].t1_s))
            return NULL; /* a file stored before: no times to split the samples by */
    bool done;
    if (!(*ok = add_stored(run, r, &done, err, cap)) || done)
        return NULL;
    tp_causes_pass *p = tp_xcalloc(1, sizeof *p);
    p->r = r;
    p->changes = tp_xcalloc(r->n, sizeof *p->changes);
    bool any = false;
    for (size_t i = 1; i < r->n; i++) {
        p->changes[i].phase = TP_STEP_PHASES;
        for (size_t k = 0; k < r->v[i].ncauses; k++)
            if (r->v[i].causes[k].kind == TP_CAUSE_PHASE)
                p->changes[i].phase = r->v[i].causes[k].phase;
        any = any || p->changes[i].phase < TP_STEP_PHASES;
    }
    if (any && !(*ok = tp_stack_tree_load(run, &p->tree, err, cap))) {
        tp_regimes_causes_end(p, false);
        return NULL;
    }
    p->c = (gather_ctx){r, withins, &p->tree, p->changes};
    if (any)
        *reader = (tp_stack_reader){tp_ns_round_s(r->v[0].t0_s), gather, &p->c};
    return p;
}

void tp_regimes_causes_end(tp_causes_pass *p, bool read)
{
    if (!p)
        return;
    tp_regimes *r = p->r;
    for (size_t i = 1; read && i < r->n; i++) {
        const change *ch = &p->changes[i];
        if (ch->phase >= TP_STEP_PHASES)
            continue;
        double sign = r->v[i].phase_s[ch->phase] >= r->v[i - 1].phase_s[ch->phase] ? 1 : -1;
        tp_regime_cause best = {.kind = TP_CAUSE_FUNCTION, .phase = ch->phase}, other = best;
        uint32_t frame = 0, other_frame = 0;
        bool found = most_moved(&p->tree, &ch->thread[0], &ch->thread[1], sign, &frame, &best.line,
                                &best.before, &best.after);
        /* the workers' mover first: in dataloader_next with workers (the only
         * phase they are gathered for) the step thread receives their batches,
         * and its waiting (Connection._recv) grows with whatever slowed them:
         * once, beside other work, it moved more than the workers' function */
        other.workers = true;
        if (most_moved(&p->tree, &ch->workers[0], &ch->workers[1], sign, &other_frame, &other.line,
                       &other.before, &other.after)) {
            best = other;
            frame = other_frame;
            found = true;
        }
        /* none moved, and nothing of the machine did (or the steps grew all
         * along, as no machine's episode makes them): the phase grew with
         * what it is made of */
        if (!found && sign > 0 && (r->v[i].ncauses == 1 || r->drift.found))
            found = made_of(&p->tree, &ch->thread[0], &ch->thread[1], &frame, &best.line,
                            &best.before, &best.after);
        if (!found)
            continue;
        name_cause(&p->tree, frame, &best);
        insert_cause(&r->v[i], &best);
    }
    for (size_t i = 0; i < r->n; i++)
        for (size_t s = 0; s < 2; s++) {
            free(p->changes[i].thread[s].lines);
            free(p->changes[i].workers[s].lines);
        }
    free(p->changes);
    tp_stack_tree_free(&p->tree);
    free(p);
}

bool tp_regimes_add_stack_causes(tp_run *run, tp_regimes *r, tp_region_withins *withins, char *err,
                                 size_t cap)
{
    tp_stack_reader reader;
    bool ok = r->n < 2 || !tp_run_has_stacks(run) || tp_region_withins_once(run, withins, err, cap);
    if (!ok)
        return false;
    tp_causes_pass *p = tp_regimes_causes_begin(run, r, withins, &reader, err, cap, &ok);
    ok = ok && tp_run_each_stack_run_to(run, &reader, 1, err, cap);
    tp_regimes_causes_end(p, ok);
    return ok;
}
