/* stacks.h: what a process's stack sampler (the Python extension's, see
 * python/trainprof/_stack_sampler.c) sends through its own ring, and what it
 * reads of the process's other training threads.
 *
 * A frame travels once per ring, as TP_EV_FRAME (name_id: the frame's id,
 * from 1, the sampler's own; aux: the text's length) followed by its text,
 * "function\nfile", in as many slots as it needs. A sample is TP_EV_STACK
 * (name_id: the sampled thread's innermost open region, 0 for none; value:
 * the sampled thread's kernel id; aux: the frame count in its low 32 bits,
 * TP_STACK_* flags above) followed by its frames, innermost first,
 * TP_STACK_REFS_PER_SLOT to a slot; or, with TP_STACK_REPEAT, no frames:
 * the thread's last sample again, count times. */
#ifndef TP_LIB_STACKS_H
#define TP_LIB_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ring.h"
#include "self_read.h"

#define TP_STACK_ON_CPU    (1ull << 32) /* the thread was running (or runnable) */
#define TP_STACK_TRUNCATED (1ull << 33) /* deeper than sent, or a read failed midway */
#define TP_STACK_STATE     (1ull << 34) /* TP_STACK_ON_CPU is known (the kernel said) */
/* The kernel had the thread in uninterruptible sleep (state D): a read of a
 * disk or a network mount, a device's driver; with TP_STACK_STATE only. */
#define TP_STACK_BLOCKED (1ull << 36)
/* No frames follow: the thread's last sample stands again, for the count of
 * samples in value's high 32 bits (its tid in the low ones). A thread whose
 * CPU time has not moved since its last sample cannot have moved its stack:
 * the sampler sends this instead of reading it again. */
#define TP_STACK_REPEAT (1ull << 35)
/* The thread ran trainprof's own work in C then (tp_own_work): its frames
 * are those of the code that called it. */
#define TP_STACK_OWN       (1ull << 37)
#define TP_STACK_DEPTH_MAX 256u       /* frames a sample carries at most */
#define TP_FRAMES_MAX      (1u << 22) /* frame ids of one ring: 1..TP_FRAMES_MAX */
#define TP_FRAME_TEXT_MAX  512u       /* "function\nfile" */
/* The sampler thread's name, its ring's thread name: readers leave its
 * thread out of the training's threads. */
#define TP_SAMPLER_THREAD_NAME "trainprof-stack"

typedef struct tp_stack_ref {
    uint32_t frame; /* the frame's id, as sent by TP_EV_FRAME through the same ring */
    int32_t line;   /* 0 when unknown */
} tp_stack_ref;

#define TP_STACK_REFS_PER_SLOT (sizeof(tp_event) / sizeof(tp_stack_ref))

/* The innermost open region (its name id) of this process's thread tid,
 * 0 when it has none or has no ring; *own: whether it ran trainprof's own
 * work in C (tp_own_work; false when unknown). Lock-free, safe from any
 * thread at any time, even as tid exits: its ring is read through r (the
 * calling thread's own reader). */
uint32_t tp_thread_open_region(tp_self_reader *r, int32_t tid, bool *own);

/* The most the recorder asked for one stack of every thread (the rings'
 * stacks_wanted, lib/ring.h) over this process's rings: a count that grows
 * with each request. Lock-free, as tp_thread_open_region. */
uint32_t tp_threads_stacks_wanted(tp_self_reader *r);

/* The kernel id of this process's thread whose pthread_self() is
 * pthread_id (Python's threading.get_ident()), where that thread has a
 * ring; 0 otherwise. For interpreters that don't keep it (before 3.11). */
int32_t tp_thread_tid_of(unsigned long pthread_id);

/* Whether this process's thread tid has a ring (a training thread, whose
 * phases the recorder reads). Lock-free, as tp_thread_open_region. */
bool tp_thread_has_ring(int32_t tid);

/* Through the calling thread's ring (attached on first use): frame id's
 * text, and one sample. False when there is no recorder or the ring is full
 * (the sample then counts as dropped). */
bool tp_frame_send(uint32_t frame, const char *text, size_t len);
bool tp_stack_send(uint64_t t_ns, int32_t tid, uint32_t phase, uint64_t flags,
                   const tp_stack_ref *refs, uint32_t n);
/* Thread tid's last sample sent through this ring stands again, count
 * times, the last at t_ns. */
bool tp_stack_repeat_send(uint64_t t_ns, int32_t tid, uint32_t count);

#endif
