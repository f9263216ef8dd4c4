/* _timed_call.c: a module's timed call (trainprof.patches.forward.TimedCall)
 * in C.
 *
 * Each module found called outermost gets one, as its _compiled_call_impl:
 * Module.__call__ calls it instead of _call_impl at every call of the model
 * and of the loss module, twice a step. In Python that call cost a frame,
 * its *args and **kwargs packed, and forward_begin's frame inside it (~280
 * opcodes a step, a fifth of what `record --ops off` added to a host-bound
 * step, issue 56). In C the steady state (the global discovery hooks gone)
 * costs a vectorcall that passes the arguments through, the thread's
 * ThreadState read by its slots' offsets, and one Python call: the step
 * tracker's forward().
 *
 * Everything else (the discovery hooks in, a torch whose compiling flag
 * can't be relied on, device times per phase, a ThreadState not the
 * expected one) takes the Python twin, forward.py's timed_call(), which
 * does it all. The twin is also the type's __call__ as Python sees it: the
 * interpreter calls the instance's vectorcall, and Dynamo, which inlines a
 * callable object's __call__ when it traces (a module with hooks of its own
 * inside compiled code), inlines the twin, as it did the Python class. */
#include "_timed_call.h"
#include "_own_work.h"

#include <stddef.h>
#include <structmember.h>

#include "_batch_samples.h"
#include "_thread_state.h"
#include "_tracker_events.h"
#include "trainprof.h"

typedef struct {
    PyObject_HEAD PyObject *module; /* a weak reference to the module */
    PyObject *inner;                /* what _compiled_call_impl was, or None */
    PyObject *compiled;             /* True: a module torch.compile() returned */
    PyObject *region;               /* the Region its outermost calls are timed as */
    PyObject *param;                /* a weak reference to its first parameter; None: it has
                                       none; NULL: not looked for */
    PyObject *weakrefs;
    uint32_t region_id;
    vectorcallfunc vectorcall;
} TimedCall;

/* What the C path calls and reads (_timed_call_setup), and whether it may
 * run (_timed_call_fast). Written under the GIL, at import and when the
 * discovery hooks come and go. */
static struct {
    int ready, fast, device_times;
    PyObject *twin;         /* forward.py's timed_call(self, *args, **kwargs) */
    PyObject *grad_enabled; /* torch.is_grad_enabled */
    PyObject *facts;        /* trainprof.steps.facts' dict: wants_model, note_model */
    PyObject *count_samples, *flush_samples, *device_begin;
    PyObject *train; /* the train_batch Region */
    uint32_t train_id;
} cfg;

static PyObject *zero, *one; /* what Python's depth counts hold */
static PyObject *str_call_impl, *str_training, *str_module_call, *str_wants_model, *str_note_model,
    *str_parameters, *str_is_cuda, *str_device;

/* ---- the Python twin ----------------------------------------------------------------------- */

/* twin(self, *args, **kwargs), the arguments passed as they came. */
static PyObject *call_twin(TimedCall *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    if (nargsf & PY_VECTORCALL_ARGUMENTS_OFFSET) { /* the slot before args is ours to use */
        PyObject **with_self = (PyObject **)args - 1;
        PyObject *kept = with_self[0];
        with_self[0] = (PyObject *)self;
        PyObject *r = tp_call_out(cfg.twin, with_self, (size_t)nargs + 1, kwnames);
        with_self[0] = kept;
        return r;
    }
    PyObject *small[8], **with_self = small;
    if (total + 1 > 8 && (with_self = PyMem_Malloc((size_t)(total + 1) * sizeof *args)) == NULL)
        return PyErr_NoMemory();
    with_self[0] = (PyObject *)self;
    for (Py_ssize_t i = 0; i < total; i++)
        with_self[i + 1] = args[i];
    PyObject *r = tp_call_out(cfg.twin, with_self, (size_t)nargs + 1, kwnames);
    if (with_self != small)
        PyMem_Free(with_self);
    return r;
}

/* ---- forward_begin's steady state ---------------------------------------------------------- */

/* The CUDA device of the module's first parameter, else None (a new
 * reference; NULL with an exception set). The parameter is remembered
 * weakly, and so is having none, as patches.device.module_device does: a
 * module moved with .to() keeps its parameter objects. */
static PyObject *module_device(TimedCall *self, PyObject *module)
{
    PyObject *param = NULL;
    if (self->param != NULL && self->param != Py_None) {
        param = PyObject_CallNoArgs(self->param);
        if (param == Py_None)
            Py_CLEAR(param);
    }
    if (param == NULL && (self->param == NULL || self->param != Py_None)) {
        if (PyErr_Occurred())
            return NULL;
        PyObject *params = PyObject_CallMethodNoArgs(module, str_parameters);
        if (params == NULL)
            return NULL;
        PyObject *iter = PyObject_GetIter(params);
        Py_DECREF(params);
        if (iter == NULL)
            return NULL;
        param = PyIter_Next(iter);
        Py_DECREF(iter);
        if (param == NULL && PyErr_Occurred())
            return NULL;
        PyObject *ref = param ? PyWeakref_NewRef(param, NULL) : Py_NewRef(Py_None);
        if (ref == NULL) {
            Py_XDECREF(param);
            return NULL;
        }
        Py_XSETREF(self->param, ref);
    }
    if (param == NULL)
        Py_RETURN_NONE;
    PyObject *cuda = PyObject_GetAttr(param, str_is_cuda);
    int on_cuda = cuda == NULL ? -1 : PyObject_IsTrue(cuda);
    Py_XDECREF(cuda);
    PyObject *device = on_cuda > 0 ? PyObject_GetAttr(param, str_device)
                                   : (on_cuda == 0 ? Py_NewRef(Py_None) : NULL);
    Py_DECREF(param);
    return device;
}

/* train_batch begins with the step's first training call, of module: its
 * start event where device times are on. 0, or -1 with an exception set. */
static int begin_train_batch(TimedCall *self, PyObject *local, PyObject *module)
{
    PyObject *model_id = PyLong_FromVoidPtr(module); /* id(module) */
    if (model_id == NULL)
        return -1;
    tp_slot_set(local, TS_TRAIN_BATCH, Py_True);
    tp_slot_set(local, TS_BATCH_MODEL, model_id);
    Py_DECREF(model_id);
    if (cfg.device_times) {
        PyObject *device = module_device(self, module);
        PyObject *r = device == NULL || device == Py_None
                          ? Py_XNewRef(device)
                          : PyObject_CallFunctionObjArgs(cfg.device_begin, cfg.train, device, NULL);
        Py_XDECREF(device);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
    }
    tp_begin(cfg.train_id);
    return 0;
}

/* count_samples(args or tuple(kwargs.values())): the call's arguments as
 * the batch, its first item counted in C where it can be
 * (_batch_samples.c). 0, or -1 with an exception set. */
static int count_batch(PyObject *local, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if ((nargs || nkw) && tp_batch_samples(local, args[0])) /* kwargs' values follow args */
        return 0;
    PyObject *batch = PyTuple_New(nargs ? nargs : nkw);
    if (batch == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(batch); i++) /* kwargs' values follow args */
        PyTuple_SET_ITEM(batch, i, Py_NewRef(args[i]));
    PyObject *r = PyObject_CallOneArg(cfg.count_samples, batch);
    Py_DECREF(batch);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* A training call of module (gradients on, module.training): the model
 * noted once, train_batch begun, and the batch counted where the model's
 * calls count them (counted_here: the tracker said so), once for a
 * closure's. 0, or -1 with an exception set. */
static int training_call(TimedCall *self, PyObject *local, PyObject *module, int counted_here,
                         PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *wants = PyDict_GetItemWithError(cfg.facts, str_wants_model); /* borrowed */
    if (wants != NULL && PyObject_IsTrue(wants)) {
        PyObject *note = PyDict_GetItemWithError(cfg.facts, str_note_model);
        PyObject *r = note ? PyObject_CallOneArg(note, module) : NULL;
        if (r == NULL)
            return -1;
        Py_DECREF(r);
    } else if (PyErr_Occurred()) {
        return -1;
    }
    if (tp_slot_get(local, TS_TRAIN_BATCH) != Py_True && begin_train_batch(self, local, module) < 0)
        return -1;
    /* a loss module's calls, or one under no_grad, never count */
    PyObject *batch_model = tp_slot_get(local, TS_BATCH_MODEL);
    int same = counted_here && batch_model != NULL && PyLong_CheckExact(batch_model) &&
               PyLong_AsVoidPtr(batch_model) == (void *)module &&
               !tp_truthy(tp_slot_get(local, TS_CLOSURE_AGAIN));
    if (PyErr_Occurred())
        return -1;
    return same ? count_batch(local, args, nargsf, kwnames) : 0;
}

/* forward.py's forward_begin(local, module, region, args, kwargs) where
 * device times per phase are off: the tracker told, then the training
 * call's work, then region. 0, or -1 with an exception set. */
static int forward_begin(TimedCall *self, PyObject *local, PyObject *module, PyObject *const *args,
                         size_t nargsf, PyObject *kwnames)
{
    PyObject *grad_obj = PyObject_CallNoArgs(cfg.grad_enabled);
    if (grad_obj == NULL)
        return -1;
    int grad = grad_obj == Py_True;
    Py_DECREF(grad_obj);
    int training = 0;
    if (grad) {
        PyObject *t = PyObject_GetAttr(module, str_training);
        training = t == NULL ? -1 : PyObject_IsTrue(t);
        Py_XDECREF(t);
        if (training < 0)
            return -1;
    }
    PyObject *tracker = tp_slot_get(local, TS_TRACKER);
    PyObject *told;
    if (grad) {
        tp_slot_set(local, TS_FORWARD_SEEN, Py_True);
        told = tp_tracker_forward(tracker, training);
    } else { /* an evaluation's call (no_grad, inference_mode): no training work */
        told = PyObject_VectorcallMethod(str_module_call, &tracker, 1, NULL);
    }
    if (told == NULL)
        return -1;
    int counted_here = told == Py_True; /* the model's calls count its batches */
    Py_DECREF(told);
    if (training && training_call(self, local, module, counted_here, args, nargsf, kwnames) < 0)
        return -1;
    tp_begin(self->region_id);
    return 0;
}

/* forward.py's finally: the call's region ended, its device time's end
 * event, a batch that waited for the call's end counted. The call's own
 * exception (result NULL) is kept: one raised here goes to
 * sys.unraisablehook instead of replacing it. */
static PyObject *forward_end(TimedCall *self, PyObject *local, PyObject *result)
{
    tp_kept_error raised;
    tp_error_keep(&raised);
    tp_slot_set(local, TS_DEPTH, zero);
    tp_end(self->region_id);
    PyObject *r = tp_py_device_end(local, self->region) == 0 ? Py_NewRef(Py_None) : NULL;
    if (r != NULL && tp_is_set(tp_slot_get(local, TS_PENDING))) {
        Py_DECREF(r);
        r = PyObject_CallNoArgs(cfg.flush_samples);
    }
    if (r == NULL && result == NULL) { /* the call's own exception goes on */
        PyErr_WriteUnraisable((PyObject *)self);
    } else if (r == NULL) {
        Py_CLEAR(result);
        tp_error_drop(&raised);
        return NULL;
    }
    Py_XDECREF(r);
    tp_error_restore(&raised);
    return result;
}

/* ---- the call ---------------------------------------------------------------------------- */

static PyObject *timed_call_own(PyObject *callable, PyObject *const *args, size_t nargsf,
                                PyObject *kwnames)
{
    TimedCall *self = (TimedCall *)callable;
    if (!cfg.fast || !tp_py_flag_known())
        return call_twin(self, args, nargsf, kwnames);
    PyObject *local = tp_py_thread_state();
    if (local == NULL)
        return PyErr_Occurred() ? NULL : call_twin(self, args, nargsf, kwnames);
    PyObject *module = PyObject_CallNoArgs(self->module);
    if (module == NULL || module == Py_None) { /* the twin says what is wrong */
        Py_DECREF(local);
        Py_XDECREF(module);
        PyErr_Clear();
        return call_twin(self, args, nargsf, kwnames);
    }
    PyObject *call =
        self->inner != Py_None ? Py_NewRef(self->inner) : PyObject_GetAttr(module, str_call_impl);
    PyObject *result = NULL;
    if (call == NULL)
        goto done;
    /* nested, or traced by torch.compile, or by torch.export's tracing */
    if (tp_truthy(tp_slot_get(local, TS_DEPTH)) || tp_py_traced(local)) {
        result = tp_call_out(call, args, nargsf, kwnames);
        goto done;
    }
    tp_slot_set(local, TS_DEPTH, one);
    if (forward_begin(self, local, module, args, nargsf, kwnames) == 0)
        result = tp_call_out(call, args, nargsf, kwnames);
    result = forward_end(self, local, result);
done:
    Py_XDECREF(call);
    Py_DECREF(module);
    Py_DECREF(local);
    return result;
}

static PyObject *timed_call_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                       PyObject *kwnames)
{
    return tp_as_own_work(timed_call_own, callable, args, nargsf, kwnames);
}

/* ---- the type ---------------------------------------------------------------------------- */

/* A module saved whole keeps no timed call: it pickles as None, and so
 * loads without trainprof. */
static PyObject *timed_call_reduce(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return Py_BuildValue("(O())", (PyObject *)Py_TYPE(Py_None));
}

static int timed_call_traverse(TimedCall *self, visitproc visit, void *arg)
{
    Py_VISIT(self->module);
    Py_VISIT(self->inner);
    Py_VISIT(self->compiled);
    Py_VISIT(self->region);
    Py_VISIT(self->param);
    return 0;
}

static int timed_call_clear(TimedCall *self)
{
    Py_CLEAR(self->module);
    Py_CLEAR(self->inner);
    Py_CLEAR(self->compiled);
    Py_CLEAR(self->region);
    Py_CLEAR(self->param);
    return 0;
}

static void timed_call_dealloc(TimedCall *self)
{
    PyObject_GC_UnTrack(self);
    if (self->weakrefs != NULL)
        PyObject_ClearWeakRefs((PyObject *)self);
    timed_call_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef timed_call_methods[] = {
    {"__reduce__", timed_call_reduce, METH_NOARGS, "Pickles as None."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef timed_call_members[] = {
    {"module", T_OBJECT, offsetof(TimedCall, module), READONLY, "A weak reference to the module."},
    {"inner", T_OBJECT, offsetof(TimedCall, inner), READONLY,
     "What Module.__call__ would have called instead of _call_impl, or None."},
    {"compiled", T_OBJECT, offsetof(TimedCall, compiled), READONLY,
     "True for the module torch.compile() returned."},
    {"region", T_OBJECT, offsetof(TimedCall, region), READONLY,
     "The region its outermost calls are timed as."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject TimedCallType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "trainprof._native.TimedCall",
    .tp_basicsize = sizeof(TimedCall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(TimedCall, vectorcall),
    .tp_weaklistoffset = offsetof(TimedCall, weakrefs),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = (traverseproc)timed_call_traverse,
    .tp_clear = (inquiry)timed_call_clear,
    .tp_dealloc = (destructor)timed_call_dealloc,
    .tp_methods = timed_call_methods,
    .tp_members = timed_call_members,
    .tp_doc = "A module's own timed call (trainprof.patches.forward).",
};

int tp_py_timed_call_ready(void)
{
    static const struct {
        PyObject **to;
        const char *s;
    } names[] = {
        {&str_call_impl, "_call_impl"},    {&str_training, "training"},
        {&str_module_call, "module_call"}, {&str_wants_model, "wants_model"},
        {&str_note_model, "note_model"},   {&str_parameters, "parameters"},
        {&str_is_cuda, "is_cuda"},         {&str_device, "device"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((*names[i].to = PyUnicode_InternFromString(names[i].s)) == NULL)
            return -1;
    if ((zero = PyLong_FromLong(0)) == NULL || (one = PyLong_FromLong(1)) == NULL)
        return -1;
    return PyType_Ready(&TimedCallType);
}

PyObject *tp_py_timed_call_type(void) { return Py_NewRef((PyObject *)&TimedCallType); }

PyObject *tp_py_timed_call_new(PyObject *module_ref, PyObject *inner, PyObject *compiled,
                               PyObject *region, uint32_t region_id)
{
    if (!cfg.ready) {
        PyErr_SetString(PyExc_RuntimeError, "TimedCall before _timed_call_setup()");
        return NULL;
    }
    if (!PyWeakref_CheckRef(module_ref) || (inner != Py_None && !PyCallable_Check(inner))) {
        PyErr_SetString(PyExc_TypeError, "TimedCall(module_ref, inner, compiled, region)");
        return NULL;
    }
    TimedCall *self = PyObject_GC_New(TimedCall, &TimedCallType);
    if (self == NULL)
        return NULL;
    self->module = Py_NewRef(module_ref);
    self->inner = Py_NewRef(inner);
    self->compiled = Py_NewRef(PyObject_IsTrue(compiled) > 0 ? Py_True : Py_False);
    self->region = Py_NewRef(region);
    self->param = NULL;
    self->weakrefs = NULL;
    self->region_id = region_id;
    self->vectorcall = timed_call_vectorcall;
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

/* A callable from parts (a new reference), or NULL with a TypeError. */
static PyObject *part(PyObject *parts, const char *key, int must_call)
{
    PyObject *v = PyDict_GetItemString(parts, key);
    if (v == NULL || (must_call && !PyCallable_Check(v))) {
        PyErr_Format(PyExc_TypeError, "_timed_call_setup: %s missing or wrong", key);
        return NULL;
    }
    return Py_NewRef(v);
}

PyObject *tp_py_timed_call_setup(PyObject *module, PyObject *parts)
{
    (void)module;
    if (cfg.ready) {
        PyErr_SetString(PyExc_RuntimeError, "_timed_call_setup: once per process");
        return NULL;
    }
    if (!PyDict_Check(parts)) {
        PyErr_SetString(PyExc_TypeError, "_timed_call_setup(parts: dict)");
        return NULL;
    }
    PyObject *facts = part(parts, "facts", 0), *train = part(parts, "train", 0),
             *train_id = part(parts, "train_id", 0), *times = part(parts, "device_times", 0);
    cfg.twin = part(parts, "call", 1);
    cfg.grad_enabled = part(parts, "grad_enabled", 1);
    cfg.count_samples = part(parts, "count_samples", 1);
    cfg.flush_samples = part(parts, "flush_samples", 1);
    cfg.device_begin = part(parts, "device_begin", 1);
    if (!facts || !train || !train_id || !times || !cfg.twin || !cfg.grad_enabled ||
        !cfg.count_samples || !cfg.flush_samples || !cfg.device_begin)
        goto fail;
    if (!PyModule_Check(facts) || !PyLong_Check(train_id)) {
        PyErr_SetString(PyExc_TypeError, "_timed_call_setup: facts or train_id");
        goto fail;
    }
    cfg.facts = Py_NewRef(PyModule_GetDict(facts));
    cfg.train = Py_NewRef(train);
    cfg.train_id = (uint32_t)PyLong_AsUnsignedLong(train_id);
    cfg.device_times = PyObject_IsTrue(times) > 0;
    if (PyErr_Occurred())
        goto fail;
    /* Dynamo and Python code see the twin as the type's __call__ */
    if (PyDict_SetItemString(TimedCallType.tp_dict, "__call__", cfg.twin) < 0)
        goto fail;
    PyType_Modified(&TimedCallType);
    Py_DECREF(facts);
    Py_DECREF(train);
    Py_DECREF(train_id);
    Py_DECREF(times);
    cfg.ready = 1;
    Py_RETURN_NONE;
fail:
    Py_XDECREF(facts);
    Py_XDECREF(train);
    Py_XDECREF(train_id);
    Py_XDECREF(times);
    Py_CLEAR(cfg.twin);
    Py_CLEAR(cfg.grad_enabled);
    Py_CLEAR(cfg.count_samples);
    Py_CLEAR(cfg.flush_samples);
    Py_CLEAR(cfg.device_begin);
    Py_CLEAR(cfg.facts);
    Py_CLEAR(cfg.train);
    return NULL;
}

PyObject *tp_py_timed_call_fast(PyObject *module, PyObject *on)
{
    (void)module;
    int yes = PyObject_IsTrue(on);
    if (yes < 0)
        return NULL;
    cfg.fast = yes && cfg.ready;
    return PyBool_FromLong(cfg.fast);
}
