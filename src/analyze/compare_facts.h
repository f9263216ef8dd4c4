/* compare_facts.h: what differs between two runs compared
 * (analyze/run_compare.h) besides their steps: the facts of the script and
 * of the machine, and whether they ran the same program. No words. */
#ifndef TP_ANALYZE_COMPARE_FACTS_H
#define TP_ANALYZE_COMPARE_FACTS_H

#include <stdbool.h>
#include <stddef.h>

#include "analyze/summary.h"

#define TP_COMPARE_FACTS 24  /* differing facts kept */
#define TP_COMPARE_TEXT  128 /* a fact's value kept, cut beyond */

/* A fact of the script or the machine whose values differ (an empty value:
 * the run does not say). */
typedef struct tp_compare_fact {
    char key[64];
    char a[TP_COMPARE_TEXT], b[TP_COMPARE_TEXT];
} tp_compare_fact;

/* The facts that differ between a and b (world_a, world_b their world
 * sizes), into out (TP_COMPARE_FACTS of them at most); how many: the
 * command, the machine's meta keys (host, CPU model and count, kernel,
 * cgroup limits, GPU driver, trainprof's version), the world sizes, the
 * first GPU's model, and the script's facts (fact.*) of either run;
 * strings as the files hold them, cut and made valid UTF-8. */
size_t tp_compare_differing_facts(const tp_summary *a, const tp_summary *b, int world_a,
                                  int world_b, tp_compare_fact out[TP_COMPARE_FACTS]);

/* Whether a and b ran the same program: the command's first word, and for
 * an interpreter (python...) the script or -m module after it. */
bool tp_compare_same_program(const tp_run *a, const tp_run *b);

#endif
