/* rank_course.c: each rank's steps in time order (rank_course.h). */
#include "analyze/rank_course.h"

#include <stdlib.h>
#include <string.h>

#include "core/batch.h"
#include "util/grow.h"
#include "util/oom.h"

/* The thread of marks[lo, hi) (one rank's, by thread) with the most step
 * marks: its first index in *from, one past its last in *to. */
static void busiest_thread(const tp_run_mark *m, size_t lo, size_t hi, size_t *from, size_t *to)
{
    size_t best = 0;
    *from = *to = lo;
    for (size_t i = lo; i < hi;) {
        size_t j = i, steps = 0;
        while (j < hi && m[j].thread == m[i].thread)
            steps += m[j++].kind == TP_MARK_STEP;
        if (steps > best || *to == lo) {
            best = steps;
            *from = i;
            *to = j;
        }
        i = j;
    }
}

static void follow(tp_rank_course *rc, const tp_run_mark *m, size_t from, size_t to)
{
    size_t room = to - from + 1;
    rc->a = tp_xmalloc(room * sizeof *rc->a);
    rc->b = tp_xmalloc(room * sizeof *rc->b);
    rc->thread = m[from].thread;
    long open = -1; /* the open step's mark */
    for (size_t i = from; i < to; i++) {
        if (m[i].kind == TP_MARK_SAMPLES)
            continue;
        rc->last_ns = m[i].t_ns;
        if (open >= 0 && m[i].kind != TP_MARK_EPOCH && m[i].t_ns >= m[open].t_ns) {
            rc->a[rc->n] = m[open].t_ns;
            rc->b[rc->n++] = m[i].t_ns;
        }
        open = m[i].kind == TP_MARK_STEP ? (long)i : -1;
        rc->begun += m[i].kind == TP_MARK_STEP;
    }
    rc->open = open >= 0;
}

bool tp_course_build(tp_run *run, tp_course *out, char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    tp_run_mark *m;
    size_t n;
    if (!tp_run_step_marks(run, &m, &n, err, cap))
        return false;
    size_t vcap = 0;
    for (size_t lo = 0; lo < n;) {
        size_t hi = lo;
        while (hi < n && m[hi].rank == m[lo].rank)
            hi++;
        size_t from, to;
        busiest_thread(m, lo, hi, &from, &to);
        out->v = tp_grow(out->v, out->n, &vcap, sizeof *out->v);
        tp_rank_course *rc = &out->v[out->n++];
        *rc = (tp_rank_course){.rank = m[lo].rank, .last_ns = -1};
        follow(rc, m, from, to);
        lo = hi;
    }
    free(m);
    return true;
}

void tp_course_free(tp_course *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].a);
        free(c->v[i].b);
    }
    free(c->v);
    memset(c, 0, sizeof *c);
}

const tp_rank_course *tp_course_rank(const tp_course *c, int rank)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].rank == rank)
            return &c->v[i];
    return NULL;
}
