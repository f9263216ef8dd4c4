/* _per_thread.c: per_thread(cls), this thread's instance of a class, for the
 * instrumentation's hot paths.
 *
 * A threading.local attribute costs about 550 instructions a read in CPython
 * 3.11 (the module state looked up, the thread's dict found, the name
 * compared with "__dict__", then a generic lookup); the PyTorch patches read
 * their per-thread state about 170 times a training step, a third of what
 * record added to a host-bound step (bench/instructions_by_function.py).
 * per_thread(cls) costs one call and one dict lookup, and what it returns is
 * a plain object whose attributes (its __slots__) read at the interpreter's
 * fastest. The instance lives in the thread state's dict
 * (PyThreadState_GetDict), keyed by the class: it goes when the thread ends,
 * as a threading.local's does, and a forked child's thread keeps its own. */
#include "_per_thread.h"

PyObject *tp_py_per_thread(PyObject *module, PyObject *cls)
{
    (void)module;
    PyObject *dict = PyThreadState_GetDict();
    if (dict == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "per_thread: no thread state");
        return NULL;
    }
    PyObject *found = PyDict_GetItemWithError(dict, cls); /* borrowed */
    if (found != NULL) {
        Py_INCREF(found);
        return found;
    }
    if (PyErr_Occurred())
        return NULL;
    PyObject *made = PyObject_CallNoArgs(cls);
    if (made == NULL)
        return NULL;
    if (PyDict_SetItem(dict, cls, made) < 0) {
        Py_DECREF(made);
        return NULL;
    }
    return made;
}
