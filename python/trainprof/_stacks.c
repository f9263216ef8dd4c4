/* _stacks.c: see _stacks.h.
 *
 * Built as part of the extension, against the interpreter's internal
 * headers (Py_BUILD_CORE here only: the rest of the extension uses the
 * public API). It calls no Python function: it reads structures, through
 * safe_read, and nothing else. */
#define Py_BUILD_CORE 1
#include <Python.h>

#if PY_VERSION_HEX >= 0x030B0000
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#else
#include <frameobject.h>
#include <internal/pycore_interp.h>
#endif

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
        uint32_t wait; /* walks left before due is asked again */
    } * listed;        /* THREADS_MAX of them */
    size_t nlisted;
    bool list_read;
    uintptr_t listed_head; /* the list's head then: new threads go in at the head */
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
static bool safe_read(tp_stack_walker *w, void *dst, const void *src, size_t n)
{
    return tp_self_read(&w->reader, dst, src, n);
}

/* ---- strings ---- */

static size_t put_utf8(char *out, size_t at, size_t cap, uint32_t c)
{
    char b[4];
    size_t n;
    if (c < 0x80)
        b[0] = (char)c, n = 1;
    else if (c < 0x800)
        b[0] = (char)(0xC0 | c >> 6), b[1] = (char)(0x80 | (c & 63)), n = 2;
    else if (c < 0x10000 && (c < 0xD800 || c > 0xDFFF))
        b[0] = (char)(0xE0 | c >> 12), b[1] = (char)(0x80 | (c >> 6 & 63)),
        b[2] = (char)(0x80 | (c & 63)), n = 3;
    else if (c >= 0x10000 && c <= 0x10FFFF)
        b[0] = (char)(0xF0 | c >> 18), b[1] = (char)(0x80 | (c >> 12 & 63)),
        b[2] = (char)(0x80 | (c >> 6 & 63)), b[3] = (char)(0x80 | (c & 63)), n = 4;
    else
        b[0] = '?', n = 1;
    if (at + n >= cap)
        return at;
    memcpy(out + at, b, n);
    return at + n;
}

/* A str object's text as UTF-8 into out (cut to fit); false when src is not
 * a compact str (every name and file name of a code object is). */
static bool read_str(tp_stack_walker *w, uintptr_t src, char *out, size_t cap)
{
    union {
        PyASCIIObject ascii;
        PyCompactUnicodeObject compact;
    } h;
    out[0] = '\0';
    if (!safe_read(w, &h, (const void *)src, sizeof h.ascii) ||
        Py_TYPE((PyObject *)&h) != &PyUnicode_Type || !h.ascii.state.compact)
        return false;
    Py_ssize_t len = h.ascii.length;
    if (len < 0)
        return false;
    size_t chars = (size_t)len < STRING_CHARS ? (size_t)len : STRING_CHARS;
    unsigned kind = h.ascii.state.ascii ? 1 : h.ascii.state.kind;
    if (kind != 1 && kind != 2 && kind != 4)
        return false;
    uintptr_t data =
        src + (h.ascii.state.ascii ? sizeof(PyASCIIObject) : sizeof(PyCompactUnicodeObject));
    unsigned char raw[STRING_CHARS * 4];
    if (!safe_read(w, raw, (const void *)data, chars * kind))
        return false;
    size_t at = 0;
    for (size_t i = 0; i < chars; i++) {
        uint32_t c = kind == 1   ? raw[i]
                     : kind == 2 ? ((const uint16_t *)raw)[i]
                                 : ((const uint32_t *)raw)[i];
        at = put_utf8(out, at, cap, c < 0x20 || c == 0x7f ? '?' : c);
    }
    out[at] = '\0';
    return true;
}

/* ---- code objects and their line tables ---- */

#if PY_VERSION_HEX >= 0x030B0000
#define CODE_NAME(c)  ((uintptr_t)(c)->co_qualname)
#define CODE_TABLE(c) ((uintptr_t)(c)->co_linetable)
#define CODE_READ     offsetof(PyCodeObject, co_code_adaptive)
#elif PY_VERSION_HEX >= 0x030A0000
#define CODE_NAME(c)  ((uintptr_t)(c)->co_name)
#define CODE_TABLE(c) ((uintptr_t)(c)->co_linetable)
#define CODE_READ     sizeof(PyCodeObject)
#else
#define CODE_NAME(c)  ((uintptr_t)(c)->co_name)
#define CODE_TABLE(c) ((uintptr_t)(c)->co_lnotab)
#define CODE_READ     sizeof(PyCodeObject)
#endif

/* A bytes object's content (at most TABLE_MAX bytes) into a new buffer. */
static uint8_t *read_bytes(tp_stack_walker *w, uintptr_t src, uint32_t *len)
{
    PyBytesObject h;
    if (!safe_read(w, &h, (const void *)src, offsetof(PyBytesObject, ob_sval)) ||
        Py_TYPE((PyObject *)&h) != &PyBytes_Type || Py_SIZE((PyObject *)&h) < 0 ||
        (size_t)Py_SIZE((PyObject *)&h) > TABLE_MAX)
        return NULL;
    *len = (uint32_t)Py_SIZE((PyObject *)&h);
    uint8_t *out = malloc(*len + 1);
    if (out && !safe_read(w, out, (const char *)src + offsetof(PyBytesObject, ob_sval), *len)) {
        free(out);
        return NULL;
    }
    return out;
}

static void forget_codes(tp_stack_walker *w)
{
    for (size_t i = 0; i < CODE_SLOTS; i++)
        free(w->codes[i].table_copy);
    memset(w->codes, 0, CODE_SLOTS * sizeof *w->codes);
    w->ncodes = 0;
    w->generation++;
}

static size_t probe(const tp_stack_walker *w, uintptr_t addr)
{
    size_t slot = (size_t)((addr >> 4) * 0x9E3779B97F4A7C15ull >> 52) & (CODE_SLOTS - 1);
    while (w->codes[slot].addr != 0 && w->codes[slot].addr != addr)
        slot = (slot + 1) & (CODE_SLOTS - 1);
    return slot;
}

/* The code id of the code object at addr (from 1), read anew each time and
 * compared with what the table holds for that address; 0 when addr holds no
 * code object. A code freed and another made at its address gets a new id
 * (the old one then reads "?"). */
static uint32_t code_id(tp_stack_walker *w, uintptr_t addr)
{
    size_t slot = probe(w, addr);
    code_entry *e = &w->codes[slot];
    if (e->addr == addr && w->walks - e->checked < CODE_RECHECK)
        return e->id; /* read again now and then, not at every frame */
    PyCodeObject copy;
    if (!safe_read(w, &copy, (const void *)addr, CODE_READ) ||
        Py_TYPE((PyObject *)&copy) != &PyCode_Type)
        return 0;
    if (e->addr == addr) {
        if (e->name == CODE_NAME(&copy) && e->file == (uintptr_t)copy.co_filename &&
            e->table == CODE_TABLE(&copy) && e->first_line == copy.co_firstlineno) {
            e->checked = w->walks;
            return e->id;
        }
        w->index[e->id - 1] = UINT32_MAX;
    }
    if (w->ncodes >= CODES_MAX) {
        forget_codes(w);
        slot = probe(w, addr);
        e = &w->codes[slot];
    }
    free(e->table_copy);
    memset(e, 0, sizeof *e);
    e->addr = addr;
    e->name = CODE_NAME(&copy);
    e->file = (uintptr_t)copy.co_filename;
    e->table = CODE_TABLE(&copy);
    e->first_line = copy.co_firstlineno;
    if (!read_str(w, e->name, e->function, sizeof e->function))
        snprintf(e->function, sizeof e->function, "?");
    if (!read_str(w, e->file, e->filename, sizeof e->filename))
        snprintf(e->filename, sizeof e->filename, "?");
    e->table_copy = read_bytes(w, e->table, &e->table_len);
    e->checked = w->walks;
    e->id = ++w->ncodes;
    w->index[e->id - 1] = (uint32_t)slot;
    return e->id;
}

#if PY_VERSION_HEX >= 0x030B0000
/* Objects/locations.md: entries of a first byte 1cccclll (code c, length
 * l + 1 code units), then per code: 15 none, 14 long form (line delta
 * svarint, end line, column, end column varints), 13 line delta svarint, 10-12
 * line delta c - 10 and two column bytes, 0-9 one column byte. */
static unsigned varint(const uint8_t *t, size_t n, size_t *i)
{
    unsigned v = 0, shift = 0;
    while (*i < n) {
        uint8_t b = t[(*i)++];
        v |= (unsigned)(b & 63) << shift;
        shift += 6;
        if (!(b & 64) || shift > 24)
            break;
    }
    return v;
}

static int svarint(const uint8_t *t, size_t n, size_t *i)
{
    unsigned v = varint(t, n, i);
    return v & 1 ? -(int)(v >> 1) : (int)(v >> 1);
}

static int line_of(const code_entry *e, long unit)
{
    const uint8_t *t = e->table_copy;
    size_t n = e->table_len, i = 0;
    int line = e->first_line;
    long at = 0;
    if (unit < 0)
        return line;
    while (i < n) {
        uint8_t b = t[i++];
        if (!(b & 0x80))
            return 0;
        int code = (b >> 3) & 15, len = (b & 7) + 1;
        bool none = code == 15;
        if (code == 14) {
            line += svarint(t, n, &i);
            varint(t, n, &i), varint(t, n, &i), varint(t, n, &i);
        } else if (code == 13) {
            line += svarint(t, n, &i);
        } else if (code >= 10 && code <= 12) {
            line += code - 10;
            i += 2;
        } else if (code < 10) {
            i += 1;
        }
        if (unit < at + len)
            return none ? 0 : line;
        at += len;
    }
    return 0;
}
#elif PY_VERSION_HEX >= 0x030A0000
/* 3.10's co_linetable: pairs of (bytes advanced, line delta; -128: none). */
static int line_of(const code_entry *e, long byte)
{
    const uint8_t *t = e->table_copy;
    int line = e->first_line;
    long at = 0;
    if (byte < 0)
        return line;
    for (size_t i = 0; i + 1 < e->table_len; i += 2) {
        int delta = (int8_t)t[i + 1];
        long end = at + t[i];
        if (delta != -128)
            line += delta;
        if (byte < end)
            return delta == -128 ? 0 : line;
        at = end;
    }
    return 0;
}
#else
/* 3.9's co_lnotab: pairs of (bytes advanced, line delta). */
static int line_of(const code_entry *e, long byte)
{
    const uint8_t *t = e->table_copy;
    int line = e->first_line;
    long at = 0;
    for (size_t i = 0; i + 1 < e->table_len; i += 2) {
        at += t[i];
        if (at > byte)
            break;
        line += (int8_t)t[i + 1];
    }
    return line;
}
#endif

/* The frame's code id and line; 0 code for a frame without code (a shim of
 * the C stack, from 3.12). Sets *next to the caller's frame. */
static bool read_frame(tp_stack_walker *w, uintptr_t frame, tp_stack_frame *out, uintptr_t *next,
                       uintptr_t *instr_out)
{
    uintptr_t code_addr;
    long position;
#if PY_VERSION_HEX >= 0x030B0000
    _PyInterpreterFrame f;
    if (!safe_read(w, &f, (const void *)frame, offsetof(_PyInterpreterFrame, localsplus)))
        return false;
    *next = (uintptr_t)f.previous;
#if PY_VERSION_HEX >= 0x030D0000
    code_addr = (uintptr_t)f.f_executable;
    uintptr_t instr = (uintptr_t)f.instr_ptr;
#else
    code_addr = (uintptr_t)f.f_code;
    uintptr_t instr = (uintptr_t)f.prev_instr;
#endif
    *instr_out = instr;
#if PY_VERSION_HEX >= 0x030C0000
    if (f.owner == FRAME_OWNED_BY_CSTACK) {
        out->code = 0;
        return true;
    }
#endif
    position = ((long)instr - (long)(code_addr + offsetof(PyCodeObject, co_code_adaptive))) /
               (long)sizeof(_Py_CODEUNIT);
#else
    PyFrameObject f;
    if (!safe_read(w, &f, (const void *)frame, sizeof f))
        return false;
    *next = (uintptr_t)f.f_back;
    code_addr = (uintptr_t)f.f_code;
    *instr_out = (uintptr_t)(unsigned)f.f_lasti;
#if PY_VERSION_HEX >= 0x030A0000
    position = f.f_lasti < 0 ? -1 : (long)f.f_lasti * (long)sizeof(_Py_CODEUNIT);
#else
    position = f.f_lasti;
#endif
#endif
    out->code = code_id(w, code_addr);
    if (!out->code)
        return false;
    const code_entry *e = &w->codes[w->index[out->code - 1]];
    out->line = e->table_copy ? line_of(e, position) : 0;
    return true;
}

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
        if (!read_frame(w, frame, &w->frames[t->nframes], &next, &instr)) {
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
                        tp_stack_thread *t, tp_stack_before_fn before, tp_stack_fn fn, void *ctx)
{
    if (before)
        before(ctx, t);
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

/* Reads the interpreter's list of threads into w->listed, asking due of
 * each and reading those it says are due. */
static int walk_list(tp_stack_walker *w, tp_stack_due_fn due, tp_stack_before_fn before,
                     tp_stack_fn fn, void *ctx)
{
    uintptr_t tstate = first_thread(w);
    if (!tstate)
        return -1;
    w->nlisted = 0;
    w->list_read = true;
    w->listed_head = tstate;
    int n = 0;
    for (; tstate && n < THREADS_MAX; n++) {
        PyThreadState ts;
        if (!safe_read(w, &ts, (const void *)tstate, sizeof ts))
            break;
        tp_stack_thread t = thread_of(&ts);
        uint32_t wait = due ? due(ctx, &t) : 0;
        w->listed[w->nlisted++] =
            (struct listed){tstate, t.thread_id, t.native_tid, wait ? wait - 1 : 0};
        if (!wait)
            walk_thread(w, tstate, &ts, &t, before, fn, ctx);
        tstate = (uintptr_t)ts.next;
    }
    return n;
}

int tp_stack_walk_due(tp_stack_walker *w, bool refresh, tp_stack_due_fn due,
                      tp_stack_before_fn before, tp_stack_fn fn, void *ctx)
{
    if (getpid() != w->pid)
        return -1; /* a forked child's walker would read its parent */
    w->walks++;
    /* a thread started since the list was read is its new head (CPython
     * adds threads at the head): one read a walk tells */
    if (refresh || !w->list_read || first_thread(w) != w->listed_head)
        return walk_list(w, due, before, fn, ctx);
    for (size_t i = 0; i < w->nlisted; i++) {
        struct listed *l = &w->listed[i];
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
        PyThreadState ts; /* still the thread listed: else gone, its memory reused */
        if (!safe_read(w, &ts, (const void *)l->tstate, sizeof ts) ||
            ts.thread_id != l->thread_id || thread_of(&ts).native_tid != l->native_tid)
            continue;
        walk_thread(w, l->tstate, &ts, &t, before, fn, ctx);
    }
    return (int)w->nlisted;
}

uint32_t tp_stack_walker_idle_walks(const tp_stack_walker *w)
{
    uint32_t least = UINT32_MAX;
    for (size_t i = 0; i < w->nlisted && least; i++)
        least = w->listed[i].wait < least ? w->listed[i].wait : least;
    return w->nlisted ? least : 0;
}

void tp_stack_walker_skip(tp_stack_walker *w, uint32_t walks)
{
    for (size_t i = 0; i < w->nlisted; i++)
        w->listed[i].wait = w->listed[i].wait > walks ? w->listed[i].wait - walks : 0;
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
    if (!w->codes || !w->index || !w->last || !w->listed) {
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
    tp_self_reader_close(&w->reader);
    free(w);
}

static const code_entry *entry(const tp_stack_walker *w, uint32_t code)
{
    return code >= 1 && code <= w->ncodes && w->index[code - 1] != UINT32_MAX
               ? &w->codes[w->index[code - 1]]
               : NULL;
}

const char *tp_stack_code_function(const tp_stack_walker *w, uint32_t code)
{
    const code_entry *e = entry(w, code);
    return e ? e->function : "?";
}

const char *tp_stack_code_file(const tp_stack_walker *w, uint32_t code)
{
    const code_entry *e = entry(w, code);
    return e ? e->filename : "?";
}

uint32_t tp_stack_code_generation(const tp_stack_walker *w) { return w->generation; }

bool tp_stack_walker_owned(const tp_stack_walker *w) { return w && w->pid == getpid(); }
