/* _method_like.c: binding and attributes of the extension's method
 * descriptors (see _method_like.h). */
#include "_method_like.h"

PyObject *tp_py_bind_method(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

PyObject *tp_py_getattr_or_wrapped(PyObject *self, PyObject *name, PyObject *wrapped)
{
    PyObject *found = PyObject_GenericGetAttr(self, name);
    if (found != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return found;
    PyErr_Clear();
    return PyObject_GetAttr(wrapped, name);
}
