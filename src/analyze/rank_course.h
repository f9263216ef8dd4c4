/* rank_course.h: each rank's steps in time order, as its step marks give
 * them, for what follows the course of a run (stalls.h, regimes.h).
 *
 * A rank's course is that of its thread that marked the most steps (the
 * training loop's): a step runs from one step mark to the next, never across
 * an epoch mark; a step-end mark closes the open step and opens none. The
 * last mark says whether a step was still open when the recording ended. */
#ifndef TP_ANALYZE_RANK_COURSE_H
#define TP_ANALYZE_RANK_COURSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/reader.h"

typedef struct tp_rank_course {
    int rank;
    int64_t thread;  /* the thread followed */
    int64_t *a, *b;  /* its closed steps' begin and end, ns, in time order */
    size_t n;        /* closed steps */
    size_t begun;    /* step marks: steps begun, the open one included */
    int64_t last_ns; /* its latest step, step-end or epoch mark */
    bool open;       /* that mark began a step, which never closed */
} tp_rank_course;

typedef struct tp_course {
    tp_rank_course *v; /* in rank order */
    size_t n;
} tp_course;

/* False (reason in err) when the marks can't be read; tp_course_free in
 * every case. */
bool tp_course_build(tp_run *run, tp_course *out, char *err, size_t cap);
void tp_course_free(tp_course *c);

/* The course of rank, or NULL. */
const tp_rank_course *tp_course_rank(const tp_course *c, int rank);

#endif
