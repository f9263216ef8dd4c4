/* _native.c: the CPython face of libtrainprof: the module, its marks
 * (steps, epochs, samples, spans, facts), capture windows' requests, and the
 * constructors of the hot paths' C objects (the Region type: _region.c). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdbool.h>

#include "_batch_samples.h"
#include "_per_thread.h"
#include "_region.h"
#include "_stack_sampler.h"
#include "_step_marks.h"
#include "_loader_next.h"
#include "_step_hooks.h"
#include "_thread_state.h"
#include "_timed_backward.h"
#include "_timed_call.h"
#include "_timed_method.h"
#include "_tracker_events.h"
#include "facts.h"
#include "ops_window.h"
#include "trainprof.h"

/* timed_method(method, region): method (a tensor method) timed as region
 * where the tensor is on a device (_timed_method.c). */
static PyObject *py_timed_method(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    uint32_t id;
    if (nargs != 2 || !tp_py_region_id(args[1], &id)) {
        PyErr_SetString(PyExc_TypeError, "timed_method(method, region)");
        return NULL;
    }
    return tp_py_timed_method_new(args[0], id);
}

/* TimedCall(module_ref, inner, compiled, region): a module's timed call
 * (_timed_call.c). */
static PyObject *py_timed_call(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    uint32_t id;
    if (nargs != 4 || !tp_py_region_id(args[3], &id)) {
        PyErr_SetString(PyExc_TypeError, "timed_call(module_ref, inner, compiled, region)");
        return NULL;
    }
    return tp_py_timed_call_new(args[0], args[1], args[2], args[3], id);
}

/* to_filter(to, moves, dtype type): Tensor.to in front of its Python
 * wrapper, in C where nothing moves to a device (_timed_method.c). */
static PyObject *py_to_filter(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "to_filter(to, moves, dtype type)");
        return NULL;
    }
    return tp_py_to_filter_new(args[0], args[1], args[2]);
}

/* Parses (region, a, b) with a and b unsigned nanosecond counts; false with
 * a TypeError naming `usage` (or the integer's error) otherwise. */
static bool region_and_two_ns(PyObject *const *args, Py_ssize_t nargs, const char *usage,
                              uint32_t *id, unsigned long long *a, unsigned long long *b)
{
    if (nargs != 3 || !tp_py_region_id(args[0], id)) {
        PyErr_SetString(PyExc_TypeError, usage);
        return false;
    }
    *a = PyLong_AsUnsignedLongLong(args[1]);
    if (*a == (unsigned long long)-1 && PyErr_Occurred())
        return false;
    *b = PyLong_AsUnsignedLongLong(args[2]);
    return !(*b == (unsigned long long)-1 && PyErr_Occurred());
}

/* span(region, start_ns, end_ns): a region that already happened, with times
 * from now_ns(). */
static PyObject *py_span(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    uint32_t id;
    unsigned long long start, end;
    if (!region_and_two_ns(args, nargs, "span() takes a trainprof.Region, start_ns and end_ns", &id,
                           &start, &end))
        return NULL;
    tp_span(id, start, end);
    Py_RETURN_NONE;
}

/* device_time(region, host_start_ns, device_ns): the device time of the
 * region begun at host_start_ns (from now_ns()) on this thread. */
static PyObject *py_device_time(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    uint32_t id;
    unsigned long long start, device;
    if (!region_and_two_ns(args, nargs,
                           "device_time() takes a trainprof.Region, host_start_ns and device_ns",
                           &id, &start, &device))
        return NULL;
    tp_device_time(id, start, device);
    Py_RETURN_NONE;
}

static PyObject *py_now_ns(PyObject *module, PyObject *unused)
{
    (void)module, (void)unused;
    return PyLong_FromUnsignedLongLong(tp_clock_now_ns());
}

static PyObject *py_step_end_at(PyObject *module, PyObject *arg)
{
    (void)module;
    return tp_py_pass_u64(arg, tp_step_end_at);
}

static PyObject *py_epoch(PyObject *module, PyObject *arg)
{
    (void)module;
    long long n = PyLong_AsLongLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    tp_epoch(n);
    Py_RETURN_NONE;
}

static PyObject *py_epoch_at(PyObject *module, PyObject *args)
{
    (void)module;
    long long n;
    unsigned long long t_ns;
    if (!PyArg_ParseTuple(args, "LK", &n, &t_ns))
        return NULL;
    tp_epoch_at(n, t_ns);
    Py_RETURN_NONE;
}

static PyObject *py_samples(PyObject *module, PyObject *arg)
{
    (void)module;
    long long n = PyLong_AsLongLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    tp_samples(n);
    Py_RETURN_NONE;
}

/* device_memory(allocated, reserved, peak_allocated, peak_reserved,
 * capacity, alloc_retries, ooms): the GPU memory allocator's figures now
 * (trainprof.h's TP_DEVMEM_*, in that order); a negative one is unknown. */
static PyObject *py_device_memory(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != TP_DEVMEM_FIGURES) {
        PyErr_Format(PyExc_TypeError, "device_memory() takes %d figures", TP_DEVMEM_FIGURES);
        return NULL;
    }
    int64_t figures[TP_DEVMEM_FIGURES];
    for (Py_ssize_t k = 0; k < nargs; k++) {
        long long v = PyLong_AsLongLong(args[k]);
        if (v == -1 && PyErr_Occurred())
            return NULL;
        figures[k] = v;
    }
    tp_device_memory(figures);
    Py_RETURN_NONE;
}

/* set_rank(rank, local_rank, world_size): this process's; -1 for the local
 * rank or world size takes the environment's (see tp_set_rank). */
static PyObject *py_set_rank(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    long v[3];
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "set_rank() takes rank, local_rank and world_size");
        return NULL;
    }
    for (int i = 0; i < 3; i++) {
        v[i] = PyLong_AsLong(args[i]);
        if (v[i] == -1 && PyErr_Occurred())
            return NULL;
        if (v[i] < -1 || v[i] > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "set_rank() takes numbers from -1 to 2**31-1");
            return NULL;
        }
    }
    tp_set_rank((int32_t)v[0], (int32_t)v[1], (int32_t)v[2]);
    Py_RETURN_NONE;
}

static PyObject *py_set_thread_name(PyObject *module, PyObject *name)
{
    (void)module;
    const char *text = PyUnicode_AsUTF8(name);
    if (!text)
        return NULL;
    tp_set_thread_name(text);
    Py_RETURN_NONE;
}

static PyObject *py_active(PyObject *module, PyObject *unused)
{
    (void)module, (void)unused;
    return PyBool_FromLong(tp_active());
}

/* fact("key=value"): what the script does, for the advice (lib/facts.h);
 * True when it reached the recorder. ValueError for a malformed fact. */
static PyObject *py_fact(PyObject *module, PyObject *arg)
{
    (void)module;
    Py_ssize_t len;
    const char *text = PyUnicode_AsUTF8AndSize(arg, &len);
    if (!text)
        return NULL;
    size_t key_len;
    if (!tp_fact_valid(text, (size_t)len, &key_len)) {
        PyErr_SetString(PyExc_ValueError, "fact: \"key=value\", key of [a-z0-9_.], value printable "
                                          "ASCII, at most 256 bytes");
        return NULL;
    }
    if (!tp_fact_key_known(text, key_len)) { /* a rename on one side only: loud in the tests */
        char why[TP_FACT_KEY_MAX + 64];
        snprintf(why, sizeof why, "fact: %.*s is not a key of lib/facts.h's catalogue",
                 (int)key_len, text);
        PyErr_SetString(PyExc_KeyError, why);
        return NULL;
    }
    return PyBool_FromLong(tp_fact_send(text, (size_t)len));
}

static PyObject *py_dropped(PyObject *module, PyObject *unused)
{
    (void)module, (void)unused;
    return PyLong_FromUnsignedLongLong(tp_dropped());
}

static PyMethodDef module_methods[] = {
    {"region", tp_py_region, METH_O, "region(name): a named region (context manager, decorator)."},
    {"begin", tp_py_begin, METH_O, "begin(region): opens a region without `with`."},
    {"end", tp_py_end, METH_O, "end(region): closes a region opened with begin()."},
    {"span", (PyCFunction)(void (*)(void))py_span, METH_FASTCALL,
     "span(region, start_ns, end_ns): a region that already happened."},
    {"device_time", (PyCFunction)(void (*)(void))py_device_time, METH_FASTCALL,
     "device_time(region, host_start_ns, device_ns): a region's device (GPU) time."},
    {"now_ns", py_now_ns, METH_NOARGS, "The recorder's clock (CLOCK_MONOTONIC) in ns."},
    {"step", tp_py_step, METH_NOARGS, "Marks a step boundary."},
    {"step_at", tp_py_step_at, METH_O, "step_at(t_ns): a step boundary at an earlier now_ns()."},
    {"step_end_at", py_step_end_at, METH_O,
     "step_end_at(t_ns): the open step ended at an earlier now_ns(); none begins."},
    {"epoch", py_epoch, METH_O, "epoch(n): marks the start of epoch n."},
    {"epoch_at", py_epoch_at, METH_VARARGS,
     "epoch_at(n, t_ns): epoch n began at an earlier now_ns()."},
    {"samples", py_samples, METH_O,
     "samples(n): a batch of n samples was fetched for the current step."},
    {"device_memory", (PyCFunction)(void (*)(void))py_device_memory, METH_FASTCALL,
     "device_memory(allocated, reserved, peak_allocated, peak_reserved, capacity, "
     "alloc_retries, ooms): the GPU memory allocator's figures now (-1: unknown)."},
    {"set_thread_name", py_set_thread_name, METH_O, "Names this thread in the recording."},
    {"set_rank", (PyCFunction)(void (*)(void))py_set_rank, METH_FASTCALL,
     "set_rank(rank, local_rank, world_size): this process's (-1: the environment's)."},
    {"active", py_active, METH_NOARGS, "True when this thread's events reach a recorder."},
    {"fact", py_fact, METH_O,
     "fact('key=value'): what the script does, for the advice (ValueError: malformed; KeyError: a "
     "key not in lib/facts.h)."},
    {"dropped", py_dropped, METH_NOARGS, "Events this thread dropped on a full buffer."},
    {"timed_method", (PyCFunction)(void (*)(void))py_timed_method, METH_FASTCALL,
     "timed_method(method, region): a tensor method timed where the tensor is on a device."},
    {"to_filter", (PyCFunction)(void (*)(void))py_to_filter, METH_FASTCALL,
     "to_filter(to, moves, dtype type): Tensor.to, straight where nothing moves to a device."},
    {"timed_call", (PyCFunction)(void (*)(void))py_timed_call, METH_FASTCALL,
     "timed_call(module_ref, inner, compiled, region): a module's timed call."},
    {"_region_id", tp_py_region_id_of, METH_O, NULL},
    {"_timed_call_setup", tp_py_timed_call_setup, METH_O, NULL},
    {"_thread_state_setup", tp_py_thread_state_setup, METH_O, NULL},
    {"_twins_only", tp_py_twins_only, METH_O, NULL},
    {"_tracker_setup", (PyCFunction)(void (*)(void))tp_py_tracker_setup, METH_FASTCALL, NULL},
    {"_batch_samples_setup", (PyCFunction)(void (*)(void))tp_py_batch_samples_setup, METH_FASTCALL,
     NULL},
    {"_compiling_flag", tp_py_set_compiling_flag, METH_O, NULL},
    {"_device_end", tp_py_set_device_end, METH_O, NULL},
    {"timed_backward", (PyCFunction)(void (*)(void))tp_py_timed_backward_new, METH_FASTCALL,
     "timed_backward(orig, twin, parts): Tensor.backward timed, in C where it can."},
    {"_step_hooks_setup", tp_py_step_hooks_setup, METH_O, NULL},
    {"_loader_next_setup", tp_py_loader_next_setup, METH_O, NULL},
    {"handing_out", (PyCFunction)(void (*)(void))tp_py_handing_out_new, METH_FASTCALL,
     "handing_out(orig_next, twin): a DataLoader iterator's __next__, in C where it can."},
    {"step_hook", (PyCFunction)(void (*)(void))tp_py_step_hook_new, METH_FASTCALL,
     "step_hook(hook, kind): an optimizer step hook ('pre' or 'post') taken in C."},
    {"_timed_call_fast", tp_py_timed_call_fast, METH_O, NULL},
    {"per_thread", tp_py_per_thread, METH_O,
     "per_thread(cls): this thread's instance of cls (made by cls() on first use)."},
    {"_set_decorator_factory", tp_py_set_decorator_factory, METH_O, NULL},
    {"_ops_hook", tp_py_ops_hook, METH_O, NULL},
    {"_ops_wait", tp_py_ops_wait, METH_O, NULL},
    {"_ops_request", tp_py_ops_request, METH_NOARGS, NULL},
    {"_ops_send", tp_py_ops_send, METH_O, NULL},
    {"_ops_begun", tp_py_ops_begun, METH_O, NULL},
    {"_steps_marked", tp_py_steps_marked, METH_NOARGS, NULL},
    {"_stack_snapshot", tp_py_stack_snapshot, METH_NOARGS, NULL},
    {"_start_stacks", tp_py_start_stacks, METH_O, NULL},
    {"_stop_stacks", tp_py_stop_stacks, METH_NOARGS, NULL},
    {"_stack_sampler_counts", tp_py_stack_sampler_counts, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "trainprof._native",
    .m_doc = "libtrainprof for Python: regions, steps and epochs.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__native(void)
{
    if (tp_py_region_ready() < 0 || tp_py_timed_method_ready() < 0 ||
        tp_py_timed_call_ready() < 0 || tp_py_step_hooks_ready() < 0 ||
        tp_py_loader_next_ready() < 0 || tp_py_timed_backward_ready() < 0)
        return NULL;
    PyObject *m = PyModule_Create(&native_module);
    if (!m)
        return NULL;
    if (PyModule_AddObject(m, "Region", tp_py_region_type()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddObject(m, "TimedCall", tp_py_timed_call_type()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    /* the standard phases' names (trainprof.h), for the torch face */
    static const struct {
        const char *attr, *value;
    } phases[] = {
        {"PHASE_DATALOADER_NEXT", TP_PHASE_DATALOADER_NEXT},
        {"PHASE_TO_DEVICE", TP_PHASE_TO_DEVICE},
        {"PHASE_TRAIN_BATCH", TP_PHASE_TRAIN_BATCH},
        {"PHASE_FORWARD", TP_PHASE_FORWARD},
        {"PHASE_LOSS", TP_PHASE_LOSS},
        {"PHASE_BACKWARD", TP_PHASE_BACKWARD},
        {"PHASE_OPTIMIZER_STEP", TP_PHASE_OPTIMIZER_STEP},
        {"PHASE_STEP_LR_SCHEDULERS", TP_PHASE_STEP_LR_SCHEDULERS},
        {"PHASE_FROM_DEVICE", TP_PHASE_FROM_DEVICE},
        {"PHASE_REDUCE_METRICS", TP_PHASE_REDUCE_METRICS},
        {"PHASE_EVALUATE", TP_PHASE_EVALUATE},
        {"PHASE_SANITY_CHECK", TP_PHASE_SANITY_CHECK},
        {"PHASE_CHECKPOINT", TP_PHASE_CHECKPOINT},
        {"PHASE_COMPILE", TP_PHASE_COMPILE},
    };
    for (size_t i = 0; i < sizeof phases / sizeof phases[0]; i++)
        if (PyModule_AddStringConstant(m, phases[i].attr, phases[i].value) < 0) {
            Py_DECREF(m);
            return NULL;
        }
    return m;
}
