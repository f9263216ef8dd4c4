/* _batch_samples.c: a training call's batch counted in C.
 *
 * Where no DataLoader marks the steps (nanoGPT's get_batch(), data kept on
 * the GPU), each step's samples are its model's training call's batch:
 * patches.common's count_samples, five Python frames and a per_thread()
 * lookup a step, for a batch that is most often a plain tensor whose first
 * dimension is the count. Here that case is one attribute read; every other
 * (a batch of another kind, a tensor subclass, a scalar, the samples'
 * dimension still looked for or sequence-first, a batch waiting for it, the
 * script counting its samples) is count_samples', which stays the
 * definition. tests/py/test_c_paths.py holds the two to the same counts. */
#include "_batch_samples.h"

#include "_thread_state.h"
#include "trainprof.h"

static struct {
    PyTypeObject *tensor; /* strong: torch.Tensor; NULL until setup */
    PyObject *sample_dim; /* strong: patches.common.SampleDim */
    PyObject *switches;   /* strong: steps.state's dict */
} cfg;

static PyObject *str_shape, *str_seq_first, *str_looking, *str_manual_samples;

/* Whether cls's attribute name is False (not where it can't be read). */
static int attr_false(PyObject *cls, PyObject *name)
{
    PyObject *v = PyObject_GetAttr(cls, name);
    if (v == NULL) {
        PyErr_Clear();
        return 0;
    }
    Py_DECREF(v);
    return v == Py_False;
}

int tp_batch_samples(PyObject *local, PyObject *first)
{
    if (cfg.tensor == NULL || Py_TYPE(first) != cfg.tensor ||
        tp_is_set(tp_slot_get(local, TS_PENDING)))
        return 0;
    PyObject *manual = PyDict_GetItemWithError(cfg.switches, str_manual_samples); /* borrowed */
    if (manual != Py_False || !attr_false(cfg.sample_dim, str_seq_first) ||
        !attr_false(cfg.sample_dim, str_looking)) {
        PyErr_Clear();
        return 0;
    }
    PyObject *shape = PyObject_GetAttr(first, str_shape);
    long long n = -1;
    if (shape != NULL && PyTuple_Check(shape) && PyTuple_GET_SIZE(shape) > 0 &&
        PyLong_Check(PyTuple_GET_ITEM(shape, 0)))
        n = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, 0));
    Py_XDECREF(shape);
    if (n < 0) { /* none, or a size that says no count: the Python tells */
        PyErr_Clear();
        return 0;
    }
    tp_samples(n);
    return 1;
}

PyObject *tp_py_batch_samples_setup(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (cfg.tensor != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_batch_samples_setup: once per process");
        return NULL;
    }
    if (nargs != 3 || !PyType_Check(args[0]) || !PyModule_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "_batch_samples_setup(Tensor, SampleDim, switches)");
        return NULL;
    }
    if ((str_shape = PyUnicode_InternFromString("shape")) == NULL ||
        (str_seq_first = PyUnicode_InternFromString("seq_first")) == NULL ||
        (str_looking = PyUnicode_InternFromString("looking")) == NULL ||
        (str_manual_samples = PyUnicode_InternFromString("manual_samples")) == NULL)
        return NULL;
    cfg.sample_dim = Py_NewRef(args[1]);
    cfg.switches = Py_NewRef(PyModule_GetDict(args[2]));
    cfg.tensor = (PyTypeObject *)Py_NewRef(args[0]);
    Py_RETURN_NONE;
}
