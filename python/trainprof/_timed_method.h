/* _timed_method.h: tensor methods timed in C (_timed_method.c). */
#ifndef TP_PY_TIMED_METHOD_H
#define TP_PY_TIMED_METHOD_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <structmember.h>

/* Readies the type; 0, or -1 with an exception set. Once, at import. */
int tp_py_timed_method_ready(void);

/* A method descriptor that calls orig(self, ...) as it was called, inside
 * region where self is neither on the CPU nor on the meta device, and
 * straight through otherwise. */
PyObject *tp_py_timed_method_new(PyObject *orig, uint32_t region);

#endif
