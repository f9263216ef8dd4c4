/* thread_registry.h: the rings of this process's training threads, by
 * thread, for the process's stack sampler to read which region each thread
 * has open (lib/stacks.h). Lock-free: entries are claimed and released with
 * atomics, and a reader copies a ring's header fields with a read that fails
 * cleanly if the ring was unmapped meanwhile. */
#ifndef TP_LIB_THREAD_REGISTRY_H
#define TP_LIB_THREAD_REGISTRY_H

#include "ring.h"

#define TP_REGISTRY_MAX 4096 /* threads beyond are not looked up (their samples: no phase) */

void tp_registry_add(tp_ring_header *ring);
void tp_registry_remove(tp_ring_header *ring);
/* In a forked child: the parent's threads are gone. */
void tp_registry_clear(void);

#endif
