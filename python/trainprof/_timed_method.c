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
#include "_own_work.h"
#include "_method_like.h"

#include <stddef.h>

#include "trainprof.h"

typedef struct {
    PyObject_HEAD PyObject *orig; /* the method it stands for */
    PyObject *moves;              /* to()'s: the Python wrapper that times a move */
    PyObject *dtype_type;         /* to()'s: torch.dtype */
    uint32_t region;
    vectorcallfunc vectorcall;
} TimedMethod;

static PyObject *str_is_cpu, *str_is_meta, *str_device, *str_cpu;

/* Tensor.is_cpu read through its getter, for the type it was last read on.
 * PyObject_GetAttr finds it each time (the type's attribute cache, the
 * descriptor's checks: ~130 instructions of a timed CPU call's ~370 over
 * torch's own, issue 56); this calls the getter torch's own lookup would.
 * It holds while the type's version tag is the one it was found under: any
 * change to the type or a base (a monkeypatched is_cpu) clears the tag, and
 * a tag is never given twice. Only for types whose attribute lookup is
 * CPython's generic one, where a data descriptor (a getset) wins over the
 * instance's dict. One type: the GIL orders the writes, and each read
 * checks all it uses. */
static struct {
    PyTypeObject *type; /* strong: a tag is checked on the type it came from */
    PyObject *descr;    /* strong: keeps its PyGetSetDef */
    unsigned int tag;
    getter get;
    void *closure;
} is_cpu_getter;

static void remember_is_cpu_getter(PyTypeObject *type)
{
    if (type->tp_getattro != PyObject_GenericGetAttr ||
        !PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG) || type->tp_version_tag == 0)
        return;
    PyObject *descr = _PyType_Lookup(type, str_is_cpu); /* borrowed */
    if (descr == NULL || !Py_IS_TYPE(descr, &PyGetSetDescr_Type))
        return;
    PyGetSetDef *def = ((PyGetSetDescrObject *)descr)->d_getset;
    if (def->get == NULL)
        return;
    Py_INCREF(type);
    Py_INCREF(descr);
    Py_XDECREF(is_cpu_getter.type);
    Py_XDECREF(is_cpu_getter.descr);
    is_cpu_getter.type = type;
    is_cpu_getter.descr = descr;
    is_cpu_getter.tag = type->tp_version_tag;
    is_cpu_getter.get = def->get;
    is_cpu_getter.closure = def->closure;
}

/* tensor.is_cpu (a new reference, or NULL with an exception set). */
static PyObject *read_is_cpu(PyObject *tensor)
{
    PyTypeObject *type = Py_TYPE(tensor);
    if (type == is_cpu_getter.type && type->tp_version_tag == is_cpu_getter.tag &&
        PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG))
        return is_cpu_getter.get(tensor, is_cpu_getter.closure);
    PyObject *value = PyObject_GetAttr(tensor, str_is_cpu);
    if (value != NULL)
        remember_is_cpu_getter(type);
    return value;
}

/* 1 when tensor is on the CPU or the meta device (nothing to wait for), 0 on
 * another device, -1 when it can't be told (not a tensor: the original
 * method then says what is wrong). */
static int on_host(PyObject *tensor)
{
    PyObject *cpu = read_is_cpu(tensor);
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

/* Its own work is the check, told to the sampler with two stores where a
 * CPU tensor's call is most of a step's calls (_own_work.h). */
static PyObject *timed_method_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                         PyObject *kwnames)
{
    TimedMethod *self = (TimedMethod *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    int was = tp_own_work(1);
    int host = nargs > 0 ? on_host(args[0]) : -1;
    if (host != 0) {
        if (host < 0)
            PyErr_Clear();
        tp_own_work(was);
        return PyObject_Vectorcall(self->orig, args, nargsf, kwnames);
    }
    tp_begin(self->region);
    PyObject *result = tp_call_out(self->orig, args, nargsf, kwnames);
    tp_end(self->region);
    tp_own_work(was);
    return result;
}

/* to()'s target: the device keyword, else the first argument, else NULL
 * (borrowed). */
static PyObject *to_target(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, i);
        if (key == str_device || PyUnicode_Compare(key, str_device) == 0)
            return args[nargs + i];
    }
    return nargs > 1 ? args[1] : NULL;
}

/* Tensor.to(...): straight to the original where it moves nothing to a
 * device (a tensor already off the CPU, a dtype, "cpu", no argument), else
 * through the Python wrapper that times the move (and reads every other
 * spelling of a target). */
static PyObject *to_filter_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                      PyObject *kwnames)
{
    TimedMethod *self = (TimedMethod *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    int was = tp_own_work(1); /* the check; the move's wrapper has frames */
    PyObject *through = self->moves;
    if (nargs > 0) {
        PyObject *cpu = read_is_cpu(args[0]);
        if (cpu == NULL) {
            PyErr_Clear();
        } else {
            int on_cpu = cpu == Py_True;
            Py_DECREF(cpu);
            PyObject *target = to_target(args, nargs, kwnames);
            if (!on_cpu || target == NULL || Py_TYPE(target) == (PyTypeObject *)self->dtype_type ||
                (PyUnicode_Check(target) && PyUnicode_Compare(target, str_cpu) == 0))
                through = self->orig;
        }
    }
    tp_own_work(was);
    return PyObject_Vectorcall(through, args, nargsf, kwnames);
}

/* The original's name, doc and the rest (functools.wraps' view of it). */
static PyObject *timed_method_getattro(PyObject *self, PyObject *name)
{
    return tp_py_getattr_or_wrapped(self, name, ((TimedMethod *)self)->orig);
}

static void timed_method_dealloc(TimedMethod *self)
{
    Py_XDECREF(self->orig);
    Py_XDECREF(self->moves);
    Py_XDECREF(self->dtype_type);
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
    .tp_descr_get = tp_py_bind_method,
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
    str_device = PyUnicode_InternFromString("device");
    str_cpu = PyUnicode_InternFromString("cpu");
    if (str_is_cpu == NULL || str_is_meta == NULL || str_device == NULL || str_cpu == NULL)
        return -1;
    return PyType_Ready(&TimedMethodType);
}

/* A TimedMethod calling orig through `call`, holding a reference to each of
 * orig, moves and dtype_type (the last two may be NULL). */
static PyObject *timed_method_alloc(PyObject *orig, PyObject *moves, PyObject *dtype_type,
                                    uint32_t region, vectorcallfunc call)
{
    TimedMethod *self = PyObject_New(TimedMethod, &TimedMethodType);
    if (self == NULL)
        return NULL;
    Py_INCREF(orig);
    Py_XINCREF(moves);
    Py_XINCREF(dtype_type);
    self->orig = orig;
    self->moves = moves;
    self->dtype_type = dtype_type;
    self->region = region;
    self->vectorcall = call;
    return (PyObject *)self;
}

PyObject *tp_py_timed_method_new(PyObject *orig, uint32_t region)
{
    if (!PyCallable_Check(orig)) {
        PyErr_SetString(PyExc_TypeError, "timed_method() takes a callable");
        return NULL;
    }
    return timed_method_alloc(orig, NULL, NULL, region, timed_method_vectorcall);
}

PyObject *tp_py_to_filter_new(PyObject *orig, PyObject *moves, PyObject *dtype_type)
{
    if (!PyCallable_Check(orig) || !PyCallable_Check(moves) || !PyType_Check(dtype_type)) {
        PyErr_SetString(PyExc_TypeError, "to_filter(to, moves, dtype type)");
        return NULL;
    }
    return timed_method_alloc(orig, moves, dtype_type, 0, to_filter_vectorcall);
}
