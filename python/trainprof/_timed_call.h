/* _timed_call.h: a module's timed call in C (_timed_call.c). */
#ifndef TP_PY_TIMED_CALL_H
#define TP_PY_TIMED_CALL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* Readies the type; 0, or -1 with an exception set. Once, at import. */
int tp_py_timed_call_ready(void);

/* The TimedCall type (trainprof._native.TimedCall). */
PyObject *tp_py_timed_call_type(void);

/* TimedCall(module_ref, inner, compiled, region): module_ref a weak
 * reference to the module, inner what Module.__call__ would have called
 * instead of _call_impl (None: _call_impl), region (a trainprof.Region,
 * whose id is region_id) what its outermost calls are timed as. */
PyObject *tp_py_timed_call_new(PyObject *module_ref, PyObject *inner, PyObject *compiled,
                               PyObject *region, uint32_t region_id);

/* _timed_call_setup(parts): what the C path calls and reads, from
 * trainprof.patches.forward (a dict; see _timed_call.c). */
PyObject *tp_py_timed_call_setup(PyObject *module, PyObject *parts);

/* _timed_call_fast(on): whether the C path may be taken (the global hooks
 * gone, torch's compiling flag reliable, no device time per phase). */
PyObject *tp_py_timed_call_fast(PyObject *module, PyObject *on);

#endif
