/* _stack_sampler.h: the extension's functions over the stack walker
 * (_stacks.h). */
#ifndef TP_PY_STACK_SAMPLER_H
#define TP_PY_STACK_SAMPLER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* _stack_snapshot(): every thread's stack as the walker reads it, without
 * the Python API on their frames: a list of (thread ident, native thread id,
 * truncated, [(function, file, line), ...] innermost first). For tests, with
 * sys._current_frames() as the oracle. */
PyObject *tp_py_stack_snapshot(PyObject *self, PyObject *unused);

/* _start_stacks(hz): starts this process's sampler thread, which reads every
 * thread's stack hz times a second and sends each (with the thread's open
 * region and whether it was on a CPU) through its own ring to the recorder;
 * hz 0 (stacks off): once a second it only looks whether the recorder asked
 * for a sample (a stall), and reads nothing unless it did.
 * True when started; False when it already runs, or no thread could be
 * made. In a forked child, starts anew (the parent's thread is not there). */
PyObject *tp_py_start_stacks(PyObject *self, PyObject *arg);

/* _stop_stacks(): stops it and waits for it. */
PyObject *tp_py_stop_stacks(PyObject *self, PyObject *unused);

/* _stack_sampler_counts(): (rounds, stacks read, repeats sent) of this
 * process's sampler so far: what the tests see of idle threads' pacing. */
PyObject *tp_py_stack_sampler_counts(PyObject *self, PyObject *unused);

#endif
