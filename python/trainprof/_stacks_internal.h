/* _stacks_internal.h: what _stacks.c (the threads, the walker) and
 * _stack_code.c (code objects, their names and line tables, frames) share:
 * the walker's state, and reads that fail cleanly. Private to them.
 *
 * Built as part of the extension, against the interpreter's internal
 * headers (Py_BUILD_CORE here only: the rest of the extension uses the
 * public API). It calls no Python function: it reads structures, through
 * safe_read, and nothing else. */
#ifndef TP_PY_STACKS_INTERNAL_H
#define TP_PY_STACKS_INTERNAL_H

#define Py_BUILD_CORE 1
#include <Python.h>

/* CPython's internal headers are not held to our warnings (unused
 * parameters of their inline functions, zero-size arrays: 3.13's and
 * 3.14's pycore_qsbr.h) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wpedantic"
#if PY_VERSION_HEX >= 0x030E0000
/* 3.14 moved the frame's struct out of pycore_frame.h, and its code object
 * is a stack reference (pycore_stackref.h: Py_TAG_BITS) */
#include <internal/pycore_interp.h>
#include <internal/pycore_interpframe_structs.h>
#include <internal/pycore_stackref.h>
#elif PY_VERSION_HEX >= 0x030B0000
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#else
#include <frameobject.h>
#include <internal/pycore_interp.h>
#endif
#pragma GCC diagnostic pop

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "_stacks.h"
#include "self_read.h"

#define CODE_SLOTS   4096 /* a power of two: the code table, open addressing */
#define CODES_MAX    (CODE_SLOTS * 3 / 4)
#define THREADS_MAX  4096 /* threads walked at most (a cycle in a torn list ends there) */
#define IDS_SLOTS    (2 * THREADS_MAX) /* a power of two */
#define TABLE_MAX    65536u
#define FUNCTION_MAX 128
#define FILE_MAX     256
#define STRING_CHARS 256
/* A code object found at a known address is read again (to see it is still
 * the same one) once in this many walks: a second at 100 Hz. A code freed
 * and another made at its address within that time is named as the old one
 * until then. */
#define CODE_RECHECK 100
/* Threads whose last stack is kept, to be reused when their innermost frame
 * has not moved (a blocked thread: most of a training's). */
#define STACK_CACHE 64

typedef struct code_entry {
    uintptr_t addr;              /* 0: a free slot */
    uintptr_t name, file, table; /* the objects it pointed at when read */
    int first_line;
    uint32_t id;
    uint64_t checked; /* the walk that last read the object and found it the same */
    uint32_t table_len;
    uint8_t *table_copy;
    char function[FUNCTION_MAX];
    char filename[FILE_MAX];
} code_entry;

struct tp_stack_walker {
    PyInterpreterState *interp;
    pid_t pid;
    tp_self_reader reader;
    code_entry *codes; /* CODE_SLOTS */
    uint32_t *index;   /* code id - 1 -> slot; UINT32_MAX: a code since replaced */
    uint32_t ncodes, generation;
    uint64_t walks;
    tp_stack_frame frames[TP_STACK_FRAMES_MAX];
    /* the threads the last refresh listed (tp_stack_walk_due) */
    struct listed {
        uintptr_t tstate;
        unsigned long thread_id;
        int32_t native_tid;
        uint32_t wait;  /* walks left before due is asked again */
        bool unbound;   /* its ids are its creator's still: never read */
    } * listed;         /* THREADS_MAX of them */
    uint32_t *ids_seen; /* IDS_SLOTS: a listing's ids, as index + 1 (0: free) */
    size_t nlisted;
    bool list_read;         /* false: the next walk reads the list again */
    uint32_t relist_in;     /* walks until the list is read again (0: not asked) */
    uint32_t relist_every;  /* ... while a state carries another's ids */
    uintptr_t unbound_seen; /* the first such state at the last listing */
    uintptr_t listed_head;  /* the list's head then: new threads go in at the head */
    struct last_stack {
        uintptr_t tstate, top, instr, previous; /* 0 tstate: a free entry */
        uint32_t generation;
        uint64_t walk; /* when last used: the oldest goes */
        size_t nframes;
        bool truncated;
        tp_stack_frame frames[TP_STACK_FRAMES_MAX];
    } * last; /* STACK_CACHE of them */
};

/* ---- reads that fail cleanly ---- */

/* Copies n bytes at src (anywhere in this process) to dst; false when any of
 * them is not readable (lib/self_read.h). */
static inline bool safe_read(tp_stack_walker *w, void *dst, const void *src, size_t n)
{
    return tp_self_read(&w->reader, dst, src, n);
}

/* Reads the frame at frame into out (its code, by the walker's code table,
 * and line), with its caller in *next and its instruction in *instr; false
 * when it can't be read (_stack_code.c). */
bool tp_stacks_read_frame(tp_stack_walker *w, uintptr_t frame, tp_stack_frame *out, uintptr_t *next,
                          uintptr_t *instr);

#endif
