/* _stacks.h: reading the Python stacks of every thread of this process from
 * another thread, without the GIL and without stopping anyone.
 *
 * The walker is built against the running interpreter's own internal
 * headers (_stacks.c, Py_BUILD_CORE), so it knows the layout of thread
 * states, frames, code objects and strings of exactly this CPython (3.9 to
 * 3.13), with no table of offsets. Every read of interpreter memory goes
 * through a read that fails cleanly (process_vm_readv on this process, or a
 * pipe where that is refused): a thread that exits, a frame popped or a code
 * object freed mid-read gives a short or wrong stack, checked against the
 * objects' types and bounds, never a crash. What it reads can be torn (the
 * threads run on); a sample is a best guess of where each thread was, as
 * every sampling profiler's is.
 *
 * Not thread-safe: one walker per sampling thread. This header needs no
 * Python header. */
#ifndef TP_PY_STACKS_H
#define TP_PY_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TP_STACK_FRAMES_MAX 256 /* innermost frames kept; deeper stacks are cut */

typedef struct tp_stack_walker tp_stack_walker;

/* A frame: its code (an index of the walker's code table, from 1) and the
 * line it was at (0 when unknown). */
typedef struct tp_stack_frame {
    uint32_t code;
    int32_t line;
} tp_stack_frame;

/* One thread's stack, innermost frame first. */
typedef struct tp_stack_thread {
    unsigned long thread_id; /* threading.get_ident() */
    int32_t native_tid;      /* the kernel's thread id; 0 where the interpreter
                                doesn't keep it (before 3.11) */
    size_t nframes;
    bool truncated; /* deeper than TP_STACK_FRAMES_MAX, or a read failed midway */
} tp_stack_thread;

/* interp: the PyInterpreterState to walk (PyInterpreterState_Get(), taken
 * with the GIL). NULL on out of memory. */
tp_stack_walker *tp_stack_walker_new(void *interp);
void tp_stack_walker_free(tp_stack_walker *w);

/* Whether w was made in this process (not in the parent of a fork, whose
 * memory it would read). */
bool tp_stack_walker_owned(const tp_stack_walker *w);

typedef void (*tp_stack_fn)(void *ctx, const tp_stack_thread *t, const tp_stack_frame *frames);
/* Called for each thread just before its state is read (nframes 0 yet),
 * and with it the pointer to its innermost frame: what must match that
 * frame is read here, and read again after it to tell a thread that moved
 * on between the two (a sampler put off between them, on a busy machine). */
typedef void (*tp_stack_before_fn)(void *ctx, const tp_stack_thread *t);

/* Reads every thread's stack and calls fn for each (threads with no Python
 * frame too, with nframes 0), before (if not NULL) ahead of reading each.
 * Returns the number of threads read; -1 when even the thread list could
 * not be read. */
int tp_stack_walk(tp_stack_walker *w, tp_stack_before_fn before, tp_stack_fn fn, void *ctx);

/* Whether thread t's stack is read now: 0 yes; k >= 1 not now, nor asked
 * again for the next k - 1 walks (the walker counts them down itself: a
 * thread put off costs a decrement a walk). */
typedef uint32_t (*tp_stack_due_fn)(void *ctx, const tp_stack_thread *t);

/* tp_stack_walk over the threads due says are due. The interpreter's list
 * of threads is read anew when refresh, when it was never read, or when its
 * head is no longer the one then (CPython adds a new thread at the head: a
 * thread started since is seen at once); due is then asked of every thread
 * it lists. Else the last list's thread states are visited without reading
 * the list; one gone is skipped (its state read again no longer names it),
 * and the list read again at the next walk. A state that carries another
 * listed thread's ids (a new thread's before it runs: its creator's) is
 * never read, nor asked of due; the list is read again 10 walks later
 * (twice as late each time the same state is found so again, up to 160).
 * Returns the threads listed, -1 when the list could not be read. */
int tp_stack_walk_due(tp_stack_walker *w, bool refresh, tp_stack_due_fn due,
                      tp_stack_before_fn before, tp_stack_fn fn, void *ctx);

/* The walks no listed thread is due for (every one put off: the sampler
 * may sleep through them; a relisting asked for is not slept through),
 * and those walks passed without walking. */
uint32_t tp_stack_walker_idle_walks(const tp_stack_walker *w);
void tp_stack_walker_skip(tp_stack_walker *w, uint32_t walks);

/* A code's function (its qualified name from 3.11) and file, UTF-8, cut to
 * fit; valid until the walker's next walk may reuse the entry (a table full
 * of codes starts again empty). */
const char *tp_stack_code_function(const tp_stack_walker *w, uint32_t code);
const char *tp_stack_code_file(const tp_stack_walker *w, uint32_t code);

/* The table's generation: it grows by one each time the code table is
 * emptied, so that users of code indexes know to forget theirs. */
uint32_t tp_stack_code_generation(const tp_stack_walker *w);

#endif
