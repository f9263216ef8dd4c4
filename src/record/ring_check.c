/* ring_check.c: see ring_check.h. */
#include "record/ring_check.h"

#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/utf8.h"

const char *tp_handed_memfd_refused(int fd, bool ring, off_t *size)
{
    struct stat sb;
    int seals = fcntl(fd, F_GET_SEALS);
    if (fstat(fd, &sb) != 0 || seals < 0)
        return ring ? "it sent a ring that is not a memfd"
                    : "it sent a process page that is not a memfd";
    if ((seals & TP_RING_SEALS) != TP_RING_SEALS)
        return ring ? "its ring's memfd could be resized under the recorder (not sealed with "
                      "F_SEAL_SHRINK and F_SEAL_GROW)"
                    : "its process page's memfd could be resized under the recorder (not sealed "
                      "with F_SEAL_SHRINK and F_SEAL_GROW)";
    *size = sb.st_size;
    return NULL;
}

/* Why the ring in fd (its header copied into hdr) can't be taken, or NULL:
 * it must be a memfd sealed against shrinking and growing, whose size holds
 * the capacity its header claims, a power of two within the bounds. */
const char *tp_ring_refused(int fd, tp_ring_header *hdr, uint64_t *bytes)
{
    off_t size = 0;
    const char *why = tp_handed_memfd_refused(fd, true, &size);
    if (why)
        return why;
    if (pread(fd, hdr, sizeof *hdr, 0) != (ssize_t)sizeof *hdr)
        return "its ring is smaller than a ring's header";
    uint32_t cap = hdr->capacity;
    if (hdr->magic != TP_RING_MAGIC || hdr->version != TP_RING_VERSION)
        return "its ring is of another kind or version of libtrainprof";
    if (cap < TP_RING_SLOTS_MIN || cap > TP_RING_SLOTS_MAX || (cap & (cap - 1)))
        return "its ring claims a capacity out of bounds";
    *bytes = tp_ring_bytes(cap);
    if (*bytes > (uint64_t)size)
        return "its ring is smaller than the capacity it claims";
    return NULL;
}

/* A text field of a ring's header (size bytes the producer wrote, maybe
 * with no NUL) into out: valid UTF-8, its control characters escaped
 * (\xNN), cut on a character boundary. */
void tp_ring_header_text(char *out, size_t cap, const char *field, size_t size)
{
    char text[TP_CUDA_VISIBLE_MAX + 1];
    size_t n = size < sizeof text - 1 ? size : sizeof text - 1;
    memcpy(text, field, n);
    text[n] = '\0';
    tp_text_escape(out, cap, text);
}
