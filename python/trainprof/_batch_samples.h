/* _batch_samples.h: a training call's batch counted in C where
 * patches.common's count_samples would count its first tensor's size
 * (_batch_samples.c). */
#ifndef TP_PY_BATCH_SAMPLES_H
#define TP_PY_BATCH_SAMPLES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* _batch_samples_setup(Tensor, SampleDim, switches): torch.Tensor, the
 * class that tells which dimension counts the samples (patches.common), and
 * the module of the step switches (steps.state). None, or a TypeError. Once
 * per process. */
PyObject *tp_py_batch_samples_setup(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* count_samples(batch) for a batch whose first item is first (a call's
 * first argument), on the thread whose ThreadState is local: 1 where it is
 * counted here (first a torch.Tensor with a dimension, the samples'
 * dimension known, none of this thread's waiting, the script counting none
 * itself), 0 where count_samples is to count it (nothing was done). Never
 * raises. */
int tp_batch_samples(PyObject *local, PyObject *first);

#endif
