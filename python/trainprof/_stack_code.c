/* _stack_code.c: code objects read from the interpreter's memory: their
 * names and files as UTF-8, their line tables, the walker's table of them,
 * and the frames that point at them (_stacks.h, _stacks_internal.h). */
#include "_stacks_internal.h"

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

/* The line of code unit `unit` (before the first: the first line). An
 * instruction the compiler gave no line (3.10 and 3.11: a loop's jump back
 * after a nested block, a function's cell set-up; the interpreter stops at
 * such a jump for a signal or for the GIL) has the line last given before
 * it: where the thread last was, never 0. 0 only past the table's end (a
 * frame read while its code changed). */
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
            return line; /* none: the line it was last in (see the contract above) */
        at += len;
    }
    return 0;
}
#elif PY_VERSION_HEX >= 0x030A0000
/* 3.10's co_linetable: pairs of (bytes advanced, line delta; -128: none,
 * read as the line before, as above). */
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
            return line; /* -128: the line it was last in */
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
 * the C stack, from 3.12). Sets *next to the caller's frame. False where the
 * frame could not be read, or was read torn. */
bool tp_stacks_read_frame(tp_stack_walker *w, uintptr_t frame, tp_stack_frame *out, uintptr_t *next,
                          uintptr_t *instr_out)
{
    uintptr_t code_addr;
    long position;
#if PY_VERSION_HEX >= 0x030B0000
    _PyInterpreterFrame f;
    if (!safe_read(w, &f, (const void *)frame, offsetof(_PyInterpreterFrame, localsplus)))
        return false;
    *next = (uintptr_t)f.previous;
#if PY_VERSION_HEX >= 0x030E0000
    /* a stack reference: the object's address with a tag in its low bits */
    code_addr = f.f_executable.bits & ~(uintptr_t)Py_TAG_BITS;
    uintptr_t instr = (uintptr_t)f.instr_ptr;
#elif PY_VERSION_HEX >= 0x030D0000
    code_addr = (uintptr_t)f.f_executable;
    uintptr_t instr = (uintptr_t)f.instr_ptr;
#else
    code_addr = (uintptr_t)f.f_code;
    uintptr_t instr = (uintptr_t)f.prev_instr;
#endif
    *instr_out = instr;
#if PY_VERSION_HEX >= 0x030E0000
    if (f.owner >= FRAME_OWNED_BY_INTERPRETER) { /* the interpreter's entry, a C stack's shim */
        out->code = 0;
        return true;
    }
#elif PY_VERSION_HEX >= 0x030C0000
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
    /* an instruction past its code's end: the frame was read as it changed
     * (pushed for another call, its code and instruction from two moments);
     * its caller can't be trusted either */
    return !(e->table_copy && out->line == 0);
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
