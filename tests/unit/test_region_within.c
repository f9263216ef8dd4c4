/* test_region_within.c: what a user's region ran inside
 * (analyze/region_within.h), from region rows in the order a thread closes
 * them (nested, at the top, in another user's region, on threads that
 * interleave, with levels lost under a flood, in two places), and its use
 * by the stack facts (analyze/stack_facts.h) on a run file written here
 * through the real writer: a user region's samples count in the phase
 * around it too, each once in the run's; the same from the summary that
 * stores the pairs, and from a crafted one. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/region_within.h"
#include "analyze/stack_facts.h"
#include "analyze/summary_save.h"
#include "core/run_keys.h"
#include "harness.h"
#include "store/reader.h"
#include "store/summary_tables.h"
#include "store/writer.h"

#define MS 1000000ll /* one millisecond in ns */

enum { TRAIN_BATCH = 1, FORWARD, AUGMENT, INNER, LOGGING, EVALUATE };

static tp_within_acc *acc_with_names(void)
{
    tp_within_acc *a = tp_within_acc_new();
    tp_within_acc_name(a, LOGGING, "logging"); /* ids in no order */
    tp_within_acc_name(a, TRAIN_BATCH, "train_batch");
    tp_within_acc_name(a, FORWARD, "forward");
    tp_within_acc_name(a, AUGMENT, "augment");
    tp_within_acc_name(a, INNER, "inner");
    tp_within_acc_name(a, EVALUATE, "evaluate");
    return a;
}

/* w's entry for name: its enclosing region's name ("-" for none). */
static const char *within_of(const tp_region_withins *w, const char *name)
{
    const tp_region_within *e = tp_region_within_find(w, name);
    assert_non_null(e);
    return e->within ? e->within : "-";
}

static void test_each_user_region_gets_the_nearest_standard_one_around_it(void **state)
{
    (void)state;
    tp_within_acc *a = acc_with_names();
    assert_true(tp_within_acc_has_user_names(a));
    for (int64_t step = 0; step < 3; step++) {
        int64_t t = step * 100 * MS;
        /* train_batch > forward > augment > inner, closing innermost first */
        tp_within_acc_region(a, 7, INNER, 3, t + 2 * MS, t + 3 * MS);
        tp_within_acc_region(a, 7, AUGMENT, 2, t + 1 * MS, t + 5 * MS);
        tp_within_acc_region(a, 7, FORWARD, 1, t, t + 6 * MS);
        tp_within_acc_region(a, 7, TRAIN_BATCH, 0, t, t + 10 * MS);
        /* logging at the top, between the phases */
        tp_within_acc_region(a, 7, LOGGING, 0, t + 10 * MS, t + 14 * MS);
    }
    tp_region_withins w;
    tp_within_acc_finish(a, &w);
    assert_int_equal(w.n, 3);
    assert_string_equal(within_of(&w, "augment"), "forward");
    assert_string_equal(within_of(&w, "inner"), "forward"); /* its user parent's */
    assert_string_equal(within_of(&w, "logging"), "-");
    assert_float_equal(tp_region_within_find(&w, "augment")->seconds, 3 * 0.004, 1e-9);
    assert_null(tp_region_within_find(&w, "train_batch")); /* standard: not kept */
    /* what a sample counts for */
    assert_string_equal(tp_region_counts_for(&w, "augment"), "forward");
    assert_null(tp_region_counts_for(&w, "logging"));
    assert_string_equal(tp_region_counts_for(&w, "train_batch"), "train_batch");
    assert_string_equal(tp_region_counts_for(&w, "unseen"), "unseen"); /* no pair: its own */
    assert_null(tp_region_counts_for(&w, NULL));
    assert_string_equal(tp_region_counts_for(NULL, "augment"), "augment");
    tp_region_withins_free(&w);
}

/* Threads that interleave keep their own chains; a name in two places
 * takes the one it spent the most time in; a region whose parents were
 * lost counts in the first standard one closing after it; rows of no known
 * name or of a negative depth are left out. */
static void test_threads_places_and_lost_levels(void **state)
{
    (void)state;
    tp_within_acc *a = acc_with_names();
    /* thread 1: augment in train_batch (1 ms); thread 2, closing between:
     * augment in evaluate (5 ms) */
    tp_within_acc_region(a, 1, AUGMENT, 1, 0, 1 * MS);
    tp_within_acc_region(a, 2, AUGMENT, 1, 0, 5 * MS);
    tp_within_acc_region(a, 1, TRAIN_BATCH, 0, 0, 2 * MS);
    tp_within_acc_region(a, 2, EVALUATE, 0, 0, 6 * MS);
    /* inner at depth 4, its parents lost; train_batch (depth 0) closes next */
    tp_within_acc_region(a, 3, INNER, 4, 0, 1 * MS);
    tp_within_acc_region(a, 3, 99, 2, 0, 1 * MS);   /* a name the file never gave */
    tp_within_acc_region(a, 3, LOGGING, -1, 0, MS); /* a crafted depth */
    tp_within_acc_region(a, 3, TRAIN_BATCH, 0, 0, 2 * MS);
    tp_region_withins w;
    tp_within_acc_finish(a, &w);
    assert_int_equal(w.n, 2);
    assert_string_equal(within_of(&w, "augment"), "evaluate");
    assert_string_equal(within_of(&w, "inner"), "train_batch");
    assert_null(tp_region_within_find(&w, "logging"));
    tp_region_withins_free(&w);

    /* a run of standard names only needs no pass */
    a = tp_within_acc_new();
    tp_within_acc_name(a, 1, "train_batch");
    tp_within_acc_name(a, 2, "forward");
    assert_false(tp_within_acc_has_user_names(a));
    tp_within_acc_finish(a, &w);
    assert_int_equal(w.n, 0);
}

/* Many distinct pairs (a crafted file, a name a step) stay bounded. */
static void test_pairs_are_bounded(void **state)
{
    (void)state;
    tp_within_acc *a = tp_within_acc_new();
    tp_within_acc_name(a, 1, "train_batch");
    const int names = TP_WITHIN_PAIRS_MAX + 100;
    for (int i = 0; i < names; i++) {
        char text[32];
        snprintf(text, sizeof text, "user_%d", i);
        tp_within_acc_name(a, 2 + i, text);
    }
    for (int i = 0; i < names; i++) {
        tp_within_acc_region(a, 1, 2 + i, 1, i * MS, i * MS + 1);
        tp_within_acc_region(a, 1, 1, 0, i * MS, i * MS + 2);
    }
    tp_region_withins w;
    tp_within_acc_finish(a, &w);
    assert_int_equal(w.n, TP_WITHIN_PAIRS_MAX);
    tp_region_withins_free(&w);
}

/* A run of 10 steps on one thread (rank 0): train_batch (10 ms) holding
 * augment (6 ms), then logging (4 ms) between the phases; a stack sample a
 * millisecond, each in the innermost region open. The path, to free. */
static char *write_run(void)
{
    char *root = fx_root(), *path = NULL;
    assert_true(asprintf(&path, "%s/within.db", root) > 0);
    free(root);
    tp_sink *s = tp_sink_new(0);
    tp_sink_meta(s, TP_META_COMMAND, "train");
    tp_thread_info info = {.pid = 10, .tid = 10, .rank = 0, .local_rank = 0, .world_size = 1};
    uint32_t thread = tp_sink_thread(s, &info);
    uint32_t tb = tp_sink_name(s, "train_batch"), aug = tp_sink_name(s, "augment"),
             log = tp_sink_name(s, "logging");
    uint32_t frames[3] = {tp_sink_frame(s, "model\nrun.py"), tp_sink_frame(s, "flip\nrun.py"),
                          tp_sink_frame(s, "log\nrun.py")};
    int32_t line = 1;
    const uint64_t t0 = 10000 * (uint64_t)MS, ms = (uint64_t)MS;
    for (uint64_t k = 0; k < 10; k++) {
        uint64_t t = t0 + k * 14 * ms;
        tp_sink_mark(s, thread, TP_MARK_STEP, t, 0);
        tp_sink_interval(s, thread, aug, 1, t + 2 * ms, t + 8 * ms);
        tp_sink_interval(s, thread, tb, 0, t, t + 10 * ms);
        tp_sink_interval(s, thread, log, 0, t + 10 * ms, t + 14 * ms);
        for (uint64_t m = 0; m < 14; m++) {
            bool in_aug = m >= 2 && m < 8, in_tb = m < 10;
            uint32_t phase = in_aug ? aug : in_tb ? tb : log;
            const uint32_t *f = &frames[in_aug ? 1 : in_tb ? 0 : 2];
            tp_sink_stack(s, thread, t + m * ms + ms / 2, 10, phase, TP_STACK_STATE_KNOWN, f, &line,
                          1);
        }
    }
    tp_sink_mark(s, thread, TP_MARK_STEP, t0 + 140 * ms, 0);
    tp_sink_close(s);
    fx_write_sink(path, s, "node1");
    return path;
}

static const tp_stack_group *group_of(const tp_stack_facts *f, const char *phase)
{
    for (size_t i = 0; i < f->n; i++) {
        const tp_stack_group *g = &f->groups[i];
        if (!g->workers && !g->waited && (phase ? g->phase && !strcmp(g->phase, phase) : !g->phase))
            return g;
    }
    fail_msg("no group %s", phase ? phase : "(none)");
    return NULL;
}

/* The groups of the run above: train_batch's 100 samples, 60 of them
 * augment's; augment's 60, inside train_batch; logging's 40, and the time
 * outside the phases' 40, all of them logging's; 140 in all. */
static void check_groups(const tp_stack_facts *f)
{
    const tp_stack_group *tb = group_of(f, "train_batch"), *aug = group_of(f, "augment"),
                         *log = group_of(f, "logging"), *none = group_of(f, NULL);
    assert_int_equal(tb->samples, 100);
    assert_int_equal(tb->borrowed, 60);
    assert_null(tb->within);
    assert_int_equal(aug->samples, 60);
    assert_int_equal(aug->borrowed, 0);
    assert_string_equal(aug->within, "train_batch");
    assert_int_equal(log->samples, 40);
    assert_null(log->within); /* outside the phases: its entry says so */
    assert_null(tp_region_within_find(&f->withins, "logging")->within);
    assert_int_equal(none->samples, 40);
    assert_int_equal(none->borrowed, 40);
    assert_int_equal(f->samples, 140);
    /* train_batch's top function is augment's flip, then its own model */
    assert_true(tb->nfunctions >= 2);
    assert_string_equal(tp_stack_facts_function(f, tb->functions[0].frame), "flip");
    assert_int_equal(tb->functions[0].self, 60);
    assert_string_equal(tp_stack_facts_function(f, tb->functions[1].frame), "model");
}

/* A stored pair: counted, augment's checked. */
static void count_stored(void *ctx, const char *name, const char *within, double seconds)
{
    ++*(size_t *)ctx;
    if (strcmp(name, "augment") == 0) {
        assert_string_equal(within, "train_batch");
        assert_float_equal(seconds, 10 * 0.006, 1e-9);
    }
}

static void test_user_regions_samples_count_in_the_phase_around_them(void **state)
{
    (void)state;
    char *path = write_run(), err[256];
    tp_run *run = tp_run_open(path, err, sizeof err);
    assert_non_null(run);
    tp_stack_facts f;
    tp_region_withins withins = {0};
    assert_true(tp_stack_facts_build(run, &withins, &f, err, sizeof err));
    check_groups(&f);
    tp_stack_facts_free(&f);
    tp_region_withins_free(&withins);
    tp_run_close(run);

    /* the summary stores the pairs; read back, the same groups */
    assert_true(tp_summary_store_save(path, err, sizeof err));
    run = tp_run_open(path, err, sizeof err);
    assert_non_null(run);
    bool stored = false;
    size_t rows = 0;
    assert_true(tp_stored_region_withins(run, count_stored, &rows, &stored, err, sizeof err));
    assert_true(stored);
    assert_int_equal(rows, 2); /* augment's and logging's */
    assert_true(tp_stack_facts_build(run, &withins, &f, err, sizeof err));
    check_groups(&f);
    tp_stack_facts_free(&f);
    tp_region_withins_free(&withins);
    tp_run_close(run);
    free(path);
}

/* A crafted summary_region_within: rows that name no user region, a user
 * region inside another, no name, a time that is no number, and many of
 * each: the stored pairs read back bounded, the real ones kept. */
static void test_a_crafted_stored_table_is_read_bounded(void **state)
{
    (void)state;
    char *path = write_run(), err[256];
    assert_true(tp_summary_store_save(path, err, sizeof err));
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db,
                     /* a crafted file's table need not be this one's: no NOT NULL */
                     "ALTER TABLE summary_region_within RENAME TO kept;"
                     "CREATE TABLE summary_region_within (name, within, seconds);"
                     "INSERT INTO summary_region_within SELECT * FROM kept;"
                     "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k"
                     "  WHERE i < 30000)"
                     " INSERT INTO summary_region_within SELECT 'u' || i, 'v' || i, 1 FROM k;"
                     "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k"
                     "  WHERE i < 5000)"
                     " INSERT INTO summary_region_within SELECT 'augment', 'train_batch', 1"
                     " FROM k;"
                     "INSERT INTO summary_region_within VALUES ('train_batch', 'forward', 9),"
                     " (NULL, 'forward', 9), ('logging', 'evaluate', 'many'),"
                     " ('logging', 'evaluate', -1);",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    tp_run *run = tp_run_open(path, err, sizeof err);
    assert_non_null(run);
    tp_region_withins w;
    assert_true(tp_region_withins_build(run, &w, err, sizeof err));
    assert_true(w.n <= TP_WITHIN_PAIRS_MAX);
    assert_string_equal(within_of(&w, "augment"), "train_batch");
    assert_string_equal(within_of(&w, "logging"), "-"); /* its real row; the crafted left out */
    assert_null(tp_region_within_find(&w, "train_batch"));
    assert_null(tp_region_within_find(&w, "u1"));
    tp_region_withins_free(&w);
    tp_run_close(run);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_user_region_gets_the_nearest_standard_one_around_it),
        cmocka_unit_test(test_threads_places_and_lost_levels),
        cmocka_unit_test(test_pairs_are_bounded),
        cmocka_unit_test(test_user_regions_samples_count_in_the_phase_around_them),
        cmocka_unit_test(test_a_crafted_stored_table_is_read_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
