/* _thread_state.h: the patches' per-thread state (trainprof.patches.common's
 * ThreadState) read and written from C, by its slots' offsets
 * (_thread_state.c). */
#ifndef TP_PY_THREAD_STATE_H
#define TP_PY_THREAD_STATE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#if PY_VERSION_HEX < 0x030A0000 /* 3.9: no Py_NewRef */
static inline PyObject *tp_new_ref(PyObject *o)
{
    Py_INCREF(o);
    return o;
}
#define Py_NewRef(o)  tp_new_ref((PyObject *)(o))
#define Py_XNewRef(o) ((o) ? tp_new_ref((PyObject *)(o)) : NULL)
#endif

/* The exception being raised, taken aside while cleanup code runs
 * (PyErr_Fetch is deprecated from 3.12). */
typedef struct {
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *raised;
#else
    PyObject *type, *value, *tb;
#endif
} tp_kept_error;

static inline void tp_error_keep(tp_kept_error *e)
{
#if PY_VERSION_HEX >= 0x030C0000
    e->raised = PyErr_GetRaisedException();
#else
    PyErr_Fetch(&e->type, &e->value, &e->tb);
#endif
}

/* Raises it again (any exception set since is replaced). */
static inline void tp_error_restore(tp_kept_error *e)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(e->raised);
#else
    PyErr_Restore(e->type, e->value, e->tb);
#endif
}

static inline void tp_error_drop(tp_kept_error *e)
{
#if PY_VERSION_HEX >= 0x030C0000
    Py_XDECREF(e->raised);
#else
    Py_XDECREF(e->type);
    Py_XDECREF(e->value);
    Py_XDECREF(e->tb);
#endif
}

/* The slots the C paths use (_thread_state.c names them). */
enum {
    TS_DEPTH,
    TS_TRACED,
    TS_TRAIN_BATCH,
    TS_BATCH_MODEL,
    TS_FORWARD_SEEN,
    TS_CLOSURE_AGAIN,
    TS_OPTIMIZER_STEP,
    TS_OPTIMIZER_STEPPED,
    TS_DEVICE_TIMES,
    TS_PENDING,
    TS_TRACKER,
    TS_COUNT
};

extern Py_ssize_t tp_py_slot_offset[TS_COUNT];

/* _compiling_flag(compiler): the module whose _is_compiling_flag tells
 * that torch.export's tracing runs (torch.compiler), or None where that
 * flag can't be relied on (patches.common's ASK_COMPILING): the C paths then
 * leave every call to their twins, which ask is_compiling(). */
PyObject *tp_py_set_compiling_flag(PyObject *module, PyObject *compiler);

/* _device_end(fn): patches.device.device_end(region, local), which ends a
 * region's device time (_device_end's caller: patches/device.py). */
PyObject *tp_py_set_device_end(PyObject *module, PyObject *fn);

/* Whether the C paths may run at all: the compiling flag can be relied on. */
int tp_py_flag_known(void);

/* Whether this call is traced, so to be left as it is: local's Dynamo
 * stand-in says so, or torch's compiling flag is set. */
int tp_py_traced(PyObject *local);

/* device_end(region, local) where local's thread has device times; 0, or
 * -1 with an exception set. */
int tp_py_device_end(PyObject *local, PyObject *region);

/* Where local's slot (a region's "open" flag) is true: set false, the
 * region (id) ended, and its device time. 0, or -1 with an exception set. */
int tp_py_close_region(PyObject *local, int slot, PyObject *region, uint32_t id);

/* _thread_state_setup(cls): finds each slot's offset in cls (ThreadState);
 * None, or a TypeError where one is no writable slot. Once per process. */
PyObject *tp_py_thread_state_setup(PyObject *module, PyObject *cls);

/* This thread's ThreadState (a new reference; made at the thread's first
 * call), or NULL: with an exception set where per_thread failed, without
 * one where the C paths can't read it (setup not done, another type, no
 * tracker): their Python twins then do the work. */
PyObject *tp_py_thread_state(void);

/* _twins_only(on): while on, tp_py_thread_state() gives nothing, and every
 * C path calls its Python twin (tests/py/test_c_paths.py compares them). */
PyObject *tp_py_twins_only(PyObject *module, PyObject *on);

/* A slot's value (borrowed; NULL where it is unset). */
static inline PyObject *tp_slot_get(PyObject *local, int slot)
{
    return *(PyObject **)((char *)local + tp_py_slot_offset[slot]);
}

/* Each name's offset in cls (a class with those writable __slots__) into
 * at: 0, or -1 with a TypeError naming who asked where one is no writable
 * slot. */
int tp_slot_offsets(PyObject *cls, const char *const *names, int n, Py_ssize_t *at,
                    const char *who);

/* Sets the word at (an object's slot) to value, its own reference taken. */
static inline void tp_word_set(PyObject **at, PyObject *value)
{
    PyObject *old = *at;
    Py_INCREF(value);
    *at = value;
    Py_XDECREF(old);
}

/* Sets a slot to value (its own reference taken). */
void tp_slot_set(PyObject *local, int slot, PyObject *value);

/* o's truth; NULL (an unset slot) and an o whose truth can't be told are
 * false. */
int tp_truthy(PyObject *o);

/* Whether o is neither NULL nor None. */
static inline int tp_is_set(PyObject *o) { return o != NULL && o != Py_None; }

#endif
