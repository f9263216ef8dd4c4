/* _timed_backward.h: Tensor.backward timed in C (_timed_backward.c). */
#ifndef TP_PY_TIMED_BACKWARD_H
#define TP_PY_TIMED_BACKWARD_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Readies the type; 0, or -1 with an exception set. Once, at import. */
int tp_py_timed_backward_ready(void);

/* timed_backward(orig, twin, parts): Tensor.backward (a method
 * descriptor) that times orig as backward in C where it can and calls twin,
 * loop.py's Python wrapper, otherwise. parts: a dict (_timed_backward.c). */
PyObject *tp_py_timed_backward_new(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

#endif
