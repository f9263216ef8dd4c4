/* stacks.c: see stacks.h. */
#include "stacks.h"

#include <string.h>

#include "thread_state.h"

bool tp_frame_send(uint32_t frame, const char *text, size_t len)
{
    tp_thread *t = &tp_self;
    if (!tp_thread_ready(t) || frame == 0)
        return false;
    tp_event head = {0, TP_EV_FRAME, frame, 0, (uint64_t)len};
    return tp_thread_send(t, &head, text, len);
}

bool tp_stack_send(uint64_t t_ns, int32_t tid, uint32_t phase, uint64_t flags,
                   const tp_stack_ref *refs, uint32_t n)
{
    tp_thread *t = &tp_self;
    if (!tp_thread_ready(t))
        return false;
    if (n > TP_STACK_DEPTH_MAX) {
        n = TP_STACK_DEPTH_MAX;
        flags |= TP_STACK_TRUNCATED;
    }
    /* the phase's name, defined in this ring before its first use here */
    if (phase && !tp_thread_name_defined(t, phase)) {
        tp_thread_define_name(t, phase);
        if (!tp_thread_name_defined(t, phase))
            phase = 0;
    }
    tp_event head = {t_ns, TP_EV_STACK, phase, tid, (uint64_t)n | (flags & ~0xffffffffull)};
    return tp_thread_send(t, &head, refs, n * sizeof *refs);
}

bool tp_stack_repeat_send(uint64_t t_ns, int32_t tid, uint32_t count)
{
    tp_thread *t = &tp_self;
    if (!tp_thread_ready(t) || tid <= 0 || count == 0)
        return false;
    int64_t value = (int64_t)((uint64_t)count << 32 | (uint32_t)tid);
    tp_event head = {t_ns, TP_EV_STACK, 0, value, TP_STACK_REPEAT};
    return tp_thread_send(t, &head, NULL, 0);
}
