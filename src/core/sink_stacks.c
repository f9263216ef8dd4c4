/* sink_stacks.c: the sink's sampled stacks: each sample's frames into the
 * stack tree, and each thread's run of like samples (core/stack_runs.h),
 * handed to the writer when it ends, at checkpoints and at the end. */
#include "core/sink_internal.h"

#include <pthread.h>

/* The node of frames[0..n) (innermost first) in the stack tree, defining
 * new nodes in the pending batch; 0 when memory ran out. */
static uint32_t stack_node(tp_sink *s, const uint32_t *frames, const int32_t *lines, size_t n)
{
    uint32_t node = 0;
    for (size_t i = n; i-- > 0;) {
        bool made, room;
        VEC_ROOM(s->pending.stack_nodes, room);
        uint32_t child =
            room ? tp_stack_table_node(&s->stacks, node, frames[i], lines[i], &made) : 0;
        if (!child)
            return 0;
        if (made)
            s->pending.stack_nodes.items[s->pending.stack_nodes.len++] =
                (tp_stack_node){child, node, frames[i], lines[i]};
        node = child;
    }
    return node;
}

/* Hands o's run to the writer (pending, under its row id) where it has
 * grown since it was last handed. */
static void hand_run(tp_sink *s, tp_stack_open_run *o)
{
    if (!tp_stack_run_grown(o))
        return;
    bool ok;
    VEC_ROOM(s->pending.stacks, ok);
    if (!ok) { /* the next hand-over tries again */
        s->lost[TP_LOST_OTHER]++;
        return;
    }
    s->pending.stacks.items[s->pending.stacks.len++] = o->run;
    tp_stack_run_handed(o);
}

/* A run that grew: handed again once a checkpoint's time has passed since
 * it last was (now_ns: since the anchor; the first sooner), so that a
 * recorder killed meanwhile, and a reader of the file while it is written,
 * miss at most that of it. */
static void checkpoint_run(tp_sink *s, tp_stack_open_run *o, uint64_t now_ns)
{
    uint64_t after =
        o->handed_count ? TP_STACK_RUN_CHECKPOINT_NS : TP_STACK_RUN_FIRST_CHECKPOINT_NS;
    if (now_ns >= o->handed_ns + after)
        hand_run(s, o);
}

void tp_sink_stack(tp_sink *s, uint32_t thread, uint64_t t_mono_ns, int32_t tid, uint32_t phase,
                   uint32_t state, const uint32_t *frames, const int32_t *lines, size_t n)
{
    tp_stack_sample x = {0, thread, tid, tp_sink_since_start(s, t_mono_ns), phase, state, 0, 1, 0};
    pthread_mutex_lock(&s->lock);
    if (x.t_ns > s->stacks_now_ns)
        s->stacks_now_ns = x.t_ns;
    tp_stack_open_run *o = thread ? tp_stack_runs_find(&s->runs, thread, tid) : NULL;
    if (!thread || (n && !(x.node = stack_node(s, frames, lines, n)))) {
        s->lost[TP_LOST_EVENTS]++;
    } else if (o && o->run.phase == x.phase && o->run.state == x.state && o->run.node == x.node &&
               x.t_ns >= o->run.t_ns && o->run.count < UINT32_MAX) {
        o->run.count++;
        o->run.span_ns = x.t_ns - o->run.t_ns;
        checkpoint_run(s, o, x.t_ns);
    } else {
        if (o) /* its run ended */
            hand_run(s, o);
        if (!(o = tp_stack_runs_open(&s->runs, &x))) { /* a row of its own, unjoined */
            x.row = ++s->runs.next_row;
            VEC_PUSH(s, s->pending.stacks, x, TP_LOST_EVENTS);
        }
    }
    pthread_mutex_unlock(&s->lock);
}

void tp_sink_stack_repeat(tp_sink *s, uint32_t thread, uint64_t t_mono_ns, int32_t tid,
                          uint32_t count)
{
    uint64_t t = tp_sink_since_start(s, t_mono_ns);
    pthread_mutex_lock(&s->lock);
    if (t > s->stacks_now_ns)
        s->stacks_now_ns = t;
    tp_stack_open_run *o = thread ? tp_stack_runs_find(&s->runs, thread, tid) : NULL;
    if (!o || t < o->run.t_ns) {
        s->lost[TP_LOST_EVENTS] += count;
    } else {
        o->run.count = count > UINT32_MAX - o->run.count ? UINT32_MAX : o->run.count + count;
        if (t - o->run.t_ns > o->run.span_ns)
            o->run.span_ns = t - o->run.t_ns;
        checkpoint_run(s, o, t);
    }
    pthread_mutex_unlock(&s->lock);
}

/* Every open run that grew and was last handed a checkpoint's time ago, by
 * the runs' clock (a thread gone quiet, or gone, sends nothing more to hand
 * it on), or, at the end, every one that grew. */
void tp_sink_hand_open_runs(tp_sink *s, bool all)
{
    uint64_t now = s->stacks_now_ns;
    for (size_t i = 0; i < s->runs.cap; i++)
        if (s->runs.slots[i].key) {
            if (all)
                hand_run(s, &s->runs.slots[i]);
            else
                checkpoint_run(s, &s->runs.slots[i], now);
        }
}
