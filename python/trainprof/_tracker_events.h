/* _tracker_events.h: the step tracker's events from the C paths, each in
 * C where the tracker is in its steady state (_tracker_events.c). */
#ifndef TP_PY_TRACKER_EVENTS_H
#define TP_PY_TRACKER_EVENTS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* _tracker_setup(StepTracker, Loop, StepOptimizer, sink, switches, memory):
 * the classes whose slots the events read (trainprof.steps.tracker,
 * .loop_state, .step_optimizer), the
 * sink whose step marks they may make themselves (patches.common's _Marks),
 * the module of the step switches (steps.state) and the GPU memory
 * readings' (runtime.device_memory). None, or a TypeError where a slot is
 * missing. Once per process. */
PyObject *tp_py_tracker_setup(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* Each is tracker.<event>(...) (trainprof.steps.tracker.StepTracker), with
 * the same effects and result; done in C where the tracker is of the set-up
 * class, its sink the set-up one, and its state the steady one that the
 * event's C handles, else by a call of the Python method. tracker is
 * borrowed. */

/* fetch(): whether a step begins at it (a new reference), or NULL with an
 * exception set. */
PyObject *tp_tracker_fetch(PyObject *tracker);

/* fetched(last): 0, or -1 with an exception set. */
int tp_tracker_fetched(PyObject *tracker, int last);

/* forward(training): whether the model's calls count the batches (a new
 * reference), or NULL with an exception set. */
PyObject *tp_tracker_forward(PyObject *tracker, int training);

/* backward(), or optimizer_begins() (the same event, named by name): 0, or
 * -1 with an exception set. */
int tp_tracker_work(PyObject *tracker, PyObject *name);

/* update(optimizer): 0, or -1 with an exception set. */
int tp_tracker_update(PyObject *tracker, PyObject *optimizer);

/* The tracker's fetched_only (a new reference), or NULL with an exception
 * set. */
PyObject *tp_tracker_fetched_only(PyObject *tracker);

#endif
