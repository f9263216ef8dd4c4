/* _region.c: the Region type, and region(name).
 *
 * region(name) returns a cached Region for that name (interned once); using
 * it as a context manager costs two C method calls that each write one event
 * into the thread's ring, or return at once when no recorder listens. */
#include "_region.h"

#include "trainprof.h"

typedef struct {
    PyObject_HEAD uint32_t id;
    PyObject *name;
} Region;

static PyObject *region_cache;      /* name -> Region */
static PyObject *decorator_factory; /* set by trainprof/__init__.py */

static void region_dealloc(Region *self)
{
    Py_XDECREF(self->name);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *region_enter(Region *self, PyObject *unused)
{
    (void)unused;
    tp_begin(self->id);
    Py_INCREF(self);
    return (PyObject *)self;
}

static PyObject *region_exit(Region *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)args, (void)nargs;
    tp_end(self->id);
    Py_RETURN_FALSE;
}

/* region(...) used as a decorator: wraps the function (functools.wraps is
 * applied by the factory in Python). */
static PyObject *region_call(Region *self, PyObject *args, PyObject *kwargs)
{
    PyObject *func;
    if (kwargs || !PyArg_ParseTuple(args, "O:region", &func) || !PyCallable_Check(func)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "a region decorates one callable");
        return NULL;
    }
    if (!decorator_factory) {
        PyErr_SetString(PyExc_RuntimeError, "trainprof is not fully imported");
        return NULL;
    }
    return PyObject_CallFunctionObjArgs(decorator_factory, (PyObject *)self, func, NULL);
}

static PyObject *region_repr(Region *self)
{
    return PyUnicode_FromFormat("trainprof.region(%R)", self->name);
}

static PyObject *region_get_name(Region *self, void *closure)
{
    (void)closure;
    Py_INCREF(self->name);
    return self->name;
}

static PyMethodDef region_methods[] = {
    {"__enter__", (PyCFunction)region_enter, METH_NOARGS, "Opens the region."},
    {"__exit__", (PyCFunction)(void (*)(void))region_exit, METH_FASTCALL, "Closes the region."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef region_getset[] = {
    {"name", (getter)region_get_name, NULL, "The region's name.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject RegionType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "trainprof.Region",
    .tp_basicsize = sizeof(Region),
    .tp_dealloc = (destructor)region_dealloc,
    .tp_repr = (reprfunc)region_repr,
    .tp_call = (ternaryfunc)region_call,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A named region of a training step; use with `with` or as a decorator.",
    .tp_methods = region_methods,
    .tp_getset = region_getset,
};

PyObject *tp_py_region(PyObject *module, PyObject *name)
{
    (void)module;
    PyObject *cached = PyDict_GetItemWithError(region_cache, name);
    if (cached) {
        Py_INCREF(cached);
        return cached;
    }
    if (PyErr_Occurred())
        return NULL;
    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "region name must be a str, not %.80s",
                     Py_TYPE(name)->tp_name);
        return NULL;
    }
    const char *text = PyUnicode_AsUTF8(name);
    if (!text)
        return NULL;
    Region *r = PyObject_New(Region, &RegionType);
    if (!r)
        return NULL;
    r->id = tp_name_intern(text);
    Py_INCREF(name);
    r->name = name;
    if (PyDict_SetItem(region_cache, name, (PyObject *)r) < 0) {
        Py_DECREF(r);
        return NULL;
    }
    return (PyObject *)r;
}

PyObject *tp_py_begin(PyObject *module, PyObject *r)
{
    (void)module;
    if (Py_TYPE(r) != &RegionType) {
        PyErr_SetString(PyExc_TypeError, "begin() takes a trainprof.Region");
        return NULL;
    }
    tp_begin(((Region *)r)->id);
    Py_RETURN_NONE;
}

PyObject *tp_py_end(PyObject *module, PyObject *r)
{
    (void)module;
    if (Py_TYPE(r) != &RegionType) {
        PyErr_SetString(PyExc_TypeError, "end() takes a trainprof.Region");
        return NULL;
    }
    tp_end(((Region *)r)->id);
    Py_RETURN_NONE;
}

PyObject *tp_py_region_id_of(PyObject *module, PyObject *r)
{
    (void)module;
    if (Py_TYPE(r) != &RegionType) {
        PyErr_SetString(PyExc_TypeError, "region_id() takes a trainprof.Region");
        return NULL;
    }
    return PyLong_FromUnsignedLong(((Region *)r)->id);
}

PyObject *tp_py_set_decorator_factory(PyObject *module, PyObject *fn)
{
    (void)module;
    Py_XINCREF(fn);
    Py_XSETREF(decorator_factory, fn);
    Py_RETURN_NONE;
}

int tp_py_region_id(PyObject *r, uint32_t *id)
{
    if (Py_TYPE(r) != &RegionType)
        return 0;
    *id = ((Region *)r)->id;
    return 1;
}

int tp_py_region_ready(void)
{
    if (PyType_Ready(&RegionType) < 0)
        return -1;
    region_cache = PyDict_New();
    return region_cache == NULL ? -1 : 0;
}

PyObject *tp_py_region_type(void)
{
    Py_INCREF(&RegionType);
    return (PyObject *)&RegionType;
}
