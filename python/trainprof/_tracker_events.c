/* _tracker_events.c: the step tracker's events from the C paths
 * (_loader_next.c, _timed_call.c, _timed_backward.c, _step_hooks.c).
 *
 * A training step tells the tracker six times (fetch, fetched, a forward
 * for the model and one for its loss, backward, optimizer_begins, update):
 * a Python method call each, ~1,000 instructions of a step's ~45,000 over
 * bare on the CPU stand-in (issue 56). In a loop's steady state each does a
 * few assignments; here they are done on the tracker's and the loop's
 * slots, by offset, as trainprof.steps.tracker does them, and everything
 * else (a pass's first fetches, held marks, pauses, evaluations, undecided
 * fetches, a framework's steps, an epoch's last batch, another optimizer's
 * updates where the updates mark the steps) goes to the Python method,
 * which stays the definition:
 * each test here names the state in which that method does no more than
 * what follows it. tests/py/test_c_paths.py holds the two to the same
 * marks. */
#include "_tracker_events.h"

#include "_step_marks.h"
#include "_thread_state.h"
#include "trainprof.h"

/* The tracker's and the loop's slots the events use. */
enum {
    TR_SINK,
    TR_LOOP,
    TR_FETCHED_ONLY,
    TR_UPDATED,
    TR_AFTER_UPDATE,
    TR_OUT_OF_STEP,
    TR_REOPEN_AT,
    TR_EVAL_FROM,
    TR_OPEN_PENDING,
    TR_UNDECIDED,
    TR_LAST_BATCH,
    TR_STEP_CLOSED,
    TR_EVAL_SINCE,
    TR_PENDING_EPOCH,
    TR_HELD,
    TR_UPDATE_NS,
    TR_COUNT
};
static const char *const tracker_slots[TR_COUNT] = {
    [TR_SINK] = "sink",
    [TR_LOOP] = "loop",
    [TR_FETCHED_ONLY] = "fetched_only",
    [TR_UPDATED] = "updated",
    [TR_AFTER_UPDATE] = "after_update",
    [TR_OUT_OF_STEP] = "out_of_step",
    [TR_REOPEN_AT] = "reopen_at",
    [TR_EVAL_FROM] = "eval_from",
    [TR_OPEN_PENDING] = "open_pending",
    [TR_UNDECIDED] = "undecided",
    [TR_LAST_BATCH] = "last_batch",
    [TR_STEP_CLOSED] = "step_closed",
    [TR_EVAL_SINCE] = "eval_since",
    [TR_PENDING_EPOCH] = "pending_epoch",
    [TR_HELD] = "held",
    [TR_UPDATE_NS] = "update_ns",
};
enum {
    LP_MAIN_LOADER,
    LP_STEP_OPTIMIZER,
    LP_FIRST_WORK_NS,
    LP_WORK_BETWEEN_FETCHES,
    LP_UPDATES_BETWEEN_FETCHES,
    LP_UPDATES,
    LP_BACKWARDS,
    LP_FETCHER,
    LP_COUNT
};
static const char *const loop_slots[LP_COUNT] = {
    [LP_MAIN_LOADER] = "main_loader",
    [LP_STEP_OPTIMIZER] = "step_optimizer",
    [LP_FIRST_WORK_NS] = "first_work_ns",
    [LP_WORK_BETWEEN_FETCHES] = "work_between_fetches",
    [LP_UPDATES_BETWEEN_FETCHES] = "updates_between_fetches",
    [LP_UPDATES] = "updates",
    [LP_BACKWARDS] = "backwards",
    [LP_FETCHER] = "fetcher",
};
enum { SO_REF, SO_OTHERS, SO_COUNT };
static const char *const stepping_slots[SO_COUNT] = {
    [SO_REF] = "ref",
    [SO_OTHERS] = "others",
};

static struct {
    PyTypeObject *tracker_type, *loop_type, *stepping_type; /* strong; NULL until setup */
    PyObject *sink;     /* strong: the sink whose marks C makes */
    PyObject *switches; /* strong: steps.state's dict */
    PyObject *memory;   /* strong: runtime.device_memory's dict */
    Py_ssize_t tracker_at[TR_COUNT], loop_at[LP_COUNT], stepping_at[SO_COUNT];
} cfg;

static PyObject *str_fetch, *str_fetched, *str_forward, *str_update, *str_fetched_only,
    *str_manual_steps, *str_on, *str_after_step, *one;

static inline PyObject **tracker_slot(PyObject *tracker, int slot)
{
    return (PyObject **)((char *)tracker + cfg.tracker_at[slot]);
}

static inline PyObject **loop_slot(PyObject *loop, int slot)
{
    return (PyObject **)((char *)loop + cfg.loop_at[slot]);
}

static inline PyObject **stepping_slot(PyObject *stepping, int slot)
{
    return (PyObject **)((char *)stepping + cfg.stepping_at[slot]);
}

/* Whether a slot holds None (an unset one does not: the method then says
 * why). */
static inline int none(PyObject **at) { return *at == Py_None; }

/* Whether a slot holds False (or another false value a method would take so). */
static inline int false_(PyObject **at) { return *at != NULL && !tp_truthy(*at); }

/* The tracker's loop where the C events may take it: the tracker of the
 * set-up class with the set-up sink, its loop of the set-up class; else
 * NULL (borrowed). */
static PyObject *steady_loop(PyObject *tracker)
{
    if (cfg.tracker_type == NULL || Py_TYPE(tracker) != cfg.tracker_type ||
        *tracker_slot(tracker, TR_SINK) != cfg.sink || !none(tracker_slot(tracker, TR_HELD)))
        return NULL;
    PyObject *loop = *tracker_slot(tracker, TR_LOOP);
    return loop != NULL && Py_TYPE(loop) == cfg.loop_type ? loop : NULL;
}

/* steps.state's manual_steps: 1 where set (a framework's or the script's
 * steps), 0, or -1 where it can't be read (the method then reads it). */
static int manual_steps(void)
{
    PyObject *v = PyDict_GetItemWithError(cfg.switches, str_manual_steps); /* borrowed */
    if (v == NULL) {
        PyErr_Clear();
        return -1;
    }
    return tp_truthy(v);
}

/* After a step mark, the GPU memory reading when due (marks.step's). */
static int after_mark(void)
{
    PyObject *on = PyDict_GetItemWithError(cfg.memory, str_on); /* borrowed */
    if (on == NULL && PyErr_Occurred())
        return -1;
    if (!tp_truthy(on))
        return 0;
    PyObject *after = PyDict_GetItemWithError(cfg.memory, str_after_step);
    if (after == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_AttributeError, "device_memory.after_step");
        return -1;
    }
    PyObject *r = PyObject_CallNoArgs(after);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* marks.step(): _native's step mark, then the GPU memory reading when due. */
static int mark_step(void)
{
    tp_py_mark_step();
    return after_mark();
}

/* slot += 1 (a Python int's addition, as the method's). */
static int count_one(PyObject **at)
{
    if (*at == NULL) {
        PyErr_SetString(PyExc_AttributeError, "a count the tracker never set");
        return -1;
    }
    PyObject *n = PyNumber_Add(*at, one);
    if (n == NULL)
        return -1;
    PyObject *old = *at;
    *at = n;
    Py_DECREF(old);
    return 0;
}

static int call_method(PyObject *tracker, PyObject *name, PyObject *arg)
{
    PyObject *call[2] = {tracker, arg};
    PyObject *r = PyObject_VectorcallMethod(name, call, arg ? 2 : 1, NULL);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

PyObject *tp_tracker_fetch(PyObject *tracker)
{
    PyObject *loop = steady_loop(tracker);
    /* the step's update came, after work since the last fetch: the step
     * ends and the next begins here (fetch()'s "if self.updated" end) */
    if (loop == NULL || *tracker_slot(tracker, TR_FETCHED_ONLY) != Py_False ||
        *tracker_slot(tracker, TR_UPDATED) != Py_True ||
        !none(tracker_slot(tracker, TR_UNDECIDED)) || !none(tracker_slot(tracker, TR_EVAL_FROM)) ||
        !false_(tracker_slot(tracker, TR_STEP_CLOSED)) || manual_steps() != 0)
        return PyObject_VectorcallMethod(str_fetch, &tracker, 1, NULL);
    tp_word_set(loop_slot(loop, LP_WORK_BETWEEN_FETCHES), Py_True);
    tp_word_set(tracker_slot(tracker, TR_FETCHED_ONLY), Py_True);
    tp_word_set(tracker_slot(tracker, TR_EVAL_SINCE), Py_None);
    tp_word_set(tracker_slot(tracker, TR_LAST_BATCH), Py_False);
    tp_word_set(tracker_slot(tracker, TR_AFTER_UPDATE), Py_False);
    tp_word_set(tracker_slot(tracker, TR_OUT_OF_STEP), Py_False);
    tp_word_set(tracker_slot(tracker, TR_REOPEN_AT), Py_None);
    tp_word_set(loop_slot(loop, LP_UPDATES_BETWEEN_FETCHES), Py_True);
    tp_word_set(tracker_slot(tracker, TR_UPDATED), Py_False); /* _step() */
    if (mark_step() < 0)
        return NULL;
    Py_RETURN_TRUE;
}

int tp_tracker_fetched(PyObject *tracker, int last)
{
    int manual = last ? manual_steps() : 0;
    if (steady_loop(tracker) == NULL || manual < 0)
        return call_method(tracker, str_fetched, last ? Py_True : Py_False);
    tp_word_set(tracker_slot(tracker, TR_LAST_BATCH), last && !manual ? Py_True : Py_False);
    return 0;
}

/* What _work_marks would do, called by forward() or backward(): NOTHING
 * (no pending step, no pause's end, no pass still to be shown one), OPEN
 * (only the step an update left pending opens, at *t: where the updates
 * mark the steps, the step's first training work), or METHOD (the rest). */
enum { NOTHING, OPEN, METHOD };
static int work_marks(PyObject *tracker, uint64_t *t)
{
    PyObject *pending = *tracker_slot(tracker, TR_OPEN_PENDING);
    if (!false_(tracker_slot(tracker, TR_OUT_OF_STEP)) ||
        !none(tracker_slot(tracker, TR_PENDING_EPOCH)) || pending == NULL)
        return METHOD;
    if (pending == Py_None)
        return NOTHING;
    if (!PyLong_CheckExact(pending))
        return METHOD;
    *t = PyLong_AsUnsignedLongLong(pending);
    if (*t == (uint64_t)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return METHOD;
    }
    return OPEN;
}

/* _open_pending_step(): the pending step begins at t (_step(t)). 0, or -1
 * with an exception set (the memory reading's). */
static int open_pending_step(PyObject *tracker, uint64_t t)
{
    tp_word_set(tracker_slot(tracker, TR_OPEN_PENDING), Py_None);
    tp_word_set(tracker_slot(tracker, TR_UPDATED), Py_False);
    tp_py_mark_step_at(t);
    return after_mark();
}

PyObject *tp_tracker_forward(PyObject *tracker, int training)
{
    PyObject *loop = steady_loop(tracker);
    int manual = manual_steps();
    uint64_t t = 0;
    int marks = loop == NULL ? METHOD : work_marks(tracker, &t);
    if (marks == METHOD || manual < 0 || (training && none(loop_slot(loop, LP_FIRST_WORK_NS))))
        return PyObject_VectorcallMethod(
            str_forward, (PyObject *[]){tracker, training ? Py_True : Py_False}, 2, NULL);
    tp_word_set(tracker_slot(tracker, TR_FETCHED_ONLY), Py_False);
    tp_word_set(tracker_slot(tracker, TR_AFTER_UPDATE), Py_False);
    if (marks == OPEN && open_pending_step(tracker, t) < 0)
        return NULL;
    if (!training)
        Py_RETURN_FALSE;
    tp_word_set(tracker_slot(tracker, TR_EVAL_SINCE), Py_None);
    return PyBool_FromLong(none(loop_slot(loop, LP_MAIN_LOADER)) && !manual);
}

int tp_tracker_work(PyObject *tracker, PyObject *name)
{
    PyObject *loop = steady_loop(tracker);
    uint64_t t = 0;
    int marks = loop == NULL ? METHOD : work_marks(tracker, &t);
    if (marks == METHOD)
        return call_method(tracker, name, NULL);
    if (count_one(loop_slot(loop, LP_BACKWARDS)) < 0)
        return -1;
    tp_word_set(tracker_slot(tracker, TR_FETCHED_ONLY), Py_False);
    tp_word_set(tracker_slot(tracker, TR_AFTER_UPDATE), Py_False);
    if (marks == OPEN && open_pending_step(tracker, t) < 0)
        return -1;
    tp_word_set(tracker_slot(tracker, TR_EVAL_SINCE), Py_None);
    return 0;
}

/* Whether optimizer is the step optimizer of loop (the one whose updates
 * end the steps where no DataLoader marks them: steps.step_optimizer), with
 * no other's update since its last: 1, 0 (or where it can't be told: the
 * method then tells), or -1 with an exception set. */
static int steps_end_alone(PyObject *loop, PyObject *optimizer)
{
    PyObject *stepping = *loop_slot(loop, LP_STEP_OPTIMIZER);
    if (stepping == NULL || Py_TYPE(stepping) != cfg.stepping_type ||
        !false_(stepping_slot(stepping, SO_OTHERS)))
        return 0;
    PyObject *ref = *stepping_slot(stepping, SO_REF);
    if (ref == NULL || !PyWeakref_CheckRef(ref))
        return 0;
    PyObject *owner = PyObject_CallNoArgs(ref);
    if (owner == NULL)
        return -1;
    Py_DECREF(owner); /* only its identity is asked */
    return owner == optimizer;
}

/* update() where the updates mark the steps: the step optimizer's update
 * ends the step, and the next opens with the next training work (1 ns on).
 * The updated and after_update the method sets first are set and, for the
 * former, cleared again: only after_update stays. */
static int update_ends_step(PyObject *tracker, PyObject *loop)
{
    if (count_one(loop_slot(loop, LP_UPDATES)) < 0)
        return -1;
    uint64_t t = tp_clock_now_ns();
    PyObject *next = PyLong_FromUnsignedLongLong(t + 1);
    if (next == NULL)
        return -1;
    tp_word_set(tracker_slot(tracker, TR_AFTER_UPDATE), Py_True);
    tp_step_end_at(t);
    tp_word_set(tracker_slot(tracker, TR_OPEN_PENDING), next);
    Py_DECREF(next);
    tp_word_set(tracker_slot(tracker, TR_UPDATED), Py_False);
    return 0;
}

int tp_tracker_update(PyObject *tracker, PyObject *optimizer)
{
    PyObject *loop = steady_loop(tracker);
    if (loop == NULL || !false_(tracker_slot(tracker, TR_LAST_BATCH)) ||
        !none(tracker_slot(tracker, TR_UNDECIDED)))
        return call_method(tracker, str_update, optimizer);
    if (none(loop_slot(loop, LP_MAIN_LOADER))) {
        /* the updates mark the steps: the step optimizer's, no other's
         * since, with neither the script's nor a framework's steps */
        int alone = manual_steps() == 0 ? steps_end_alone(loop, optimizer) : 0;
        if (alone < 0)
            return -1;
        return alone ? update_ends_step(tracker, loop)
                     : call_method(tracker, str_update, optimizer);
    }
    /* the training loader marks the steps, fetched on this thread; not its
     * last batch's update, nor one that settles undecided fetches */
    if (*loop_slot(loop, LP_FETCHER) != tracker)
        return call_method(tracker, str_update, optimizer);
    PyObject *now = PyLong_FromUnsignedLongLong(tp_clock_now_ns());
    if (now == NULL || count_one(loop_slot(loop, LP_UPDATES)) < 0) {
        Py_XDECREF(now);
        return -1;
    }
    tp_word_set(tracker_slot(tracker, TR_UPDATED), Py_True);
    tp_word_set(tracker_slot(tracker, TR_AFTER_UPDATE), Py_True);
    tp_word_set(tracker_slot(tracker, TR_UPDATE_NS), now);
    Py_DECREF(now);
    return 0;
}

PyObject *tp_tracker_fetched_only(PyObject *tracker)
{
    if (cfg.tracker_type != NULL && Py_TYPE(tracker) == cfg.tracker_type) {
        PyObject *v = *tracker_slot(tracker, TR_FETCHED_ONLY);
        if (v != NULL)
            return Py_NewRef(v);
    }
    return PyObject_GetAttr(tracker, str_fetched_only);
}

static int intern_all(void)
{
    struct {
        PyObject **at;
        const char *text;
    } names[] = {
        {&str_fetch, "fetch"},
        {&str_fetched, "fetched"},
        {&str_forward, "forward"},
        {&str_update, "update"},
        {&str_fetched_only, "fetched_only"},
        {&str_manual_steps, "manual_steps"},
        {&str_on, "on"},
        {&str_after_step, "after_step"},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if ((*names[i].at = PyUnicode_InternFromString(names[i].text)) == NULL)
            return -1;
    return (one = PyLong_FromLong(1)) == NULL ? -1 : 0;
}

PyObject *tp_py_tracker_setup(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (cfg.tracker_type != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_tracker_setup: once per process");
        return NULL;
    }
    if (nargs != 6 || !PyModule_Check(args[4]) || !PyModule_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError,
                        "_tracker_setup(StepTracker, Loop, StepOptimizer, sink, switches, memory)");
        return NULL;
    }
    if (tp_slot_offsets(args[0], tracker_slots, TR_COUNT, cfg.tracker_at, "_tracker_setup") < 0 ||
        tp_slot_offsets(args[1], loop_slots, LP_COUNT, cfg.loop_at, "_tracker_setup") < 0 ||
        tp_slot_offsets(args[2], stepping_slots, SO_COUNT, cfg.stepping_at, "_tracker_setup") < 0 ||
        intern_all() < 0)
        return NULL;
    cfg.sink = Py_NewRef(args[3]);
    cfg.switches = Py_NewRef(PyModule_GetDict(args[4]));
    cfg.memory = Py_NewRef(PyModule_GetDict(args[5]));
    cfg.stepping_type = (PyTypeObject *)Py_NewRef(args[2]);
    cfg.loop_type = (PyTypeObject *)Py_NewRef(args[1]);
    cfg.tracker_type = (PyTypeObject *)Py_NewRef(args[0]);
    Py_RETURN_NONE;
}
