/* test_rank_gpus.c: which GPU a rank drove, on run files written through
 * the real writer: local ranks inferred where mp.spawn exports none,
 * CUDA_VISIBLE_DEVICES read as CUDA reads it, and a straggler's cause naming
 * the GPU it was bound to. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/rank_gpu.h"
#include "analyze/ranks.h"
#include "analyze/summary_save.h"
#include "harness.h"
#include "rank_runs.h"
#include "store/reader.h"

/* GPUs 0-3 busy util[g] % through [0, 12 s]. */
static void gpu_util_series(tp_sink *s, const double *util)
{
    for (int g = 0; g < 4; g++) {
        char labels[32];
        snprintf(labels, sizeof labels, "{\"gpu\":\"%d\"}", g);
        uint32_t id = tp_sink_series(s, "gpu_util_percent", labels);
        for (int t = 0; t <= 12; t++)
            tp_sink_sample(s, id, (uint64_t)t * S, util[g]);
    }
}

/* The given ranks on one agent, none with a local rank (mp.spawn), rank 2
 * fetching 2 s longer; GPU g busy util[g] % over the whole window. */
static void write_spawned(const char *path, const int *ranks, int n, const double *util)
{
    tp_sink *s = rank_runs_sink();
    const rank_env spawned = {.no_local_rank = true};
    for (int i = 0; i < n; i++)
        rank_runs_regions(s, ranks[i], ranks[i] == 2 ? 2 : 0, 0, &spawned);
    gpu_util_series(s, util);
    rank_runs_write(path, s);
}

/* mp.spawn exports no LOCAL_RANK: an agent's contiguous ranks take their
 * place in the block as local rank, so a straggler's GPU can be named; with
 * a gap the local ranks stay unknown. */
static void test_local_ranks_inferred_from_an_agents_block_of_ranks(void **state)
{
    (void)state;
    const double util[] = {95, 95, 40, 95};
    char *path = rank_runs_path("spawned.db");
    const int block[] = {0, 1, 2, 3};
    write_spawned(path, block, 4, util);
    tp_ranks r = rank_runs_build(path, true);
    assert_int_equal(r.n, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(r.rows[i].local_rank, i);
    assert_true(r.rows[2].straggler);
    assert_non_null(strstr(rank_runs_cause_words(&r.rows[2]), "its GPU 2 is 40 % busy vs 95 %"));
    tp_ranks_free(&r);
    free(path);

    path = rank_runs_path("gap.db");
    const int gap[] = {0, 2, 3};
    write_spawned(path, gap, 3, util);
    r = rank_runs_build(path, true);
    assert_int_equal(r.n, 3);
    for (size_t i = 0; i < r.n; i++)
        assert_int_equal(r.rows[i].local_rank, -1);
    assert_true(r.rows[1].straggler && r.rows[1].rank == 2);
    assert_int_equal(r.rows[1].cause.gpu_note, TP_GPU_NOTE_NONE);
    tp_ranks_free(&r);
    free(path);
}

/* CUDA_VISIBLE_DEVICES against the node's GPUs: indices, UUIDs and their
 * prefixes, one GPU or one per local rank; what CUDA would refuse names none. */
static void test_a_ranks_gpu_from_its_visible_devices(void **state)
{
    (void)state;
    char a[] = "GPU-aa11", b[] = "GPU-ab22", c[] = "GPU-cc33";
    tp_run_gpu gpus[] = {{1, 0, NULL, a, 0, NULL},
                         {1, 1, NULL, b, 0, NULL},
                         {1, 2, NULL, c, 0, NULL},
                         {2, 0, NULL, c, 0, NULL}};
    tp_run run;
    memset(&run, 0, sizeof run);
    run.gpus = gpus;
    run.ngpus = 4;
    assert_int_equal(tp_rank_gpu(&run, 1, false, "", 2), 2);   /* all visible: its local rank */
    assert_int_equal(tp_rank_gpu(&run, 1, false, "", -1), -1); /* ... unknown */
    assert_int_equal(tp_rank_gpu(&run, 1, true, "2", 0), 2);   /* one GPU: that one */
    assert_int_equal(tp_rank_gpu(&run, 1, true, "2", -1), 2);
    assert_int_equal(tp_rank_gpu(&run, 1, true, "2, 0,1", 1), 0); /* its local rank's entry */
    assert_int_equal(tp_rank_gpu(&run, 1, true, "2,0", 2), -1);   /* past the list */
    assert_int_equal(tp_rank_gpu(&run, 1, true, "GPU-cc33", 0), 2);
    assert_int_equal(tp_rank_gpu(&run, 2, true, "GPU-cc33", 0), 0);     /* that agent's */
    assert_int_equal(tp_rank_gpu(&run, 1, true, "GPU-c,GPU-ab", 1), 1); /* prefixes */
    assert_int_equal(tp_rank_gpu(&run, 1, true, "GPU-a", 0), -1);       /* two GPUs' prefix */
    /* CUDA reads up to the MIG entry: the process sees GPU 0 only */
    assert_int_equal(tp_rank_gpu(&run, 1, true, "0,MIG-1,2", 2), 0);
    assert_int_equal(tp_rank_gpu(&run, 1, true, "1,2,MIG-1,0", 2), -1); /* 2 seen, past them */
    assert_int_equal(tp_rank_gpu(&run, 1, true, "1,2,MIG-1,0", 1), 2);
    assert_int_equal(tp_rank_gpu(&run, 1, true, "", 0), -1); /* no GPU visible */
    assert_int_equal(tp_rank_gpu(&run, 1, true, "-1", 0), -1);
    assert_int_equal(tp_rank_gpu(&run, 1, true, "GPU-ff", 0), -1); /* not on this node */
}

/* Each rank bound to one GPU in reverse order (as Slurm's --gpu-bind may),
 * rank 2 the straggler on GPU 1, which is the idle one: the cause names GPU
 * 1, from rows and from the stored summary alike. */
static void test_a_straggler_named_with_the_gpu_it_was_bound_to(void **state)
{
    (void)state;
    const double util[] = {95, 40, 95, 95};
    const char *const bound[] = {"3", "2", "1", "GPU-synthetic-0"};
    char *path = rank_runs_path("bound.db");
    tp_sink *s = rank_runs_sink();
    tp_gpu_info g = {0};
    snprintf(g.uuid, sizeof g.uuid, "GPU-synthetic-0");
    tp_sink_gpu(s, &g);
    for (int r = 0; r < 4; r++) {
        const rank_env env = {.visible = bound[r]};
        rank_runs_regions(s, r, r == 2 ? 2 : 0, 0, &env);
    }
    gpu_util_series(s, util);
    rank_runs_write(path, s);
    for (int stored = 0; stored < 2; stored++) {
        char err[256];
        if (stored)
            assert_true(tp_summary_store_save(path, err, sizeof err));
        tp_ranks r = rank_runs_build(path, !stored);
        assert_int_equal(r.n, 4);
        const int expect[] = {3, 2, 1, 0};
        for (int i = 0; i < 4; i++)
            assert_int_equal(r.rows[i].gpu, expect[i]);
        assert_true(r.rows[2].straggler);
        assert_non_null(
            strstr(rank_runs_cause_words(&r.rows[2]), "its GPU 1 is 40 % busy vs 95 %"));
        tp_ranks_free(&r);
    }
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local_ranks_inferred_from_an_agents_block_of_ranks),
        cmocka_unit_test(test_a_ranks_gpu_from_its_visible_devices),
        cmocka_unit_test(test_a_straggler_named_with_the_gpu_it_was_bound_to),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
