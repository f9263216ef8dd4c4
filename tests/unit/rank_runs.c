/* rank_runs.c: run files of ranks side by side (rank_runs.h). */
#include "rank_runs.h"

#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "render/ranks_words.h"
#include "render/verdict_words.h"
#include "store/reader.h"

char *rank_runs_path(const char *name)
{
    char *root = fx_root();
    char *p = NULL;
    assert_true(asprintf(&p, "%s/%s", root, name) > 0);
    free(root);
    return p;
}

uint32_t rank_runs_thread(tp_sink *s, int rank, int tid, const rank_env *env)
{
    tp_thread_info t = {0};
    t.pid = 100 + rank;
    t.tid = tid;
    t.rank = rank;
    t.local_rank = env && env->no_local_rank ? -1 : rank;
    t.world_size = 4;
    if (env && env->visible) {
        t.cuda_visible_set = true;
        snprintf(t.cuda_visible, sizeof t.cuda_visible, "%s", env->visible);
    }
    return tp_sink_thread(s, &t);
}

void rank_runs_regions(tp_sink *s, int rank, double extra_input, double idle, const rank_env *env)
{
    uint32_t main = rank_runs_thread(s, rank, 1000 + rank, env),
             comm = rank_runs_thread(s, rank, 2000 + rank, env);
    uint32_t in = tp_sink_name(s, "dataloader_next"), train = tp_sink_name(s, "train_batch");
    uint32_t fwd = tp_sink_name(s, "forward"), red = tp_sink_name(s, "reduce_metrics");
    uint32_t mine = tp_sink_name(s, "my_region"); /* no category: other */
    uint64_t x = (uint64_t)(extra_input * S);
    tp_sink_mark(s, main, TP_MARK_STEP, 0, 0);
    tp_sink_interval(s, main, in, 0, 0, 3 * S + x);
    tp_sink_interval(s, main, train, 0, 1 * S + x, 8 * S + x);
    tp_sink_interval(s, main, fwd, 1, 1 * S + x, 4 * S + x);
    tp_sink_interval(s, main, mine, 0, 8 * S + x, 9 * S + x);
    tp_sink_interval(s, comm, red, 0, 2 * S + x, 5 * S + x);
    tp_sink_mark(s, main, TP_MARK_STEP, 10 * S + x + (uint64_t)(idle * S), 0);
}

void rank_runs_window(tp_sink *s, uint32_t thread, int rank, uint64_t a, uint64_t b)
{
    tp_ops_window *w = calloc(1, sizeof *w);
    *w = (tp_ops_window){.thread = thread,
                         .pid = 100 + rank,
                         .tid = 1000 + rank,
                         .reason = 1,
                         .steps = 1,
                         .start_ns = (int64_t)a,
                         .end_ns = (int64_t)b,
                         .alloc_start = -1};
    tp_sink_ops_window(s, w);
}

tp_sink *rank_runs_sink(void)
{
    tp_sink *s = tp_sink_new(0);
    tp_sink_meta(s, "command", "train");
    return s;
}

void rank_runs_write(const char *path, tp_sink *s) { fx_write_sink(path, s, "node1"); }

void rank_runs_write_idle(const char *path, const double *extra, int n, double idle)
{
    tp_sink *s = rank_runs_sink();
    for (int r = 0; r < n; r++)
        rank_runs_regions(s, r, extra[r], idle, NULL);
    rank_runs_write(path, s);
}

tp_ranks rank_runs_build(const char *path, bool raw)
{
    char err[256];
    tp_run *run = tp_run_open(path, err, sizeof err);
    assert_non_null(run);
    run->raw_only = raw;
    tp_ranks r;
    assert_true(tp_ranks_from_rows(run, &r, err, sizeof err));
    tp_run_close(run);
    return r;
}

const char *rank_runs_cause_words(const tp_rank_row *row)
{
    static char text[TP_CAUSE_MAX];
    static const tp_run_inventory no_agents = {0};
    tp_straggler_cause_text(text, sizeof text, &no_agents, row);
    return text;
}
