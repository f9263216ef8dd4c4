/* _method_like.h: what the extension's method descriptors share
 * (_timed_method.c, _loader_next.c, _timed_backward.c), in _method_like.c. */
#ifndef TP_PY_METHOD_LIKE_H
#define TP_PY_METHOD_LIKE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* tp_descr_get: obj.name without a call gives a bound method, as a
 * function's would; the class's attribute is the descriptor itself. */
PyObject *tp_py_bind_method(PyObject *self, PyObject *obj, PyObject *type);

/* tp_getattro's body: self's own attribute, else the one of what it wraps
 * (its name, doc and the rest: functools.wraps' view of it). */
PyObject *tp_py_getattr_or_wrapped(PyObject *self, PyObject *name, PyObject *wrapped);

#endif
