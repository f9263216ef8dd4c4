/* _timed_method.c: a tensor method timed as a region only where the tensor
 * is on a device, in C.
 *
 * Tensor.item(), .cpu(), .tolist() and .numpy() wait for the device (from_device)
 * when the tensor is on one, and return at once for a CPU tensor: an
 * optimizer reads each parameter's CPU step count with .item() every step
 * (AdamW: 26 calls a step for a 12-layer MLP, 62 for a ResNet-18). A Python
 * wrapper costs each of those calls a frame; this one costs an attribute
 * read (is_cpu) and a vectorcall. It is a method descriptor
 * (Py_TPFLAGS_METHOD_DESCRIPTOR), so `t.item()` binds no method object, and
 * it passes the arguments through untouched (vectorcall). */
#include "_timed_method.h"

#include <stddef.h>

#include "trainprof.h"

typedef struct {
    PyObject_HEAD PyObject *orig; /* the method it stands for */
    uint32_t region;
    vectorcallfunc vectorcall;
} TimedMethod;

static PyObject *str_is_cpu, *str_is_meta;

/* 1 when tensor is on the CPU or the meta device (nothing to wait for), 0 on
 * another device, -1 when it can't be told (not a tensor: the original
 * method then says what is wrong). */
static int on_host(PyObject *tensor)
{
    PyObject *cpu = PyObject_GetAttr(tensor, str_is_cpu);
    if (cpu == NULL)
        return -1;
    int yes = cpu == Py_True;
    Py_DECREF(cpu);
    if (yes)
        return 1;
    PyObject *meta = PyObject_GetAttr(tensor, str_is_meta);
    if (meta == NULL)
        return -1;
    yes = meta == Py_True;
    Py_DECREF(meta);
    return yes;
}

static PyObject *timed_method_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                         PyObject *kwnames)
{
    TimedMethod *self = (TimedMethod *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    int host = nargs > 0 ? on_host(args[0]) : -1;
    if (host != 0) {
        if (host < 0)
            PyErr_Clear();
        return PyObject_Vectorcall(self->orig, args, nargsf, kwnames);
    }
    tp_begin(self->region);
    PyObject *result = PyObject_Vectorcall(self->orig, args, nargsf, kwnames);
    tp_end(self->region);
    return result;
}

/* t.item without a call: a bound method, as a function's would be. */
static PyObject *timed_method_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

/* The original's name, doc and the rest (functools.wraps' view of it). */
static PyObject *timed_method_getattro(PyObject *self, PyObject *name)
{
    PyObject *found = PyObject_GenericGetAttr(self, name);
    if (found != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return found;
    PyErr_Clear();
    return PyObject_GetAttr(((TimedMethod *)self)->orig, name);
}

static void timed_method_dealloc(TimedMethod *self)
{
    Py_XDECREF(self->orig);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *timed_method_repr(TimedMethod *self)
{
    return PyUnicode_FromFormat("<trainprof timed %R>", self->orig);
}

static PyMemberDef timed_method_members[] = {
    {"__trainprof_wrapped__", T_OBJECT, offsetof(TimedMethod, orig), READONLY, "The method timed."},
    {"__wrapped__", T_OBJECT, offsetof(TimedMethod, orig), READONLY, "The method timed."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject TimedMethodType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "trainprof._native.TimedMethod",
    .tp_basicsize = sizeof(TimedMethod),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_vectorcall_offset = offsetof(TimedMethod, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = timed_method_get,
    .tp_getattro = timed_method_getattro,
    .tp_dealloc = (destructor)timed_method_dealloc,
    .tp_repr = (reprfunc)timed_method_repr,
    .tp_members = timed_method_members,
    .tp_doc = "A tensor method timed as a region where the tensor is on a device.",
};

int tp_py_timed_method_ready(void)
{
    str_is_cpu = PyUnicode_InternFromString("is_cpu");
    str_is_meta = PyUnicode_InternFromString("is_meta");
    if (str_is_cpu == NULL || str_is_meta == NULL)
        return -1;
    return PyType_Ready(&TimedMethodType);
}

PyObject *tp_py_timed_method_new(PyObject *orig, uint32_t region)
{
    if (!PyCallable_Check(orig)) {
        PyErr_SetString(PyExc_TypeError, "timed_method() takes a callable");
        return NULL;
    }
    TimedMethod *self = PyObject_New(TimedMethod, &TimedMethodType);
    if (self == NULL)
        return NULL;
    Py_INCREF(orig);
    self->orig = orig;
    self->region = region;
    self->vectorcall = timed_method_vectorcall;
    return (PyObject *)self;
}
