/* ops_timeline.h: one captured step's timeline for the html page (core/
 * ops_facts.h's boxes): the step thread's regions, each profiler thread's
 * outermost operators, each GPU stream's kernels, copies and memsets. */
#ifndef TP_ANALYZE_OPS_TIMELINE_H
#define TP_ANALYZE_OPS_TIMELINE_H

#include <stdint.h>

#include "core/ops_facts.h"
#include "store/reader_ops.h"

/* Fills f's boxes from d's events within the step [t0, t1) (once: a no-op
 * when f has a timeline already); intern makes f's own copy of a text. */
void tp_ops_timeline_take(tp_ops_facts *f, const tp_run_op_data *d, int64_t t0, int64_t t1,
                          const char *(*intern)(tp_ops_facts *f, const char *text));

#endif
