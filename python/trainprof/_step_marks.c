/* _step_marks.c: the step marks (_native.step, step_at) and the capture
 * window's check after each (trainprof/runtime/ops.py's hook): what the
 * module's functions and the C paths' step marks (_tracker_events.c)
 * share. */
#include "_step_marks.h"

#include "ops_window.h"
#include "trainprof.h"

static PyObject *ops_hook; /* called at a step mark when a window needs it */
static uint64_t ops_wait;  /* the step count at which it is called anyway, 0 none */
static uint32_t ops_seen;  /* the last request seq it read */

/* After every step mark: one load of this thread's ring's request, and the
 * hook only when a new request came or the step it waits for is here. An
 * exception in it is the capture's problem, never the training's. */
static inline void ops_check(void)
{
    if (!ops_hook)
        return;
    uint32_t seq = tp_ops_seq();
    if (seq == ops_seen && !(ops_wait && tp_steps_marked() >= ops_wait))
        return;
    PyObject *r = PyObject_CallNoArgs(ops_hook);
    if (r)
        Py_DECREF(r);
    else
        PyErr_Clear();
}

PyObject *tp_py_ops_hook(PyObject *module, PyObject *fn)
{
    (void)module;
    Py_XINCREF(fn == Py_None ? NULL : fn);
    Py_XSETREF(ops_hook, fn == Py_None ? NULL : fn);
    Py_RETURN_NONE;
}

PyObject *tp_py_ops_wait(PyObject *module, PyObject *arg)
{
    (void)module;
    unsigned long long n = PyLong_AsUnsignedLongLong(arg);
    if (n == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    ops_wait = n;
    Py_RETURN_NONE;
}

/* ops_request(): (seq, reason, first_step, steps) of a request this
 * thread's ring carries that was not read before, else None. */
PyObject *tp_py_ops_request(PyObject *module, PyObject *unused)
{
    (void)module, (void)unused;
    tp_ops_request r;
    if (!tp_ops_request_read(&r) || r.seq == ops_seen)
        Py_RETURN_NONE;
    ops_seen = r.seq;
    return Py_BuildValue("(IIKI)", r.seq, r.reason, (unsigned long long)r.first_step, r.steps);
}

PyObject *tp_py_steps_marked(PyObject *module, PyObject *unused)
{
    (void)module, (void)unused;
    return PyLong_FromUnsignedLongLong(tp_steps_marked());
}

/* _ops_begun(step): a window begins at this step count (tp_ops_begun). */
PyObject *tp_py_ops_begun(PyObject *module, PyObject *arg)
{
    (void)module;
    return tp_py_pass_u64(arg, tp_ops_begun);
}

PyObject *tp_py_ops_send(PyObject *module, PyObject *arg)
{
    (void)module;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    bool sent;
    Py_BEGIN_ALLOW_THREADS sent = tp_ops_send(view.buf, (size_t)view.len);
    Py_END_ALLOW_THREADS PyBuffer_Release(&view);
    return PyBool_FromLong(sent);
}

void tp_py_mark_step(void)
{
    tp_step();
    ops_check();
}

void tp_py_mark_step_at(uint64_t t_ns)
{
    tp_step_at(t_ns);
    ops_check();
}

PyObject *tp_py_step(PyObject *module, PyObject *unused)
{
    (void)module, (void)unused;
    tp_py_mark_step();
    Py_RETURN_NONE;
}

PyObject *tp_py_pass_u64(PyObject *arg, void (*fn)(uint64_t))
{
    unsigned long long n = PyLong_AsUnsignedLongLong(arg);
    if (n == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    fn(n);
    Py_RETURN_NONE;
}

PyObject *tp_py_step_at(PyObject *module, PyObject *arg)
{
    (void)module;
    return tp_py_pass_u64(arg, tp_py_mark_step_at);
}
