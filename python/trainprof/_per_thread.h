/* _per_thread.h: the extension's per-thread objects (_per_thread.c). */
#ifndef TP_PY_PER_THREAD_H
#define TP_PY_PER_THREAD_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* per_thread(cls): this thread's instance of cls, made by cls() the first
 * time this thread asks, and kept until the thread ends. cls must be
 * hashable (a class is). */
PyObject *tp_py_per_thread(PyObject *module, PyObject *cls);

#endif
