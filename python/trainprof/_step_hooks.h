/* _step_hooks.h: the optimizer step's hooks in C (_step_hooks.c). */
#ifndef TP_PY_STEP_HOOKS_H
#define TP_PY_STEP_HOOKS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Readies the type; 0, or -1 with an exception set. Once, at import. */
int tp_py_step_hooks_ready(void);

/* _step_hooks_setup(parts): what the hooks call and read, from
 * trainprof.patches.loop (a dict; see _step_hooks.c). */
PyObject *tp_py_step_hooks_setup(PyObject *module, PyObject *parts);

/* step_hook(hook, kind): a StepHook that does what hook (loop.py's pre_hook
 * or post_hook, kind "pre" or "post") does, in C where it can. */
PyObject *tp_py_step_hook_new(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

#endif
