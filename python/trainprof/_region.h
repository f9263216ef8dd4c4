/* _region.h: the Region type and region(name) (_region.c). */
#ifndef TP_PY_REGION_H
#define TP_PY_REGION_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* Readies the type and the names' cache; 0, or -1 with an exception set. */
int tp_py_region_ready(void);

/* The Region type (a new reference), for the module's attribute. */
PyObject *tp_py_region_type(void);

/* 1 with *id set where r is a Region, else 0 (no exception set). */
int tp_py_region_id(PyObject *r, uint32_t *id);

/* region(name): the Region of that name, made once. */
PyObject *tp_py_region(PyObject *module, PyObject *name);

/* begin(region) and end(region): for instrumentation that cannot use `with`. */
PyObject *tp_py_begin(PyObject *module, PyObject *r);
PyObject *tp_py_end(PyObject *module, PyObject *r);

/* _region_id(region): a Region's number in the recording. */
PyObject *tp_py_region_id_of(PyObject *module, PyObject *r);

/* _set_decorator_factory(fn): what region(...)(func) calls (trainprof/__init__.py). */
PyObject *tp_py_set_decorator_factory(PyObject *module, PyObject *fn);

#endif
