/* _step_hooks.c: the optimizer step's global hooks (trainprof.patches.loop)
 * in C.
 *
 * torch calls them around every optimizer.step(): the pre-hook opens
 * optimizer_step and tells the step tracker, the post-hook closes it and the
 * step's train_batch, and tells the tracker of the update. In Python they
 * cost four frames a step (~96 opcodes on the CPU stand-in, issue 56); here,
 * two calls into the tracker. What C doesn't take (a step with a closure,
 * device times per phase, a ThreadState it can't read) goes to the hook's
 * Python twin, which does it all. As _timed_call.c's, a StepHook's __call__
 * as Python sees it is Python (it calls the twin), so that Dynamo, tracing a
 * compiled optimizer's step, inlines the twin where the interpreter calls
 * the C. */
#include "_step_hooks.h"
#include "_own_work.h"

#include <stddef.h>
#include <string.h>
#include <structmember.h>

#include "_thread_state.h"
#include "_tracker_events.h"
#include "trainprof.h"

enum { PRE, POST };

typedef struct {
    PyObject_HEAD PyObject *twin; /* loop.py's pre_hook or post_hook */
    int kind;
    vectorcallfunc vectorcall;
} StepHook;

/* Set once by _step_hooks_setup, under the GIL. */
static struct {
    int ready, device_phases;
    PyObject *optim, *train; /* the optimizer_step and train_batch Regions */
    uint32_t optim_id, train_id;
} cfg;

static PyObject *str_closure, *str_optimizer_begins;

static PyObject *call_twin(StepHook *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    return PyObject_Vectorcall(self->twin, args, nargsf, kwnames);
}

/* pre_hook(optimizer, args, kwargs) without a closure: optimizer_step
 * begins (loop.py's begin_step). */
static PyObject *pre_hook(StepHook *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (cfg.device_phases || nargs != 3 || kwnames != NULL || !PyTuple_Check(args[1]) ||
        !PyDict_Check(args[2]))
        return call_twin(self, args, nargsf, kwnames);
    PyObject *closure = PyDict_GetItemWithError(args[2], str_closure); /* borrowed */
    if (closure == NULL) {
        if (PyErr_Occurred())
            return NULL;
        closure = PyTuple_GET_SIZE(args[1]) > 1 ? PyTuple_GET_ITEM(args[1], 1) : Py_None;
    }
    if (closure != Py_None && PyCallable_Check(closure)) /* its calls are timed apart */
        return call_twin(self, args, nargsf, kwnames);
    PyObject *local = tp_py_thread_state();
    if (local == NULL)
        return PyErr_Occurred() ? NULL : call_twin(self, args, nargsf, kwnames);
    tp_slot_set(local, TS_OPTIMIZER_STEP, Py_True);
    PyObject *tracker = tp_slot_get(local, TS_TRACKER);
    int told = tp_tracker_work(tracker, str_optimizer_begins);
    Py_DECREF(local);
    if (told < 0)
        return NULL;
    tp_begin(cfg.optim_id);
    Py_RETURN_NONE;
}

/* post_hook(optimizer, args, kwargs): optimizer_step ends, and with it the
 * step's train_batch; the tracker has an update (loop.py's post_hook and
 * _training_step_ends). */
static PyObject *post_hook(StepHook *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) < 1)
        return call_twin(self, args, nargsf, kwnames);
    PyObject *local = tp_py_thread_state();
    if (local == NULL)
        return PyErr_Occurred() ? NULL : call_twin(self, args, nargsf, kwnames);
    PyObject *r = NULL;
    if (tp_py_close_region(local, TS_OPTIMIZER_STEP, cfg.optim, cfg.optim_id) < 0)
        goto done;
    tp_slot_set(local, TS_OPTIMIZER_STEPPED, Py_True);
    if (tp_py_close_region(local, TS_TRAIN_BATCH, cfg.train, cfg.train_id) < 0)
        goto done;
    tp_slot_set(local, TS_FORWARD_SEEN, Py_False);
    if (tp_tracker_update(tp_slot_get(local, TS_TRACKER), args[0]) == 0)
        r = Py_NewRef(Py_None);
done:
    Py_DECREF(local);
    return r;
}

/* Each hook is trainprof's own work whole (its twin's too: no code of the
 * training's runs in it). */
static PyObject *pre_hook_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                     PyObject *kwnames)
{
    return tp_as_own_work((vectorcallfunc)pre_hook, callable, args, nargsf, kwnames);
}

static PyObject *post_hook_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                      PyObject *kwnames)
{
    return tp_as_own_work((vectorcallfunc)post_hook, callable, args, nargsf, kwnames);
}

static int step_hook_traverse(StepHook *self, visitproc visit, void *arg)
{
    Py_VISIT(self->twin);
    return 0;
}

static int step_hook_clear(StepHook *self)
{
    Py_CLEAR(self->twin);
    return 0;
}

static void step_hook_dealloc(StepHook *self)
{
    PyObject_GC_UnTrack(self);
    step_hook_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *step_hook_repr(StepHook *self)
{
    return PyUnicode_FromFormat("<trainprof step hook %R>", self->twin);
}

static PyMemberDef step_hook_members[] = {
    {"twin", T_OBJECT, offsetof(StepHook, twin), READONLY, "The hook in Python."},
    {"__wrapped__", T_OBJECT, offsetof(StepHook, twin), READONLY, "The hook in Python."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject StepHookType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "trainprof._native.StepHook",
    .tp_basicsize = sizeof(StepHook),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(StepHook, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = (traverseproc)step_hook_traverse,
    .tp_clear = (inquiry)step_hook_clear,
    .tp_dealloc = (destructor)step_hook_dealloc,
    .tp_repr = (reprfunc)step_hook_repr,
    .tp_members = step_hook_members,
    .tp_doc = "An optimizer step hook taken in C (trainprof.patches.loop).",
};

int tp_py_step_hooks_ready(void)
{
    str_closure = PyUnicode_InternFromString("closure");
    str_optimizer_begins = PyUnicode_InternFromString("optimizer_begins");
    if (str_closure == NULL || str_optimizer_begins == NULL)
        return -1;
    return PyType_Ready(&StepHookType);
}

/* parts[key] (borrowed), or NULL with a TypeError. */
static PyObject *part(PyObject *parts, const char *key)
{
    PyObject *v = PyDict_GetItemString(parts, key);
    if (v == NULL)
        PyErr_Format(PyExc_TypeError, "_step_hooks_setup: no %s", key);
    return v;
}

PyObject *tp_py_step_hooks_setup(PyObject *module, PyObject *parts)
{
    (void)module;
    if (cfg.ready || !PyDict_Check(parts)) {
        PyErr_SetString(PyExc_TypeError, "_step_hooks_setup(parts: dict), once");
        return NULL;
    }
    PyObject *call = part(parts, "call"), *optim = part(parts, "optim"),
             *optim_id = part(parts, "optim_id"), *train = part(parts, "train"),
             *train_id = part(parts, "train_id"), *phases = part(parts, "device_phases");
    if (!call || !optim || !optim_id || !train || !train_id || !phases)
        return NULL;
    if (!PyCallable_Check(call) || !PyLong_Check(optim_id) || !PyLong_Check(train_id)) {
        PyErr_SetString(PyExc_TypeError, "_step_hooks_setup: a part of the wrong kind");
        return NULL;
    }
    /* Dynamo and Python code see a Python __call__, which calls the twin */
    if (PyDict_SetItemString(StepHookType.tp_dict, "__call__", call) < 0)
        return NULL;
    PyType_Modified(&StepHookType);
    cfg.optim_id = (uint32_t)PyLong_AsUnsignedLong(optim_id);
    cfg.train_id = (uint32_t)PyLong_AsUnsignedLong(train_id);
    if (PyErr_Occurred())
        return NULL;
    Py_INCREF(optim);
    Py_INCREF(train);
    cfg.optim = optim;
    cfg.train = train;
    cfg.device_phases = PyObject_IsTrue(phases) > 0;
    cfg.ready = 1;
    Py_RETURN_NONE;
}

PyObject *tp_py_step_hook_new(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    const char *kind = nargs == 2 && PyUnicode_Check(args[1]) ? PyUnicode_AsUTF8(args[1]) : NULL;
    if (kind == NULL || !PyCallable_Check(args[0]) ||
        (strcmp(kind, "pre") != 0 && strcmp(kind, "post") != 0)) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, "step_hook(hook, 'pre' or 'post')");
        return NULL;
    }
    if (!cfg.ready) {
        PyErr_SetString(PyExc_RuntimeError, "step_hook before _step_hooks_setup()");
        return NULL;
    }
    StepHook *self = PyObject_GC_New(StepHook, &StepHookType);
    if (self == NULL)
        return NULL;
    Py_INCREF(args[0]);
    self->twin = args[0];
    self->kind = strcmp(kind, "pre") == 0 ? PRE : POST;
    self->vectorcall = self->kind == PRE ? pre_hook_vectorcall : post_hook_vectorcall;
    PyObject_GC_Track(self);
    return (PyObject *)self;
}
