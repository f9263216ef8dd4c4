/* _timed_backward.c: Tensor.backward timed as backward (trainprof.patches.loop)
 * in C.
 *
 * Once a step: the step tracker told of the training work, backward's
 * region around torch's, and forward_seen reset after it. The Python wrapper
 * cost a frame and 55 opcodes a step on the CPU stand-in (issue 56); the C
 * path costs one Python call, the tracker's backward(). It steps aside for
 * its Python twin wherever the twin has more to do: torch's compiling flag
 * can't be relied on (_thread_state.h's _compiling_flag), device times per
 * phase, a ThreadState it can't read. Dynamo never calls either: it traces
 * tensor.backward() by name (a graph break, or its own rewrite).
 *
 * A method descriptor (Py_TPFLAGS_METHOD_DESCRIPTOR), as torch.Tensor's
 * backward is a function: loss.backward() binds no method object. */
#include "_timed_backward.h"
#include "_own_work.h"
#include "_method_like.h"

#include <stddef.h>
#include <structmember.h>

#include "_thread_state.h"
#include "_tracker_events.h"
#include "trainprof.h"

typedef struct {
    PyObject_HEAD PyObject *orig; /* torch's Tensor.backward */
    PyObject *twin;               /* loop.py's backward around it */
    PyObject *forward_unseen;     /* patches.forward.forward_unseen() */
    PyObject *region;             /* the backward Region */
    uint32_t region_id;
    int device_phases;
    vectorcallfunc vectorcall;
} TimedBackward;

static PyObject *str_backward;

/* Tracker told, region begun; 0, or -1 with an exception set. */
static int backward_begins(TimedBackward *self, PyObject *local)
{
    if (!tp_truthy(tp_slot_get(local, TS_FORWARD_SEEN))) { /* the model may be unfound */
        PyObject *r = PyObject_CallNoArgs(self->forward_unseen);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
    }
    PyObject *tracker = tp_slot_get(local, TS_TRACKER);
    if (tp_tracker_work(tracker, str_backward) < 0)
        return -1;
    tp_begin(self->region_id);
    return 0;
}

/* The finally of loop.py's backward: region ended, its device time's end,
 * forward_seen reset. The call's own exception (result NULL) is kept. */
static PyObject *backward_ends(TimedBackward *self, PyObject *local, PyObject *result)
{
    tp_kept_error raised;
    tp_error_keep(&raised);
    tp_end(self->region_id);
    int ended = tp_py_device_end(local, self->region);
    tp_slot_set(local, TS_FORWARD_SEEN, Py_False);
    if (ended < 0 && result == NULL) { /* the call's own exception goes on */
        PyErr_WriteUnraisable((PyObject *)self);
    } else if (ended < 0) {
        Py_CLEAR(result);
        tp_error_drop(&raised);
        return NULL;
    }
    tp_error_restore(&raised);
    return result;
}

static PyObject *timed_backward_own(PyObject *callable, PyObject *const *args, size_t nargsf,
                                    PyObject *kwnames)
{
    TimedBackward *self = (TimedBackward *)callable;
    if (!tp_py_flag_known() || self->device_phases)
        return tp_call_out(self->twin, args, nargsf, kwnames);
    PyObject *local = tp_py_thread_state();
    if (local == NULL)
        return PyErr_Occurred() ? NULL : tp_call_out(self->twin, args, nargsf, kwnames);
    PyObject *result = NULL;
    if (tp_py_traced(local)) /* as is */
        result = tp_call_out(self->orig, args, nargsf, kwnames);
    else if (backward_begins(self, local) == 0)
        result = backward_ends(self, local, tp_call_out(self->orig, args, nargsf, kwnames));
    Py_DECREF(local);
    return result;
}

static PyObject *timed_backward_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                           PyObject *kwnames)
{
    return tp_as_own_work(timed_backward_own, callable, args, nargsf, kwnames);
}

/* The original's name, doc and the rest (functools.wraps' view of it). */
static PyObject *timed_backward_getattro(PyObject *self, PyObject *name)
{
    return tp_py_getattr_or_wrapped(self, name, ((TimedBackward *)self)->orig);
}

static int timed_backward_traverse(TimedBackward *self, visitproc visit, void *arg)
{
    Py_VISIT(self->orig);
    Py_VISIT(self->twin);
    Py_VISIT(self->forward_unseen);
    Py_VISIT(self->region);
    return 0;
}

static int timed_backward_clear(TimedBackward *self)
{
    Py_CLEAR(self->orig);
    Py_CLEAR(self->twin);
    Py_CLEAR(self->forward_unseen);
    Py_CLEAR(self->region);
    return 0;
}

static void timed_backward_dealloc(TimedBackward *self)
{
    PyObject_GC_UnTrack(self);
    timed_backward_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *timed_backward_repr(TimedBackward *self)
{
    return PyUnicode_FromFormat("<trainprof timed %R>", self->orig);
}

static PyMemberDef timed_backward_members[] = {
    {"__trainprof_wrapped__", T_OBJECT, offsetof(TimedBackward, orig), READONLY,
     "Tensor.backward."},
    {"__wrapped__", T_OBJECT, offsetof(TimedBackward, orig), READONLY, "Tensor.backward."},
    {"twin", T_OBJECT, offsetof(TimedBackward, twin), READONLY, "The Python that does it all."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject TimedBackwardType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "trainprof._native.TimedBackward",
    .tp_basicsize = sizeof(TimedBackward),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_vectorcall_offset = offsetof(TimedBackward, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = tp_py_bind_method,
    .tp_getattro = timed_backward_getattro,
    .tp_traverse = (traverseproc)timed_backward_traverse,
    .tp_clear = (inquiry)timed_backward_clear,
    .tp_dealloc = (destructor)timed_backward_dealloc,
    .tp_repr = (reprfunc)timed_backward_repr,
    .tp_members = timed_backward_members,
    .tp_doc = "Tensor.backward timed as backward (trainprof.patches.loop).",
};

int tp_py_timed_backward_ready(void)
{
    str_backward = PyUnicode_InternFromString("backward");
    if (str_backward == NULL)
        return -1;
    return PyType_Ready(&TimedBackwardType);
}

PyObject *tp_py_timed_backward_new(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3 || !PyCallable_Check(args[0]) || !PyCallable_Check(args[1]) ||
        !PyDict_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "timed_backward(orig, twin, parts: dict)");
        return NULL;
    }
    PyObject *parts = args[2];
    PyObject *unseen = PyDict_GetItemString(parts, "forward_unseen"); /* borrowed, all */
    PyObject *region = PyDict_GetItemString(parts, "region");
    PyObject *region_id = PyDict_GetItemString(parts, "region_id");
    PyObject *phases = PyDict_GetItemString(parts, "device_phases");
    if (!unseen || !region || !region_id || !phases || !PyCallable_Check(unseen) ||
        !PyLong_Check(region_id)) {
        PyErr_SetString(PyExc_TypeError, "timed_backward: a part missing or of the wrong kind");
        return NULL;
    }
    uint32_t id = (uint32_t)PyLong_AsUnsignedLong(region_id);
    if (PyErr_Occurred())
        return NULL;
    TimedBackward *self = PyObject_GC_New(TimedBackward, &TimedBackwardType);
    if (self == NULL)
        return NULL;
    self->orig = Py_NewRef(args[0]);
    self->twin = Py_NewRef(args[1]);
    self->forward_unseen = Py_NewRef(unseen);
    self->region = Py_NewRef(region);
    self->region_id = id;
    self->device_phases = PyObject_IsTrue(phases) > 0;
    self->vectorcall = timed_backward_vectorcall;
    PyObject_GC_Track(self);
    return (PyObject *)self;
}
