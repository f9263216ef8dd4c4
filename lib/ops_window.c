/* ops_window.c: see ops_window.h. */
#include "ops_window.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

#include "thread_state.h"

_Atomic uint64_t tp_steps_marked_count;

uint64_t tp_steps_marked(void)
{
    return atomic_load_explicit(&tp_steps_marked_count, memory_order_relaxed);
}

uint32_t tp_ops_seq(void)
{
    tp_thread *t = tp_self_ptr();
    return t->state == TP_THREAD_ACTIVE
               ? atomic_load_explicit(&t->ring->ops_seq, memory_order_acquire)
               : 0;
}

bool tp_ops_request_read(tp_ops_request *out)
{
    tp_thread *t = tp_self_ptr();
    if (t->state != TP_THREAD_ACTIVE)
        return false;
    tp_ring_header *h = t->ring;
    out->seq = atomic_load_explicit(&h->ops_seq, memory_order_acquire);
    out->reason = atomic_load_explicit(&h->ops_reason, memory_order_relaxed);
    out->steps = atomic_load_explicit(&h->ops_steps, memory_order_relaxed);
    out->first_step = atomic_load_explicit(&h->ops_first_step, memory_order_relaxed);
    return out->seq != 0;
}

void tp_ops_begun(uint64_t step)
{
    tp_thread *t = tp_self_ptr();
    if (t->state != TP_THREAD_ACTIVE)
        return;
    tp_ring_header *h = t->ring;
    atomic_store_explicit(&h->ops_begun_step, step, memory_order_relaxed);
    atomic_store_explicit(&h->ops_begun,
                          atomic_load_explicit(&h->ops_begun, memory_order_relaxed) + 1,
                          memory_order_release);
}

/* The step count this thread's last capture window began at (0: none). */
static uint64_t window_first_step(void)
{
    tp_thread *t = tp_self_ptr();
    return t->state == TP_THREAD_ACTIVE
               ? atomic_load_explicit(&t->ring->ops_begun_step, memory_order_relaxed)
               : 0;
}

bool tp_ops_send(const void *blob, size_t len)
{
    int fd = memfd_create("trainprof-ops", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        tp_channel_window_unsent(window_first_step());
        return false;
    }
    bool ok = true;
    for (size_t off = 0; ok && off < len;) {
        ssize_t n = write(fd, (const char *)blob + off, len - off);
        ok = n > 0;
        off += ok ? (size_t)n : 0;
    }
    /* sealed, so that what the recorder reads is what was sent */
    ok =
        ok && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) == 0;
    ok = ok && tp_channel_send_fd("ops", fd);
    close(fd);
    if (!ok) /* the socket full (a recorder short of CPU), or no memory for it */
        tp_channel_window_unsent(window_first_step());
    return ok;
}
