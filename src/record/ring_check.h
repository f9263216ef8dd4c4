/* ring_check.h: what the drain checks of a ring a training process hands
 * over, before it maps it, and the text fields of its header made safe. */
#ifndef TP_RECORD_RING_CHECK_H
#define TP_RECORD_RING_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ring.h"

/* Why the ring in fd (its header copied into hdr) can't be taken, or NULL
 * (then its mapping's size in *bytes): it must be a memfd sealed against
 * shrinking and growing, whose size holds the capacity its header claims,
 * a power of two within the bounds. */
const char *tp_ring_refused(int fd, tp_ring_header *hdr, uint64_t *bytes);

/* Why fd, a ring (ring) or a process page, can't be mapped, or NULL (then
 * its size in *size): it must be a memfd sealed against shrinking and
 * growing. */
const char *tp_handed_memfd_refused(int fd, bool ring, off_t *size);

/* A text field of a ring's header (size bytes the producer wrote, maybe
 * with no NUL) into out: valid UTF-8, its control characters escaped
 * (\xNN), cut on a character boundary. */
void tp_ring_header_text(char *out, size_t cap, const char *field, size_t size);

#endif
