/* facts.c: see facts.h. */
#include "facts.h"

#include "clock.h"
#include "ring.h"
#include "thread_state.h"

bool tp_fact_send(const char *text, size_t len)
{
    size_t key_len;
    tp_thread *t = tp_self_ptr();
    if (!tp_fact_valid(text, len, &key_len) || !tp_thread_ready(t))
        return false;
    tp_event head = {tp_clock_stamp(), TP_EV_FACT, 0, 0, (uint64_t)len}; /* when it was said */
    return tp_thread_send(t, &head, text, len);
}
