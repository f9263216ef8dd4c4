/* within_facts.h: the standard region each user region ran inside, as a
 * summary stores it (analyze/region_within.c finds it, store/
 * summary_tables.h keeps it). */
#ifndef TP_CORE_WITHIN_FACTS_H
#define TP_CORE_WITHIN_FACTS_H

/* A user region's name and the standard region (a phase or a pause) it
 * spent the most time inside, NULL where it ran outside every one. */
typedef struct tp_region_within {
    char *name;
    char *within;
    double seconds; /* its time inside it, all its instances together */
} tp_region_within;

#endif
