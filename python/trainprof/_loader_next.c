/* _loader_next.c: the training DataLoader's fetches (trainprof.patches.loader's
 * __next__) in C.
 *
 * Every batch of the training pass goes through it: the step's train_batch
 * ended, the step tracker told of the fetch (where steps begin), the fetch
 * timed as dataloader_next, the batch's samples counted, the tracker told
 * of its end. In Python that was the largest frame a step left on the CPU
 * stand-in (131 opcodes, issue 56). The C path takes the training pass's
 * batches where no framework marks the steps and no `trainprof bottleneck`
 * run replays the loader; everything else (other passes, the pass's end's
 * bookkeeping, a loader that hands its batches out one fetch late) goes to
 * loader.py's Python, the twin and its helpers: keep the two in step.
 *
 * It is a method descriptor (Py_TPFLAGS_METHOD_DESCRIPTOR) set as the
 * iterator class's __next__: next(it) calls it with the iterator, and no
 * bound method is made. */
#include "_loader_next.h"
#include "_own_work.h"
#include "_method_like.h"

#include <stddef.h>
#include <structmember.h>

#include "_thread_state.h"
#include "_tracker_events.h"
#include "trainprof.h"

typedef struct {
    PyObject_HEAD PyObject *orig; /* the iterator class's own __next__ */
    PyObject *twin;               /* loader.py's __next__ around it */
    vectorcallfunc vectorcall;
} HandingOut;

/* Set once by _loader_next_setup, under the GIL. */
static struct {
    int ready, bottleneck;
    PyObject *state;         /* trainprof.steps.state's dict: manual_steps, manual_samples */
    PyObject *timed_threads; /* patches.device's list: threads that timed the device */
    PyObject *device_poll, *count_samples;
    PyObject *stopped; /* loader.py's _main_stopped(it, tracker, fetched_only, began) */
    PyObject *ahead;   /* loader.py's _hand_out_ahead(it, n, batch) */
    PyObject *train;   /* the train_batch Region */
    uint32_t train_id, next_id;
} cfg;

static PyObject *str_main, *str_sizes, *str_ahead, *str_len, *str_yielded, *str_manual_steps,
    *str_manual_samples;

/* A flag of trainprof.steps.state, by name: 1, 0, or -1 with an exception. */
static int state_flag(PyObject *name)
{
    PyObject *v = PyDict_GetItemWithError(cfg.state, name); /* borrowed */
    return v == NULL ? (PyErr_Occurred() ? -1 : 0) : PyObject_IsTrue(v);
}

/* The step's train_batch ended (a step whose update didn't end it), and
 * forward_seen reset: loop.py's _end_train_batch. 0, or -1. */
static int end_train_batch(PyObject *local)
{
    tp_slot_set(local, TS_FORWARD_SEEN, Py_False);
    return tp_py_close_region(local, TS_TRAIN_BATCH, cfg.train, cfg.train_id);
}

/* The samples of batch k of a sized pass (size, total, drop_last):
 * min(size, total - (k - 1) * size), or 0 where the pass's sizes are not
 * known (the batch then tells them). -1 with an exception set. */
static long long sized_samples(PyObject *it)
{
    PyObject *sizes = PyObject_GetAttr(it, str_sizes);
    if (sizes == NULL)
        return -1;
    long long n = 0;
    if (PyTuple_CheckExact(sizes) && PyTuple_GET_SIZE(sizes) == 3) {
        int manual = state_flag(str_manual_samples);
        long long size = PyLong_AsLongLong(PyTuple_GET_ITEM(sizes, 0));
        long long total = PyLong_AsLongLong(PyTuple_GET_ITEM(sizes, 1));
        int drop_last = PyObject_IsTrue(PyTuple_GET_ITEM(sizes, 2));
        if (manual == 0 && drop_last > 0) {
            n = size;
        } else if (manual == 0 && drop_last == 0) {
            PyObject *k = PyObject_GetAttr(it, str_yielded);
            long long yielded = k ? PyLong_AsLongLong(k) : -1;
            Py_XDECREF(k);
            long long left = total - (yielded - 1) * size;
            n = size < left ? size : left;
        }
        if (PyErr_Occurred())
            n = -1;
    } /* else none known (None), or not loader.py's: the batch tells them */
    Py_DECREF(sizes);
    return n;
}

/* The batch's samples told, then the tracker told that it came
 * (loader.py's __next__ after its fetch). 0, or -1. */
static int counted(PyObject *it, PyObject *tracker, PyObject *batch)
{
    long long n = sized_samples(it);
    if (n < 0)
        return -1;
    PyObject *ahead = PyObject_GetAttr(it, str_ahead);
    int late = ahead == NULL ? -1 : PyObject_IsTrue(ahead);
    Py_XDECREF(ahead);
    PyObject *r = NULL;
    if (late > 0) { /* the batch before is handed out now */
        PyObject *count = PyLong_FromLongLong(n);
        r = count ? PyObject_CallFunctionObjArgs(cfg.ahead, it, count, batch, NULL) : NULL;
        Py_XDECREF(count);
    } else if (late == 0 && n > 0) {
        tp_samples(n);
        r = Py_NewRef(Py_None);
    } else if (late == 0) { /* its first tensor's size */
        r = PyObject_CallOneArg(cfg.count_samples, batch);
    }
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    /* loops that know the length (Lightning's) fetch no further */
    PyObject *yielded = PyObject_GetAttr(it, str_yielded);
    PyObject *len = yielded ? PyObject_GetAttr(it, str_len) : NULL;
    int last = len ? PyObject_RichCompareBool(yielded, len, Py_EQ) : -1;
    Py_XDECREF(yielded);
    Py_XDECREF(len);
    if (last < 0)
        return -1;
    return tp_tracker_fetched(tracker, last);
}

/* A fetch of the training pass: the tracker told, the batch fetched as
 * dataloader_next and counted. Its StopIteration is the pass's end. */
static PyObject *main_fetch(HandingOut *self, PyObject *it, PyObject *local)
{
    if (end_train_batch(local) < 0)
        return NULL;
    if (PyList_GET_SIZE(cfg.timed_threads) > 0) { /* some thread timed the device */
        PyObject *r = PyObject_CallOneArg(cfg.device_poll, local);
        if (r == NULL)
            return NULL;
        Py_DECREF(r);
    }
    PyObject *tracker = tp_slot_get(local, TS_TRACKER);
    PyObject *fetched_only = tp_tracker_fetched_only(tracker);
    if (fetched_only == NULL)
        return NULL;
    PyObject *began = tp_tracker_fetch(tracker);
    if (began == NULL) {
        Py_DECREF(fetched_only);
        return NULL;
    }
    tp_begin(cfg.next_id);
    PyObject *batch = tp_call_out(self->orig, &it, 1, NULL);
    tp_end(cfg.next_id);
    if (batch == NULL && PyErr_ExceptionMatches(PyExc_StopIteration)) {
        tp_kept_error end;
        tp_error_keep(&end);
        PyObject *r =
            PyObject_CallFunctionObjArgs(cfg.stopped, it, tracker, fetched_only, began, NULL);
        if (r == NULL) /* said; the pass's end goes on as it came */
            PyErr_WriteUnraisable((PyObject *)self);
        Py_XDECREF(r);
        tp_error_restore(&end);
    } else if (batch != NULL && counted(it, tracker, batch) < 0) {
        PyErr_WriteUnraisable((PyObject *)self); /* said; the training has its batch */
    }
    Py_DECREF(fetched_only);
    Py_DECREF(began);
    return batch;
}

static PyObject *handing_out_own(PyObject *callable, PyObject *const *args, size_t nargsf,
                                 PyObject *kwnames)
{
    HandingOut *self = (HandingOut *)callable;
    if (!cfg.ready || cfg.bottleneck || PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL)
        return tp_call_out(self->twin, args, nargsf, kwnames);
    PyObject *it = args[0];
    PyObject *main = PyObject_GetAttr(it, str_main);
    int manual = main == Py_True ? state_flag(str_manual_steps) : 1;
    Py_XDECREF(main);
    if (manual != 0) { /* another pass, or steps a framework marks: the twin's */
        PyErr_Clear();
        return tp_call_out(self->twin, args, nargsf, kwnames);
    }
    PyObject *local = tp_py_thread_state();
    if (local == NULL)
        return PyErr_Occurred() ? NULL : tp_call_out(self->twin, args, nargsf, kwnames);
    PyObject *batch = main_fetch(self, it, local);
    Py_DECREF(local);
    return batch;
}

static PyObject *handing_out_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                        PyObject *kwnames)
{
    return tp_as_own_work(handing_out_own, callable, args, nargsf, kwnames);
}

/* The twin's name, doc and the rest (functools.wraps' view of it). */
static PyObject *handing_out_getattro(PyObject *self, PyObject *name)
{
    return tp_py_getattr_or_wrapped(self, name, ((HandingOut *)self)->twin);
}

static int handing_out_traverse(HandingOut *self, visitproc visit, void *arg)
{
    Py_VISIT(self->orig);
    Py_VISIT(self->twin);
    return 0;
}

static int handing_out_clear(HandingOut *self)
{
    Py_CLEAR(self->orig);
    Py_CLEAR(self->twin);
    return 0;
}

static void handing_out_dealloc(HandingOut *self)
{
    PyObject_GC_UnTrack(self);
    handing_out_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *handing_out_repr(HandingOut *self)
{
    return PyUnicode_FromFormat("<trainprof handing out %R>", self->orig);
}

static PyMemberDef handing_out_members[] = {
    {"__trainprof_wrapped__", T_OBJECT, offsetof(HandingOut, orig), READONLY, "The __next__."},
    {"__wrapped__", T_OBJECT, offsetof(HandingOut, orig), READONLY, "The __next__."},
    {"twin", T_OBJECT, offsetof(HandingOut, twin), READONLY, "The Python that does it all."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject HandingOutType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "trainprof._native.HandingOut",
    .tp_basicsize = sizeof(HandingOut),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_vectorcall_offset = offsetof(HandingOut, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = tp_py_bind_method,
    .tp_getattro = handing_out_getattro,
    .tp_traverse = (traverseproc)handing_out_traverse,
    .tp_clear = (inquiry)handing_out_clear,
    .tp_dealloc = (destructor)handing_out_dealloc,
    .tp_repr = (reprfunc)handing_out_repr,
    .tp_members = handing_out_members,
    .tp_doc = "A DataLoader iterator's __next__, the training pass's fetches in C.",
};

int tp_py_loader_next_ready(void)
{
    static const struct {
        PyObject **to;
        const char *s;
    } names[] = {
        {&str_main, "_trainprof_main"},          {&str_sizes, "_trainprof_sizes"},
        {&str_ahead, "_trainprof_ahead"},        {&str_len, "_trainprof_len"},
        {&str_yielded, "_num_yielded"},          {&str_manual_steps, "manual_steps"},
        {&str_manual_samples, "manual_samples"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((*names[i].to = PyUnicode_InternFromString(names[i].s)) == NULL)
            return -1;
    return PyType_Ready(&HandingOutType);
}

PyObject *tp_py_loader_next_setup(PyObject *module, PyObject *parts)
{
    (void)module;
    if (cfg.ready || !PyDict_Check(parts)) {
        PyErr_SetString(PyExc_TypeError, "_loader_next_setup(parts: dict), once");
        return NULL;
    }
    static const char *const keys[] = {"state",   "timed_threads", "device_poll", "count_samples",
                                       "stopped", "ahead",         "train",       "train_id",
                                       "next_id", "bottleneck"};
    PyObject *v[sizeof keys / sizeof keys[0]];
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if ((v[i] = PyDict_GetItemString(parts, keys[i])) == NULL) { /* borrowed */
            PyErr_Format(PyExc_TypeError, "_loader_next_setup: no %s", keys[i]);
            return NULL;
        }
    if (!PyModule_Check(v[0]) || !PyList_CheckExact(v[1]) || !PyCallable_Check(v[2]) ||
        !PyCallable_Check(v[3]) || !PyCallable_Check(v[4]) || !PyCallable_Check(v[5]) ||
        !PyLong_Check(v[7]) || !PyLong_Check(v[8])) {
        PyErr_SetString(PyExc_TypeError, "_loader_next_setup: a part of the wrong kind");
        return NULL;
    }
    cfg.train_id = (uint32_t)PyLong_AsUnsignedLong(v[7]);
    cfg.next_id = (uint32_t)PyLong_AsUnsignedLong(v[8]);
    if (PyErr_Occurred())
        return NULL;
    PyObject **to[] = {&cfg.state,   &cfg.timed_threads, &cfg.device_poll, &cfg.count_samples,
                       &cfg.stopped, &cfg.ahead,         &cfg.train};
    for (size_t i = 0; i < sizeof to / sizeof to[0]; i++) {
        PyObject *kept = i == 0 ? PyModule_GetDict(v[0]) : v[i];
        Py_INCREF(kept);
        *to[i] = kept;
    }
    cfg.bottleneck = PyObject_IsTrue(v[9]) > 0;
    cfg.ready = 1;
    Py_RETURN_NONE;
}

PyObject *tp_py_handing_out_new(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2 || !PyCallable_Check(args[0]) || !PyCallable_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "handing_out(orig_next, twin)");
        return NULL;
    }
    HandingOut *self = PyObject_GC_New(HandingOut, &HandingOutType);
    if (self == NULL)
        return NULL;
    self->orig = Py_NewRef(args[0]);
    self->twin = Py_NewRef(args[1]);
    self->vectorcall = handing_out_vectorcall;
    PyObject_GC_Track(self);
    return (PyObject *)self;
}
