/* _step_marks.h: the step marks and the capture window's check after each
 * (_step_marks.c). */
#ifndef TP_PY_STEP_MARKS_H
#define TP_PY_STEP_MARKS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* _native.step(): a step boundary now, then a capture window's request
 * checked (its hook called when a new request came or the step it waits
 * for is here; an exception in it is the capture's, never the training's). */
void tp_py_mark_step(void);

/* _native.step_at(t_ns): a step boundary at an earlier now_ns(), then the
 * capture window's check as tp_py_mark_step's. */
void tp_py_mark_step_at(uint64_t t_ns);

/* Calls fn with arg as an unsigned 64-bit integer (a time from now_ns(), a
 * step count): None, or NULL with an exception set. */
PyObject *tp_py_pass_u64(PyObject *arg, void (*fn)(uint64_t));

/* The module's functions (_native.c's table): step(), step_at(t_ns),
 * _ops_hook(fn), _ops_wait(n), _ops_request(), _steps_marked(),
 * _ops_begun(step), _ops_send(blob). */
PyObject *tp_py_step(PyObject *module, PyObject *unused);
PyObject *tp_py_step_at(PyObject *module, PyObject *arg);
PyObject *tp_py_ops_hook(PyObject *module, PyObject *fn);
PyObject *tp_py_ops_wait(PyObject *module, PyObject *arg);
PyObject *tp_py_ops_request(PyObject *module, PyObject *unused);
PyObject *tp_py_steps_marked(PyObject *module, PyObject *unused);
PyObject *tp_py_ops_begun(PyObject *module, PyObject *arg);
PyObject *tp_py_ops_send(PyObject *module, PyObject *arg);

#endif
