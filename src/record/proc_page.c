/* proc_page.c: see proc_page.h. */
#include "record/proc_page.h"

#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "record/ring_check.h"

/* Why the page in fd can't be taken, or NULL. */
static const char *refused(int fd)
{
    off_t size = 0;
    const char *why = tp_handed_memfd_refused(fd, false, &size);
    if (why)
        return why;
    tp_proc_page page;
    if (size < (off_t)TP_PROC_PAGE_BYTES ||
        pread(fd, &page, sizeof page, 0) != (ssize_t)sizeof page)
        return "its process page is smaller than a page";
    if (page.magic != TP_PROC_MAGIC || page.version != TP_PROC_VERSION)
        return "its process page is of another kind or version of libtrainprof";
    return NULL;
}

const char *tp_proc_page_map(tp_proc_page **slot, int fd)
{
    const char *why = *slot ? "it sent a second process page" : refused(fd);
    void *page = why ? MAP_FAILED : mmap(NULL, TP_PROC_PAGE_BYTES, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (page == MAP_FAILED)
        return why ? why : "its process page could not be mapped";
    *slot = page;
    return NULL;
}

tp_windows_unsent tp_proc_page_release(tp_proc_page **slot, tp_sink *sink, int32_t pid)
{
    if (!*slot)
        return (tp_windows_unsent){0, 0};
    uint64_t n = atomic_load_explicit(&(*slot)->threads_unrecorded, memory_order_acquire);
    uint32_t windows = atomic_load_explicit(&(*slot)->windows_unsent, memory_order_acquire);
    uint64_t step = atomic_load_explicit(&(*slot)->windows_unsent_step, memory_order_relaxed);
    if (n)
        tp_sink_threads_unrecorded(sink, n);
    if (windows) {
        char source[64], reason[300];
        snprintf(source, sizeof source, "capture windows of pid %d", (int)pid);
        snprintf(reason, sizeof reason,
                 "%u capture window%s could not be handed over to the recorder (its socket full "
                 "while it was short of CPU, or no memory for %s): %s operators were not "
                 "recorded",
                 windows, windows == 1 ? "" : "s", windows == 1 ? "it" : "them",
                 windows == 1 ? "its" : "their");
        tp_sink_unavailable(sink, source, reason);
    }
    munmap(*slot, TP_PROC_PAGE_BYTES);
    *slot = NULL;
    return (tp_windows_unsent){windows, windows ? step : 0};
}
