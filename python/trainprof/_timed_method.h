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

/* Tensor.to in front of moves, the Python wrapper that times a move to a
 * device: calls orig(self, ...) straight where the call can move nothing
 * to a device (self already off the CPU, no target, a dtype_type target,
 * "cpu"), moves(self, ...) otherwise. */
PyObject *tp_py_to_filter_new(PyObject *orig, PyObject *moves, PyObject *dtype_type);

#endif
