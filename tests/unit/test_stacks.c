/* test_stacks.c: sampled stacks through a real sink (frames interned, a
 * tree of nodes, runs of identical samples), and trainprof's own frames
 * taken for the user's in that tree. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/ops_idle.h"
#include "analyze/stack_counts.h"
#include "analyze/stack_facts.h"
#include "analyze/stack_own.h"
#include "core/metric_catalog.h"
#include "core/phases.h"
#include "core/stack_runs.h"
#include "harness.h"
#include "store/reader_stacks.h"

/* trainprof's own frames are taken for the user's frame above them; ids
 * stay, a root frame of ours (nothing above) stays as it is. */
static void test_own_frames_are_hidden_in_the_stack_tree(void **state)
{
    (void)state;
    assert_true(tp_stack_file_ours("/v/lib/python3.11/site-packages/trainprof/torch.py"));
    assert_true(tp_stack_file_ours("/work/main/python/trainprof/_autoload.py"));
    assert_true(tp_stack_file_ours("/v/site-packages/trainprof/patches/loop.py"));
    assert_true(tp_stack_file_ours("/v/site-packages/trainprof/steps/tracker.py"));
    assert_false(tp_stack_file_ours("/home/u/patches/loop.py"));         /* not ours */
    assert_false(tp_stack_file_ours("/home/u/trainprof/models/net.py")); /* a user's */
    assert_false(tp_stack_file_ours("/home/u/mytrainprof/patches/x.py"));
    assert_false(tp_stack_file_ours("/home/u/trainprof/train.py")); /* a user's file */
    assert_false(tp_stack_file_ours("/home/u/mytrainprof/_x.py"));
    assert_false(tp_stack_file_ours("trainprof/_x.py") || tp_stack_file_ours(NULL));
    char *function[] = {"main", "_patch_dataloader.<locals>.__iter__", "__next__", "__getitem__"};
    char *file[] = {"/home/u/train.py", "/v/site-packages/trainprof/torch.py",
                    "/v/site-packages/torch/utils/data/dataloader.py", "/home/u/train.py"};
    uint32_t parent[] = {0, 1, 2, 3, 0}, frame[] = {1, 2, 3, 4, 2};
    int32_t line[] = {10, 50, 600, 20, 51};
    tp_stack_tree t = {parent, frame, line, 5, function, file, 4};
    tp_stack_tree_hide_own(&t);
    /* node 2 (ours) is main's copy; __next__ hangs from main */
    assert_int_equal(frame[1], 1);
    assert_int_equal(line[1], 10);
    assert_int_equal(parent[1], 0);
    assert_int_equal(parent[2], 1);
    assert_int_equal(parent[3], 3);
    assert_int_equal(frame[3], 4);
    /* ours at the root: nothing of the user's above, kept */
    assert_int_equal(frame[4], 2);
    assert_int_equal(parent[4], 0);
}

/* What a module of ours that works for trainprof (device times) calls is our
 * work: torch's CUDA event under our poll is taken for the user's frame, as
 * is all below it; a wrapper in that module (capture_begin) leaves the call
 * it stands in for to the user. */
static void test_what_our_own_work_calls_is_hidden_too(void **state)
{
    (void)state;
    char *function[] = {"main",
                        "DeviceTimes.poll",
                        "Event.elapsed_time",
                        "synchronize",
                        "patch_graph_capture.<locals>.capture_begin",
                        "CUDAGraph.capture_begin",
                        "poll",
                        "elapsed_time"};
    char *file[] = {"/home/u/train.py",
                    "/v/site-packages/trainprof/patches/device.py",
                    "/v/site-packages/torch/cuda/streams.py",
                    "/v/site-packages/torch/cuda/__init__.py",
                    "/v/site-packages/trainprof/patches/device.py",
                    "/v/site-packages/torch/cuda/graphs.py",
                    "/v/lib/python3.10/site-packages/trainprof/patches/device.py",
                    "/v/lib/python3.10/site-packages/torch/cuda/streams.py"};
    /* 1 main, 2 poll, 3 elapsed_time, 4 synchronize; 5 capture_begin (ours),
     * 6 torch's capture_begin; 7 3.10's poll (no qualified name), 8 its callee;
     * 9 our poll at the root (no user's frame above): kept, its callee is it */
    uint32_t parent[] = {0, 1, 2, 3, 1, 5, 1, 7, 0, 9};
    uint32_t frame[] = {1, 2, 3, 4, 5, 6, 7, 8, 2, 3};
    int32_t line[] = {10, 100, 200, 300, 400, 500, 101, 201, 100, 200};
    tp_stack_tree t = {parent, frame, line, 10, function, file, 8};
    assert_true(tp_stack_frame_works_for_us(file[1], function[1]));
    assert_true(tp_stack_frame_works_for_us(file[6], function[6]));
    assert_false(tp_stack_frame_works_for_us(file[4], function[4])); /* a wrapper */
    assert_false(tp_stack_frame_works_for_us(file[2], function[2])); /* torch's */
    assert_false(tp_stack_frame_works_for_us("/home/u/patches/device.py", "poll"));
    assert_false(tp_stack_frame_works_for_us("/v/trainprof/patches/loop.py", "__next__"));
    assert_false(tp_stack_frame_works_for_us(NULL, "poll") ||
                 tp_stack_frame_works_for_us(file[1], NULL));
    tp_stack_tree_hide_own(&t);
    for (int id = 2; id <= 4; id++) { /* poll and all below it: main's copies */
        assert_int_equal(frame[id - 1], 1);
        assert_int_equal(line[id - 1], 10);
        assert_int_equal(parent[id - 1], 0);
    }
    assert_int_equal(frame[4], 1); /* the wrapper: main's copy */
    assert_int_equal(frame[5], 6); /* what it wraps: the user's, under main */
    assert_int_equal(parent[5], 1);
    assert_int_equal(frame[6], 1); /* 3.10's poll and its callee: main's */
    assert_int_equal(frame[7], 1);
    assert_int_equal(parent[7], 0);
    assert_int_equal(frame[8], 2); /* nothing of the user's above: kept */
    assert_int_equal(frame[9], 2);
    assert_int_equal(parent[9], 0);
}

/* Sampled stacks through a real sink: frames interned once, stacks as a
 * tree whose shared outer frames are one node, each node defined once in
 * the batch that first uses it, a sample naming its innermost node, and a
 * thread's identical samples in a row one run, one row however long: handed
 * to the writer when it ends, after a checkpoint's time, and at the end,
 * under its row id each time. */
static const char *same_text(tp_ops_facts *f, const char *text)
{
    (void)f;
    return text;
}

/* What the host ran while the GPU sat idle is told by the innermost frame
 * outside the standard library: a user's line that waited in os.stat and
 * in json's decoder (two standard-library nodes under it) outweighs a
 * library's function sampled more often than either of them alone. */
static void test_the_gpu_idle_function_is_the_first_outside_the_stdlib(void **state)
{
    (void)state;
    assert_true(tp_stack_file_stdlib("<frozen os>"));
    assert_true(tp_stack_file_stdlib("/usr/lib/python3.11/json/decoder.py"));
    assert_true(tp_stack_file_stdlib("/root/.pyenv/versions/3.9.18/lib/python3.9/threading.py"));
    assert_false(tp_stack_file_stdlib("/v/lib/python3.11/site-packages/torch/nn/functional.py"));
    assert_false(tp_stack_file_stdlib("/usr/lib/python3/dist-packages/numpy/core/numeric.py"));
    assert_false(tp_stack_file_stdlib("/home/u/lib/pythonic/train.py"));
    assert_false(tp_stack_file_stdlib("/home/u/train.py") || tp_stack_file_stdlib(NULL));
    char *function[] = {"main", "load", "stat", "raw_decode", "collate"};
    char *file[] = {"/home/u/train.py", "/home/u/data.py", "<frozen os>",
                    "/usr/lib/python3.11/json/decoder.py",
                    "/v/lib/python3.11/site-packages/torch/utils/data/collate.py"};
    /* 1 main > 2 load > 3 stat, 2 load > 4 raw_decode; 1 main > 5 collate */
    uint32_t parent[] = {0, 1, 2, 2, 1}, frame[] = {1, 2, 3, 4, 5};
    int32_t line[] = {10, 42, 0, 353, 7};
    tp_stack_tree t = {parent, frame, line, 5, function, file, 5};
    tp_run_op_sample samples[] = {
        {.t_ns = 100, .count = 3, .span_ns = 20, .node = 3},
        {.t_ns = 130, .count = 3, .span_ns = 20, .node = 4},
        {.t_ns = 160, .count = 4, .span_ns = 30, .node = 5},
        {.t_ns = 500, .count = 2, .span_ns = 10, .node = 3}, /* the second gap's */
    };
    tp_gpu_idle_fact idle[2] = {{0}};
    tp_ops_facts f = {.idle = idle, .nidle = 2};
    tp_ops_idle acc = {0};
    tp_ops_idle_note(&acc, 0, samples, 4, 0, 400);
    tp_ops_idle_note(&acc, 1, samples, 4, 400, 600);
    tp_ops_idle_finish(&acc, &f, &t, same_text);
    assert_string_equal(idle[0].function, "load");
    assert_string_equal(idle[0].file, "/home/u/data.py");
    assert_int_equal(idle[0].line, 42);
    assert_true(fabs(idle[0].function_share - 0.6) < 1e-9);
    assert_int_equal(idle[0].samples, 10);
    assert_string_equal(idle[1].function, "load");
    assert_true(fabs(idle[1].function_share - 1.0) < 1e-9);
    assert_int_equal(idle[1].samples, 2);
    assert_null(acc.v);
}

static void test_stack_tree(void **state)
{
    (void)state;
    tp_sink *sink = tp_sink_new(0);
    tp_thread_info info = {.pid = 10, .tid = 10, .rank = 0};
    uint32_t thread = tp_sink_thread(sink, &info);
    uint32_t main_f = tp_sink_frame(sink, "main\nrun.py"),
             load = tp_sink_frame(sink, "load\nrun.py");
    assert_int_equal(tp_sink_frame(sink, "main\nrun.py"), main_f); /* the same id again */
    uint32_t a[] = {load, main_f}, b[] = {main_f};                 /* innermost first */
    int32_t la[] = {7, 3}, lb[] = {4};
    tp_sink_stack(sink, thread, 100, 11, 0, TP_STACK_STATE_KNOWN, a, la, 2);
    tp_sink_stack(sink, thread, 150, 12, 0, 0, b, lb, 1); /* another thread between */
    tp_sink_stack(sink, thread, 200, 11, 0, TP_STACK_STATE_KNOWN, a, la, 2);
    tp_sink_stack(sink, thread, 300, 11, 0, TP_STACK_STATE_KNOWN, a, la, 2);
    tp_sink_stack(sink, thread, 400, 11, 0, 0, a, la, 2); /* waiting now: a new run */
    tp_sink_stack(sink, thread, 500, 11, 0, TP_STACK_STATE_KNOWN, a, la, 2);
    tp_batch batch = {0};
    tp_sink_take(sink, &batch);
    assert_int_equal(batch.frames.len, 2);
    /* the runs that ended; thread 12's and 11's last are still open */
    assert_int_equal(batch.stacks.len, 2);
    const tp_stack_sample *run = &batch.stacks.items[0];
    assert_true(run->tid == 11 && run->t_ns == 100 && run->count == 3 && run->span_ns == 200);
    assert_true(batch.stacks.items[1].t_ns == 400 && batch.stacks.items[1].count == 1 &&
                batch.stacks.items[1].state == 0);
    uint64_t first_row = run->row;
    assert_true(first_row > 0 && batch.stacks.items[1].row != first_row);
    /* main@3 -> load@7 (two nodes), and main@4 (a third: another line) */
    assert_int_equal(batch.stack_nodes.len, 3);
    const tp_stack_node *root = &batch.stack_nodes.items[0], *leaf = &batch.stack_nodes.items[1];
    assert_true(root->parent == 0 && root->frame == main_f && root->line == 3);
    assert_true(leaf->parent == root->id && leaf->frame == load && leaf->line == 7);
    assert_int_equal(batch.stacks.items[0].node, leaf->id);
    assert_int_equal(batch.stacks.items[1].node, leaf->id);
    uint32_t leaf_id = leaf->id;
    /* thread 11's open run grows by repeats (its CPU time did not move): past
     * a checkpoint's time it is handed, then again under the same row */
    tp_sink_stack_repeat(sink, thread, 600, 11, 4);
    tp_batch_clear(&batch);
    tp_sink_take(sink, &batch);
    assert_int_equal(batch.stacks.len, 0);
    /* the first checkpoint comes sooner: a wait that began is in the file
     * soon; thread 12's run, quiet for as long by the latest sample, too */
    uint64_t first = 500 + TP_STACK_RUN_FIRST_CHECKPOINT_NS;
    tp_sink_stack_repeat(sink, thread, first, 11, 1);
    tp_batch_clear(&batch);
    tp_sink_take(sink, &batch);
    assert_int_equal(batch.stacks.len, 2);
    run = &batch.stacks.items[0];
    assert_true(run->tid == 11 && run->t_ns == 500 && run->count == 6 &&
                run->span_ns == first - 500);
    assert_true(batch.stacks.items[1].tid == 12 && batch.stacks.items[1].count == 1);
    uint64_t row = run->row;
    /* then every checkpoint's time: not before */
    tp_sink_stack_repeat(sink, thread, first + TP_STACK_RUN_CHECKPOINT_NS - 1, 11, 1);
    tp_batch_clear(&batch);
    tp_sink_take(sink, &batch);
    assert_int_equal(batch.stacks.len, 0);
    uint64_t later = first + TP_STACK_RUN_CHECKPOINT_NS;
    tp_sink_stack_repeat(sink, thread, later, 11, 998);
    tp_sink_stack(sink, thread, later + 10, 11, 0, TP_STACK_STATE_KNOWN, a, la, 2);
    tp_batch_clear(&batch);
    tp_sink_take(sink, &batch);
    assert_int_equal(batch.stack_nodes.len, 0); /* known nodes are not defined again */
    /* thread 11's run as it was at the checkpoint, under the same row;
     * thread 12's did not grow */
    assert_int_equal(batch.stacks.len, 1);
    run = &batch.stacks.items[0];
    assert_true(run->tid == 11 && run->t_ns == 500 && run->count == 1005 &&
                run->span_ns == later - 500 && run->row == row);
    assert_int_equal(run->node, leaf_id);
    tp_sink_stack(sink, thread, later + 20, 11, 0, TP_STACK_STATE_KNOWN, a, la, 2);
    /* a repeat for a thread with no run is lost */
    tp_sink_stack_repeat(sink, thread, 700, 13, 5);
    /* a sample of a thread the sink could not keep counts as lost */
    tp_sink_stack(sink, 0, 500, 11, 0, 0, a, la, 2);
    uint64_t lost[TP_LOST_KINDS];
    tp_sink_losses(sink, lost);
    assert_int_equal(lost[TP_LOST_EVENTS], 6);
    /* the end hands every open run that grew since: thread 11's, same row */
    tp_sink_close(sink);
    tp_batch_clear(&batch);
    tp_sink_take(sink, &batch);
    assert_int_equal(batch.stacks.len, 1);
    run = &batch.stacks.items[0];
    assert_true(run->row == row && run->count == 1007 && run->span_ns == later + 20 - 500);
    tp_batch_free(&batch);
    tp_sink_free(sink);
}

/* The one stack of each thread asked for as a stall begins (stack sampling
 * off), or a thread's last sample before it went quiet: no stack sample
 * follows to pass its run's first checkpoint, the system samples' ticks do,
 * and it is handed (in the file for top, the status line and /metrics). */
static void test_a_lone_sample_is_handed_by_the_system_samples_clock(void **state)
{
    (void)state;
    tp_sink *sink = tp_sink_new(0);
    tp_thread_info info = {.pid = 10, .tid = 10, .rank = 0};
    uint32_t thread = tp_sink_thread(sink, &info);
    uint32_t frame = tp_sink_frame(sink, "wait\nrun.py");
    int32_t line = 5;
    uint32_t cpu = tp_sink_series(sink, TP_METRIC_CPU_UTIL_PERCENT, "{}");
    tp_sink_stack(sink, thread, 1000, 11, 0, TP_STACK_STATE_KNOWN, &frame, &line, 1);
    tp_batch batch = {0};
    tp_sink_sample(sink, cpu, 1000 + TP_STACK_RUN_FIRST_CHECKPOINT_NS - 1, 1);
    tp_sink_take(sink, &batch);
    assert_int_equal(batch.stacks.len, 0); /* not yet: open, under a second old */
    tp_sink_sample(sink, cpu, 1000 + TP_STACK_RUN_FIRST_CHECKPOINT_NS, 1);
    tp_batch_clear(&batch);
    tp_sink_take(sink, &batch);
    assert_int_equal(batch.stacks.len, 1);
    assert_true(batch.stacks.items[0].t_ns == 1000 && batch.stacks.items[0].count == 1);
    tp_batch_free(&batch);
    tp_sink_free(sink);
}

/* What a reader of stack runs was given: each run's first sample and tid,
 * in order. */
typedef struct seen_runs {
    int64_t t_ns[64];
    int32_t tid[64];
    size_t n;
} seen_runs;

static void see_run(void *ctx, const tp_stack_thread_run *run)
{
    seen_runs *s = ctx;
    if (s->n < 64) {
        s->t_ns[s->n] = run->t_ns;
        s->tid[s->n++] = run->tid;
    }
}

/* One pass for several readers (the summary's own cost, function causes
 * and latest pace) gives each the runs, and the order, a pass of its own
 * would: 40 runs of two threads, one of them a run of samples that spans
 * the later readers' starts; readers from 0, 150 ms and 300 ms, and one
 * without a function. */
static void test_one_pass_gives_each_reader_its_own_pass_s_runs(void **state)
{
    (void)state;
    tp_sink *sink = tp_sink_new(0);
    tp_thread_info info = {.pid = 10, .tid = 10, .rank = 0};
    uint32_t thread = tp_sink_thread(sink, &info);
    uint32_t f[2] = {tp_sink_frame(sink, "load\nrun.py"), tp_sink_frame(sink, "main\nrun.py")};
    int32_t lines[2] = {7, 3};
    const uint64_t ms = 1000000ull;
    for (uint64_t k = 0; k < 20; k++) { /* thread 11 alternates stacks: a run each */
        tp_sink_stack(sink, thread, (10 + 20 * k) * ms, 11, 0, TP_STACK_STATE_KNOWN, f + k % 2,
                      lines + k % 2, 2 - (unsigned)(k % 2));
        tp_sink_stack(sink, thread, (20 + 20 * k) * ms, 12, 0, TP_STACK_STATE_KNOWN,
                      k < 16 ? f + k % 2 : f, k < 16 ? lines + k % 2 : lines,
                      k < 16 ? 2 - (unsigned)(k % 2) : 2); /* its last four: one run */
    }
    tp_sink_close(sink); /* the open runs handed too */
    char *root = fx_root(), *path = NULL, err[256];
    assert_true(asprintf(&path, "%s/pass.db", root) > 0);
    fx_write_sink(path, sink, "node1"); /* frees the sink */
    tp_run *run = tp_run_open(path, err, sizeof err);
    assert_non_null(run);
    const int64_t since[3] = {0, 150 * (int64_t)ms, 300 * (int64_t)ms};
    seen_runs alone[3], together[3], none;
    memset(alone, 0, sizeof alone);
    memset(together, 0, sizeof together);
    memset(&none, 0, sizeof none);
    tp_stack_reader readers[4];
    for (int i = 0; i < 3; i++) {
        assert_true(
            tp_run_each_stack_run_since(run, since[i], see_run, &alone[i], err, sizeof err));
        readers[i] = (tp_stack_reader){since[i], see_run, &together[i]};
    }
    readers[3] = (tp_stack_reader){0, NULL, &none};
    assert_true(tp_run_each_stack_run_to(run, readers, 4, err, sizeof err));
    for (int i = 0; i < 3; i++) {
        assert_int_equal(together[i].n, alone[i].n);
        for (size_t k = 0; k < alone[i].n; k++)
            assert_true(together[i].t_ns[k] == alone[i].t_ns[k] &&
                        together[i].tid[k] == alone[i].tid[k]);
    }
    /* every run (thread 11's 20, thread 12's 16 and its last), fewer from
     * 150 ms, fewer still from 300 ms */
    assert_int_equal(alone[0].n, 37);
    assert_true(alone[1].n < alone[0].n && alone[2].n < alone[1].n && alone[2].n > 0);
    assert_int_equal(none.n, 0);
    tp_run_close(run);
    free(path);
    free(root);
}

/* A thread the kernel had in state D (a read of a disk) counts as blocked,
 * by the readers of a file not yet summarized (SQL) and by the summary's
 * pass alike; a crafted state that says D and running, or D unknown, does
 * not. dataloader_next: 6 samples in D in read, 4 running in collate, 2
 * crafted "running and D" in read, 1 crafted "D" with no state known. */
static void test_a_thread_in_state_d_counts_as_blocked_by_both_readers(void **state)
{
    (void)state;
    tp_sink *sink = tp_sink_new(0);
    tp_thread_info info = {.pid = 10, .tid = 10, .rank = 0};
    uint32_t thread = tp_sink_thread(sink, &info);
    uint32_t next = tp_sink_name(sink, TP_PHASE_DATALOADER_NEXT);
    uint32_t read[2] = {tp_sink_frame(sink, "read\ndata.py"), tp_sink_frame(sink, "main\nrun.py")};
    uint32_t collate[2] = {tp_sink_frame(sink, "collate\ndata.py"), read[1]};
    int32_t lines[2] = {7, 3};
    const uint32_t d = TP_STACK_STATE_KNOWN | TP_STACK_STATE_BLOCKED,
                   run_ = TP_STACK_STATE_KNOWN | TP_STACK_STATE_ON_CPU;
    const uint32_t states[13] = {
        d, d, d, run_, run_, d, d, d, run_, run_, d | run_, d | run_, TP_STACK_STATE_BLOCKED};
    for (uint64_t k = 0; k < 13; k++)
        tp_sink_stack(sink, thread, (10 + 10 * k) * 1000000ull, 11, next, states[k],
                      states[k] == run_ ? collate : read, lines, 2);
    tp_sink_close(sink);
    char *root = fx_root(), *path = NULL, err[256];
    assert_true(asprintf(&path, "%s/blocked.db", root) > 0);
    fx_write_sink(path, sink, "node1"); /* frees the sink */
    tp_run *run = tp_run_open(path, err, sizeof err);
    assert_non_null(run);
    tp_region_withins withins = {0};
    tp_stack_facts f;
    assert_true(tp_stack_facts_build(run, &withins, &f, err, sizeof err));
    assert_int_equal(f.n, 1);
    const tp_stack_group *g = &f.groups[0];
    assert_string_equal(g->phase, TP_PHASE_DATALOADER_NEXT);
    assert_true(g->samples == 13 && g->known == 12 && g->on_cpu == 6 && g->blocked == 6);
    const tp_stack_function *fn = &g->functions[0];
    assert_string_equal(tp_stack_facts_function(&f, fn->frame), "read");
    assert_true(fn->self == 9 && fn->self_known == 8 && fn->self_on_cpu == 2 &&
                fn->self_blocked == 6);
    /* the summary's pass over the runs: the same counts, in the same order */
    tp_stack_reader reader;
    tp_counts_pass *pass = tp_stack_counts_begin(&reader);
    assert_true(tp_run_each_stack_run_to(run, &reader, 1, err, sizeof err));
    tp_stack_count *counted;
    size_t n;
    tp_stack_counts_end(pass, true, &counted, &n);
    assert_int_equal(n, f.ncounts);
    for (size_t i = 0; i < n; i++) {
        const tp_stack_count *a = &counted[i], *b = &f.counts[i];
        assert_true(a->node == b->node && a->on_cpu == b->on_cpu && a->cpu_known == b->cpu_known &&
                    a->blocked == b->blocked && a->samples == b->samples);
    }
    tp_stack_counts_free(counted, n);
    tp_stack_facts_free(&f);
    tp_region_withins_free(&withins);
    tp_run_close(run);
    free(path);
    free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_frames_are_hidden_in_the_stack_tree),
        cmocka_unit_test(test_what_our_own_work_calls_is_hidden_too),
        cmocka_unit_test(test_the_gpu_idle_function_is_the_first_outside_the_stdlib),
        cmocka_unit_test(test_stack_tree),
        cmocka_unit_test(test_a_lone_sample_is_handed_by_the_system_samples_clock),
        cmocka_unit_test(test_one_pass_gives_each_reader_its_own_pass_s_runs),
        cmocka_unit_test(test_a_thread_in_state_d_counts_as_blocked_by_both_readers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
