/* _thread_state.c: ThreadState's slots for the C paths (_timed_call.c,
 * _step_hooks.c).
 *
 * ThreadState is a Python class with __slots__, so each attribute sits at a
 * fixed offset in the object, which its member descriptor tells. The C
 * paths read and write those words straight (a load and a store, where
 * PyObject_GetAttr costs ~100 instructions), and only on an object whose
 * type is exactly the class the offsets came from. */
#include "_thread_state.h"

#include <structmember.h>

#include "_per_thread.h"
#include "trainprof.h"

Py_ssize_t tp_py_slot_offset[TS_COUNT];
static PyTypeObject *state_type; /* strong; NULL until setup */
static int twins_only;           /* _twins_only(True): the C paths step aside */
static PyObject *compiler_dict;  /* torch.compiler's dict; NULL: the flag is unknown */
static PyObject *device_end;     /* patches.device.device_end */
static PyObject *str_is_compiling_flag;

static const char *const slot_names[TS_COUNT] = {
    [TS_DEPTH] = "depth",
    [TS_TRACED] = "traced",
    [TS_TRAIN_BATCH] = "train_batch",
    [TS_BATCH_MODEL] = "batch_model",
    [TS_FORWARD_SEEN] = "forward_seen",
    [TS_CLOSURE_AGAIN] = "closure_again",
    [TS_OPTIMIZER_STEP] = "optimizer_step",
    [TS_OPTIMIZER_STEPPED] = "optimizer_stepped",
    [TS_DEVICE_TIMES] = "device_times",
    [TS_PENDING] = "pending",
    [TS_TRACKER] = "tracker",
};

/* The offset of a writable __slots__ attribute of cls, or -1. */
static Py_ssize_t slot_offset(PyTypeObject *cls, const char *name)
{
    PyObject *descr = PyDict_GetItemString(cls->tp_dict, name); /* borrowed */
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type))
        return -1;
    PyMemberDef *def = ((PyMemberDescrObject *)descr)->d_member;
    return def->type == T_OBJECT_EX && !(def->flags & READONLY) ? def->offset : -1;
}

PyObject *tp_py_thread_state_setup(PyObject *module, PyObject *cls)
{
    (void)module;
    if (state_type != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_thread_state_setup: once per process");
        return NULL;
    }
    if (tp_slot_offsets(cls, slot_names, TS_COUNT, tp_py_slot_offset, "_thread_state_setup") < 0)
        return NULL;
    Py_INCREF(cls);
    state_type = (PyTypeObject *)cls;
    Py_RETURN_NONE;
}

PyObject *tp_py_thread_state(void)
{
    if (state_type == NULL || twins_only)
        return NULL;
    PyObject *local = tp_py_per_thread(NULL, (PyObject *)state_type);
    if (local != NULL && (Py_TYPE(local) != state_type || tp_slot_get(local, TS_TRACKER) == NULL))
        Py_CLEAR(local);
    return local;
}

int tp_slot_offsets(PyObject *cls, const char *const *names, int n, Py_ssize_t *at, const char *who)
{
    if (!PyType_Check(cls)) {
        PyErr_Format(PyExc_TypeError, "%s: a class expected", who);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if ((at[i] = slot_offset((PyTypeObject *)cls, names[i])) < 0) {
            PyErr_Format(PyExc_TypeError, "%s: %s.%s is no slot", who,
                         ((PyTypeObject *)cls)->tp_name, names[i]);
            return -1;
        }
    return 0;
}

void tp_slot_set(PyObject *local, int slot, PyObject *value)
{
    tp_word_set((PyObject **)((char *)local + tp_py_slot_offset[slot]), value);
}

int tp_truthy(PyObject *o)
{
    if (o == NULL || o == Py_False || o == Py_None)
        return 0;
    if (o == Py_True)
        return 1;
    int yes = PyObject_IsTrue(o);
    if (yes < 0)
        PyErr_Clear();
    return yes > 0;
}

PyObject *tp_py_twins_only(PyObject *module, PyObject *on)
{
    (void)module;
    int yes = PyObject_IsTrue(on);
    if (yes < 0)
        return NULL;
    twins_only = yes;
    Py_RETURN_NONE;
}

PyObject *tp_py_set_compiling_flag(PyObject *module, PyObject *compiler)
{
    (void)module;
    if (str_is_compiling_flag == NULL &&
        (str_is_compiling_flag = PyUnicode_InternFromString("_is_compiling_flag")) == NULL)
        return NULL;
    PyObject *dict = PyModule_Check(compiler) ? PyModule_GetDict(compiler) : NULL;
    Py_XINCREF(dict);
    Py_XSETREF(compiler_dict, dict);
    Py_RETURN_NONE;
}

PyObject *tp_py_set_device_end(PyObject *module, PyObject *fn)
{
    (void)module;
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "_device_end(fn)");
        return NULL;
    }
    Py_INCREF(fn);
    Py_XSETREF(device_end, fn);
    Py_RETURN_NONE;
}

int tp_py_flag_known(void) { return compiler_dict != NULL; }

int tp_py_traced(PyObject *local)
{
    if (tp_truthy(tp_slot_get(local, TS_TRACED)))
        return 1;
    PyObject *flag = compiler_dict ? PyDict_GetItem(compiler_dict, str_is_compiling_flag) : NULL;
    return tp_truthy(flag);
}

int tp_py_device_end(PyObject *local, PyObject *region)
{
    if (!tp_is_set(tp_slot_get(local, TS_DEVICE_TIMES)))
        return 0;
    if (device_end == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "device times before _device_end()");
        return -1;
    }
    PyObject *r = PyObject_CallFunctionObjArgs(device_end, region, local, NULL);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

int tp_py_close_region(PyObject *local, int slot, PyObject *region, uint32_t id)
{
    if (!tp_truthy(tp_slot_get(local, slot)))
        return 0;
    tp_slot_set(local, slot, Py_False);
    tp_end(id);
    return tp_py_device_end(local, region);
}
