/* merge_inputs.c: what each input of a merge holds, read before copying. */
#include "store/merge_inputs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/run_keys.h"
#include "store/reader.h"
#include "store/reader_stream.h"
#include "store/schema.h"

/* Collects the distinct ranks of run's threads into info. */
static void input_ranks(tp_run *run, tp_merge_input *info)
{
    tp_run_thread *threads = NULL;
    size_t n = 0;
    char err[256];
    if (!tp_run_threads(run, &threads, &n, err, sizeof err))
        return;
    info->ranks = calloc(n ? n : 1, sizeof *info->ranks);
    for (size_t i = 0; info->ranks && i < n; i++) {
        bool seen = false;
        for (size_t k = 0; k < info->nranks && !seen; k++)
            seen = info->ranks[k] == threads[i].rank;
        if (!seen)
            info->ranks[info->nranks++] = threads[i].rank;
    }
    free(threads);
}

bool tp_merge_any_foreign(const tp_merge_input *info, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (info[i].summary_foreign)
            return true;
    return false;
}

bool tp_merge_summaries_carry_over(const char *const *inputs, const tp_merge_input *info, size_t n,
                                   char *why, size_t cap)
{
    for (size_t i = 0; i < n; i++) {
        if (info[i].version < TP_SCHEMA_SUMMARY) {
            snprintf(why, cap, "%s has schema %d, which stores no summary", inputs[i],
                     info[i].version);
            return false;
        }
        if (!info[i].summarized) {
            snprintf(why, cap,
                     "%s holds no stored summary (its recorder was killed?): store it with "
                     "`trainprof summarize`",
                     inputs[i]);
            return false;
        }
        for (size_t j = 0; j < i; j++)
            for (size_t a = 0; a < info[i].nranks; a++)
                for (size_t b = 0; b < info[j].nranks; b++)
                    if (info[i].ranks[a] == info[j].ranks[b]) {
                        snprintf(why, cap,
                                 "rank %d is in both %s and %s: its figures can't be combined "
                                 "without the rows",
                                 info[i].ranks[a], inputs[j], inputs[i]);
                        return false;
                    }
    }
    return true;
}

/* What input run holds, by its schema and its tables: whether it is
 * summarized, and which summary tables and columns it has. */
static void input_tables(tp_run *run, tp_merge_input *in)
{
    in->summary_foreign = run->summary_foreign;
    in->summarized = run->schema_version >= TP_SCHEMA_SUMMARY && run->settings.summarized;
    in->version = run->schema_version;
    in->plots = in->summarized && run->settings.plots;
    in->series_steps = in->summarized && tp_run_has_table(run, "summary_series_steps");
    in->steps_window = in->summarized && tp_run_has_table(run, "summary_steps_window");
    in->rank_gpu = in->summarized && tp_run_has_column(run, "summary_rank", "gpu");
    in->rank_truth = in->summarized && tp_run_has_column(run, "summary_rank", "comm_device_s");
    in->rank_cpu_wait =
        in->summarized && tp_run_has_column(run, "summary_rank", "cpu_wait_percent");
    in->rank_measured = in->summarized && tp_run_has_column(run, "summary_rank", "measured_steps");
    in->rank_latest_measured =
        in->summarized && tp_run_has_column(run, "summary_rank_latest", "measured_steps");
    in->batches = in->summarized && tp_run_has_column(run, "summary_step", "batches");
    in->thread_cuda = tp_run_has_table(run, "thread_cuda");
    in->thread_device = tp_run_has_table(run, "thread_device");
    in->stack_counts = in->summarized && tp_run_has_column(run, "summary_stack", "samples");
    in->step_pauses = tp_run_has_column(run, "summary_step_phase", "pauses");
    in->step_times = tp_run_has_column(run, "summary_step_phase", "start_ns");
    in->ops = tp_run_has_table(run, "op_window");
    in->step_profiled = tp_run_has_column(run, "summary_step", "profiled");
    in->step_warmup = tp_run_has_column(run, "summary_step", "warmup_samples");
    in->stall_between = tp_run_has_column(run, "summary_stall", "between_steps");
    in->stall_gpu = tp_run_has_column(run, "summary_stall", "gpu");
    in->stall_blocked = tp_run_has_column(run, "summary_stall", "blocked");
    in->stall_thread_blocked = tp_run_has_column(run, "summary_stall_thread", "blocked");
    in->timing_profiled = tp_run_has_column(run, "summary_timing", "in_profiled_s");
    in->timing_warmup = tp_run_has_column(run, "summary_timing", "in_warmup_s");
    in->stalls = in->summarized && run->settings.stalls_stored &&
                 tp_run_has_table(run, "summary_stall_thread");
    in->rank_latest = in->summarized && tp_run_has_table(run, "summary_rank_latest");
    in->gpu_slowdowns = in->summarized && tp_run_has_table(run, "summary_gpu");
    in->own = in->summarized && tp_run_has_table(run, "summary_own");
    in->withins = in->summarized && tp_run_has_table(run, "summary_region_within");
}

bool tp_merge_read_inputs(const char *const *inputs, size_t n, tp_merge_input *info, bool force,
                          char *err, size_t cap)
{
    for (size_t i = 0; i < n; i++) {
        tp_run *run = tp_run_open(inputs[i], err, cap);
        if (!run)
            return false;
        const char *wall = tp_run_meta_get(run, TP_META_START_WALL_NS);
        const char *cmd = tp_run_meta_get(run, TP_META_COMMAND);
        const char *job = tp_run_meta_get(run, TP_META_ENV "SLURM_JOB_ID");
        if (!job)
            job = tp_run_meta_get(run, TP_META_ENV "TORCHELASTIC_RUN_ID");
        bool merged = run->settings.merged;
        input_tables(run, &info[i]);
        input_ranks(run, &info[i]);
        /* a time that is no time (a damaged or forged file): said, not shifted by */
        bool wall_valid = run->settings.start_known; /* parsed at the opening */
        info[i].start_wall_ns = run->settings.start_wall_ns;
        char wall_text[48]; /* the meta's text goes with the run closed below */
        snprintf(wall_text, sizeof wall_text, "%s", wall ? wall : "");
        info[i].uncertainty_ns = run->settings.clock_uncertainty_ns;
        snprintf(info[i].command, sizeof info[i].command, "%s", cmd ? cmd : "");
        snprintf(info[i].job, sizeof info[i].job, "%s", job ? job : "");
        snprintf(info[i].agent, sizeof info[i].agent, "%s",
                 run->nagents ? run->agents[0].name : "");
        tp_run_close(run);
        if (merged) {
            snprintf(err, cap, "merge: %s is already a merged run; merge the node files instead",
                     inputs[i]);
            return false;
        }
        if (!wall) {
            snprintf(err, cap, "merge: %s has no start time (a recording killed at once?)",
                     inputs[i]);
            return false;
        }
        if (!wall_valid) {
            snprintf(err, cap,
                     "merge: %s has a start time that is no time (meta start_wall_ns = %s): "
                     "a damaged file",
                     inputs[i], wall_text);
            return false;
        }
        for (size_t k = 0; k < i; k++)
            if (strcmp(info[k].agent, info[i].agent) == 0) {
                snprintf(err, cap,
                         "merge: %s and %s were both recorded as agent \"%.60s\": a merged run "
                         "tells its nodes apart by agent name (record each with --agent NAME)",
                         inputs[k], inputs[i], info[i].agent);
                return false;
            }
        if (i > 0 && !force && strcmp(info[i].command, info[0].command) != 0) {
            snprintf(err, cap,
                     "merge: %s ran another command than %s (use --force to merge anyway)",
                     inputs[i], inputs[0]);
            return false;
        }
        if (i > 0 && !force && strcmp(info[i].job, info[0].job) != 0) {
            snprintf(err, cap,
                     "merge: %s belongs to another job than %s (use --force to merge anyway)",
                     inputs[i], inputs[0]);
            return false;
        }
    }
    return true;
}

void tp_merge_free_inputs(tp_merge_input *info, size_t n)
{
    for (size_t i = 0; info && i < n; i++)
        free(info[i].ranks);
    free(info);
}
