/* _own_work.h: the C paths' own work, told to the stack sampler.
 *
 * A wrapper written in C has no frame: a stack sample taken in its work
 * shows the frames of the code that called it, the training's. While a
 * C path does its own work it says so (lib's tp_own_work, a store into the
 * thread's ring), and the sampler marks the sample as trainprof's cost
 * (TP_STACK_OWN); around what it calls of the training's, it says it is
 * out. */
#ifndef TP_PY_OWN_WORK_H
#define TP_PY_OWN_WORK_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "trainprof.h"

/* fn called from trainprof's own work in C out to the code it wraps (or to
 * a twin, which calls that code): the stack sampler counts the time inside
 * as the training's, not trainprof's (lib's tp_own_work). */
static inline PyObject *tp_call_out(PyObject *fn, PyObject *const *args, size_t nargsf,
                                    PyObject *kwnames)
{
    int was = tp_own_work(0);
    PyObject *r = PyObject_Vectorcall(fn, args, nargsf, kwnames);
    tp_own_work(was);
    return r;
}

/* A C path's vectorcall as trainprof's own work: `own` does it, with
 * tp_call_out for what it calls of the training's. */
static inline PyObject *tp_as_own_work(vectorcallfunc own, PyObject *callable,
                                       PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    int was = tp_own_work(1);
    PyObject *r = own(callable, args, nargsf, kwnames);
    tp_own_work(was);
    return r;
}

#endif
