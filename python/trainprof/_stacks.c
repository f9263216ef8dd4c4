/* _stacks.c: see _stacks.h. The threads, their stacks and the walker's
 * life; code objects and frames are _stack_code.c's. */
#include "_stacks_internal.h"

/* ---- threads ---- */

static uintptr_t first_thread(tp_stack_walker *w)
{
    PyThreadState *head = NULL;
#if PY_VERSION_HEX >= 0x030B0000
    if (!safe_read(w, &head, &w->interp->threads.head, sizeof head))
        return 0;
#else
    if (!safe_read(w, &head, &w->interp->tstate_head, sizeof head))
        return 0;
#endif
    return (uintptr_t)head;
}

/* The innermost frame of thread state ts (a copy). */
static uintptr_t top_frame(tp_stack_walker *w, const PyThreadState *ts)
{
#if PY_VERSION_HEX >= 0x030D0000
    (void)w;
    return (uintptr_t)ts->current_frame;
#elif PY_VERSION_HEX >= 0x030B0000
    struct _PyInterpreterFrame *f = NULL;
    if (!ts->cframe || !safe_read(w, &f, &ts->cframe->current_frame, sizeof f))
        return 0;
    return (uintptr_t)f;
#else
    (void)w;
    return (uintptr_t)ts->frame;
#endif
}

/* The cache entry of thread state tstate: its own, else the one used least
 * recently (emptied). */
static struct last_stack *last_of(tp_stack_walker *w, uintptr_t tstate)
{
    struct last_stack *oldest = &w->last[0];
    for (size_t i = 0; i < STACK_CACHE; i++) {
        if (w->last[i].tstate == tstate)
            return &w->last[i];
        if (w->last[i].walk < oldest->walk)
            oldest = &w->last[i];
    }
    oldest->tstate = tstate;
    oldest->top = 0;
    return oldest;
}

/* Reads the stack from frame top into w->frames and t. The innermost frame
 * is read first; if it is where it was at this thread's last sample (same
 * frame, same instruction, same caller: a thread blocked in a call), its
 * callers can't have moved either, and the last stack is reused. */
static void read_stack(tp_stack_walker *w, uintptr_t tstate, uintptr_t top, tp_stack_thread *t)
{
    struct last_stack *last = last_of(w, tstate);
    last->walk = w->walks;
    uintptr_t frame = top, top_instr = 0, top_previous = 0;
    for (size_t depth = 0; frame; depth++) {
        if (t->nframes == TP_STACK_FRAMES_MAX || depth > 4 * TP_STACK_FRAMES_MAX) {
            t->truncated = true;
            break;
        }
        uintptr_t next = 0, instr = 0;
        if (!tp_stacks_read_frame(w, frame, &w->frames[t->nframes], &next, &instr)) {
            t->truncated = true;
            break;
        }
        if (depth == 0) {
            top_instr = instr, top_previous = next;
            if (last->top == top && last->instr == instr && last->previous == next &&
                last->generation == w->generation) {
                memcpy(w->frames, last->frames, last->nframes * sizeof *w->frames);
                t->nframes = last->nframes;
                t->truncated = last->truncated;
                return;
            }
        }
        if (w->frames[t->nframes].code)
            t->nframes++;
        frame = next;
    }
    last->top = top, last->instr = top_instr, last->previous = top_previous;
    last->generation = w->generation;
    last->nframes = t->nframes;
    last->truncated = t->truncated;
    memcpy(last->frames, w->frames, t->nframes * sizeof *w->frames);
}

/* The thread (ids from its state ts, a copy) read and handed to fn. */
static void walk_thread(tp_stack_walker *w, uintptr_t tstate, const PyThreadState *ts,
                        tp_stack_thread *t, tp_stack_fn fn, void *ctx)
{
    read_stack(w, tstate, top_frame(w, ts), t);
    fn(ctx, t, w->frames);
}

static tp_stack_thread thread_of(const PyThreadState *ts)
{
    tp_stack_thread t = {.thread_id = ts->thread_id};
#if PY_VERSION_HEX >= 0x030B0000
    t.native_tid = (int32_t)ts->native_thread_id;
#endif
    return t;
}

/* Thread l's state, as it is now, into *ts; false (and the list read again
 * at the next walk) where it is no longer the thread listed: gone (its
 * memory reused), or one whose ids changed since (a new thread's, which
 * carried its creator's ids when listed). */
static bool read_listed(tp_stack_walker *w, const struct listed *l, PyThreadState *ts)
{
    if (safe_read(w, ts, (const void *)l->tstate, sizeof *ts) && ts->thread_id == l->thread_id &&
        thread_of(ts).native_tid == l->native_tid)
        return true;
    w->list_read = false;
    return false;
}

/* Whether listed thread a and b name the same thread (the kernel's id where
 * the interpreter keeps it, else its pthread id). */
static bool same_ids(const struct listed *a, const struct listed *b)
{
    return a->native_tid || b->native_tid ? a->native_tid == b->native_tid
                                          : a->thread_id == b->thread_id;
}

/* Marks the entries of w->listed that carry another's ids. CPython (3.11,
 * and before) gives a new thread's state its creator's thread ids until
 * the thread runs and sets its own; PyThreadState_New (3.12 on), which C
 * extensions call, binds the caller's for good. New states go in at the
 * head, so the one listed last is the creator's own; the others are left
 * unread (and their ids unasked of due: the creator's pacing is its own),
 * and the list is read again UNBOUND_RELIST_WALKS later, when a new
 * thread's own ids are in; twice as late each time the same state is
 * found so again (one kept for good), up to UNBOUND_RELIST_MAX. Linear in
 * the threads (a table of the ids seen), at a listing only: a process that
 * starts thousands of threads lists thousands of times. */
#define UNBOUND_RELIST_WALKS 10
#define UNBOUND_RELIST_MAX   160
static void mark_unbound(tp_stack_walker *w)
{
    uintptr_t first = 0;
    const size_t mask = IDS_SLOTS - 1;
    for (size_t i = w->nlisted; i-- > 0;) { /* oldest first: the ids' own thread */
        struct listed *l = &w->listed[i];
        uint64_t key = l->native_tid ? (uint64_t)(uint32_t)l->native_tid : (uint64_t)l->thread_id;
        size_t s = (size_t)(key * 0x9E3779B97F4A7C15ull >> 40) & mask;
        while (w->ids_seen[s] && !same_ids(&w->listed[w->ids_seen[s] - 1], l))
            s = (s + 1) & mask;
        if (w->ids_seen[s]) {
            l->unbound = true;
            first = l->tstate; /* the newest such state, at the end of the loop */
        } else {
            w->ids_seen[s] = (uint32_t)i + 1;
        }
    }
    memset(w->ids_seen, 0, IDS_SLOTS * sizeof *w->ids_seen);
    if (!first || first != w->unbound_seen || !w->relist_every)
        w->relist_every = UNBOUND_RELIST_WALKS;
    else if (w->relist_every < UNBOUND_RELIST_MAX)
        w->relist_every *= 2;
    w->unbound_seen = first;
    w->relist_in = first ? w->relist_every : 0;
}

/* Reads listed thread l and hands it to fn, before called first: ahead of
 * the read of its state, which holds its innermost frame (what before
 * reads must be of the moment that frame is, or earlier). */
static void read_due(tp_stack_walker *w, const struct listed *l, tp_stack_thread *t,
                     tp_stack_before_fn before, tp_stack_fn fn, void *ctx)
{
    PyThreadState ts;
    if (before)
        before(ctx, t);
    if (read_listed(w, l, &ts))
        walk_thread(w, l->tstate, &ts, t, fn, ctx);
}

/* Reads the interpreter's list of threads into w->listed, then asks due of
 * each and reads those it says are due. */
static int walk_list(tp_stack_walker *w, tp_stack_due_fn due, tp_stack_before_fn before,
                     tp_stack_fn fn, void *ctx)
{
    uintptr_t tstate = first_thread(w);
    if (!tstate)
        return -1;
    w->nlisted = 0;
    w->list_read = true;
    w->listed_head = tstate;
    while (tstate && w->nlisted < THREADS_MAX) {
        PyThreadState ts;
        if (!safe_read(w, &ts, (const void *)tstate, sizeof ts))
            break;
        tp_stack_thread t = thread_of(&ts);
        w->listed[w->nlisted++] = (struct listed){tstate, t.thread_id, t.native_tid, 0, false};
        tstate = (uintptr_t)ts.next;
    }
    mark_unbound(w);
    for (size_t i = 0; i < w->nlisted; i++) {
        struct listed *l = &w->listed[i];
        tp_stack_thread t = {.thread_id = l->thread_id, .native_tid = l->native_tid};
        uint32_t wait = l->unbound ? 0 : due ? due(ctx, &t) : 0;
        l->wait = wait ? wait - 1 : 0;
        if (!wait && !l->unbound)
            read_due(w, l, &t, before, fn, ctx);
    }
    return (int)w->nlisted;
}

int tp_stack_walk_due(tp_stack_walker *w, bool refresh, tp_stack_due_fn due,
                      tp_stack_before_fn before, tp_stack_fn fn, void *ctx)
{
    if (getpid() != w->pid)
        return -1; /* a forked child's walker would read its parent */
    w->walks++;
    /* a thread started since the list was read is its new head (CPython
     * adds threads at the head): one read a walk tells */
    if (refresh || !w->list_read || first_thread(w) != w->listed_head ||
        (w->relist_in && --w->relist_in == 0))
        return walk_list(w, due, before, fn, ctx);
    for (size_t i = 0; i < w->nlisted; i++) {
        struct listed *l = &w->listed[i];
        if (l->unbound)
            continue;
        if (l->wait) {
            l->wait--;
            continue;
        }
        tp_stack_thread t = {.thread_id = l->thread_id, .native_tid = l->native_tid};
        uint32_t wait = due ? due(ctx, &t) : 0;
        if (wait) {
            l->wait = wait - 1;
            continue;
        }
        read_due(w, l, &t, before, fn, ctx);
    }
    return (int)w->nlisted;
}

uint32_t tp_stack_walker_idle_walks(const tp_stack_walker *w)
{
    uint32_t least = UINT32_MAX;
    for (size_t i = 0; i < w->nlisted && least; i++)
        if (!w->listed[i].unbound)
            least = w->listed[i].wait < least ? w->listed[i].wait : least;
    if (w->relist_in && w->relist_in - 1 < least) /* the relisting's walk is kept */
        least = w->relist_in - 1;
    return w->nlisted && least != UINT32_MAX ? least : 0;
}

void tp_stack_walker_skip(tp_stack_walker *w, uint32_t walks)
{
    for (size_t i = 0; i < w->nlisted; i++)
        w->listed[i].wait = w->listed[i].wait > walks ? w->listed[i].wait - walks : 0;
    if (w->relist_in)
        w->relist_in = w->relist_in > walks ? w->relist_in - walks : 1;
}

int tp_stack_walk(tp_stack_walker *w, tp_stack_before_fn before, tp_stack_fn fn, void *ctx)
{
    return tp_stack_walk_due(w, true, NULL, before, fn, ctx);
}

tp_stack_walker *tp_stack_walker_new(void *interp)
{
    tp_stack_walker *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->codes = calloc(CODE_SLOTS, sizeof *w->codes);
    w->index = calloc(CODE_SLOTS, sizeof *w->index);
    w->last = calloc(STACK_CACHE, sizeof *w->last);
    w->listed = calloc(THREADS_MAX, sizeof *w->listed);
    w->ids_seen = calloc(IDS_SLOTS, sizeof *w->ids_seen);
    if (!w->codes || !w->index || !w->last || !w->listed || !w->ids_seen) {
        tp_stack_walker_free(w);
        return NULL;
    }
    w->interp = interp;
    w->pid = getpid();
    tp_self_reader_init(&w->reader);
    return w;
}

void tp_stack_walker_free(tp_stack_walker *w)
{
    if (!w)
        return;
    if (w->codes)
        for (size_t i = 0; i < CODE_SLOTS; i++)
            free(w->codes[i].table_copy);
    free(w->codes);
    free(w->index);
    free(w->last);
    free(w->listed);
    free(w->ids_seen);
    tp_self_reader_close(&w->reader);
    free(w);
}
