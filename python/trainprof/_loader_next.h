/* _loader_next.h: the DataLoader iterators' __next__ in C (_loader_next.c). */
#ifndef TP_PY_LOADER_NEXT_H
#define TP_PY_LOADER_NEXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Readies the type; 0, or -1 with an exception set. Once, at import. */
int tp_py_loader_next_ready(void);

/* _loader_next_setup(parts): what the C path calls and reads, from
 * trainprof.patches.loader (a dict; see _loader_next.c). */
PyObject *tp_py_loader_next_setup(PyObject *module, PyObject *parts);

/* handing_out(orig_next, twin): an iterator's __next__ (a method
 * descriptor) that fetches a training pass's batch in C and leaves every
 * other case to twin, loader.py's __next__ around orig_next. */
PyObject *tp_py_handing_out_new(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

#endif
