/* region_within.h: the standard region each user region ran inside.
 *
 * A stack sample carries only the innermost region its thread had open, so
 * a user's region (trainprof.region, or any name that is no standard phase
 * or pause: core/phases.h) holds its own samples: "augment" inside
 * train_batch takes them out of train_batch's, and "logging" between the
 * phases out of the step's time outside them ("other"). Here each user
 * region's name gets the nearest enclosing region of a standard name on its
 * thread (train_batch, forward, evaluate ...), or none where it ran outside
 * every standard one: over all its instances, the enclosing one it spent the
 * most time in. A user region inside another takes the outer one's.
 *
 * From the rows in one pass (each thread's regions come in the order they
 * closed: a region's children before it, so its parent is the next region
 * of one level less on its thread), or from the summary that stored them
 * (summary_region_within); none for a run whose names are all standard (no
 * pass). No words. */
#ifndef TP_ANALYZE_REGION_WITHIN_H
#define TP_ANALYZE_REGION_WITHIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/within_facts.h"
#include "store/reader.h"

/* Distinct (user region, enclosing) pairs kept; a crafted file's beyond are
 * left out (their regions keep their own samples). */
#define TP_WITHIN_PAIRS_MAX 4096

typedef struct tp_region_withins {
    tp_region_within *v; /* by name */
    size_t n;
    bool built; /* tp_region_withins_once: made already */
} tp_region_withins;

/* The stored pairs where the summary holds them, else the rows'. False
 * (reason in err) where the file could not be read; tp_region_withins_free
 * in every case. */
bool tp_region_withins_build(tp_run *run, tp_region_withins *out, char *err, size_t cap);

/* From the rows only (what the summary stores). */
bool tp_region_withins_from_rows(tp_run *run, tp_region_withins *out, char *err, size_t cap);

/* tp_region_withins_build where w (zeroed at first) is not built yet: the
 * pass made once for the readers of one file (the summary's stacks, their
 * latest pace's, the causes of its changes). */
bool tp_region_withins_once(tp_run *run, tp_region_withins *w, char *err, size_t cap);

/* A copy of from into *to, to free apart. */
void tp_region_withins_copy(const tp_region_withins *from, tp_region_withins *to);

void tp_region_withins_free(tp_region_withins *w);

/* What a sample taken in region counts for: region itself where it is
 * NULL, standard, or a user region w does not know; else the standard
 * region it ran inside (NULL where none: the time outside the phases). */
const char *tp_region_counts_for(const tp_region_withins *w, const char *region);

/* Region's entry in w, or NULL (w's names are sorted). */
const tp_region_within *tp_region_within_find(const tp_region_withins *w, const char *region);

/* The streaming form, for a pass that reads the regions anyway, and for
 * tests: names by id first (text copied), then every region row in the
 * file's order, then finish (which frees the accumulator). */
typedef struct tp_within_acc tp_within_acc;
tp_within_acc *tp_within_acc_new(void);
void tp_within_acc_name(tp_within_acc *a, int64_t id, const char *text);
/* Whether any name given so far is a user region's (else no pass is needed). */
bool tp_within_acc_has_user_names(const tp_within_acc *a);
void tp_within_acc_region(tp_within_acc *a, int64_t thread, int64_t name_id, int depth,
                          int64_t start_ns, int64_t end_ns);
void tp_within_acc_finish(tp_within_acc *a, tp_region_withins *out);

#endif
