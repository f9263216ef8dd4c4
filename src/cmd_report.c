/* cmd_report.c: `trainprof report`: a run file's figures as text or JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/summary.h"
#include "analyze/verdicts.h"
#include "commands.h"
#include "render/report.h"
#include "store/inputs.h"
#include "util/options.h"
#include "util/log.h"
#include "util/utf8.h"

static const char usage[] =
    "usage: trainprof report [--json] [--all] [--whole-run] RUN_FILE...\n"
    "\n"
    "Shows what a run file holds: the run (command, duration, host, exit status),\n"
    "then the answer in short (the steps, their rate, the split of a step, and the\n"
    "main verdict with the one thing to try), then each system metric's mean, p5,\n"
    "p50, p95 and max per agent and per GPU (series that stayed zero fold into a\n"
    "line; --all shows them), the sources that were unavailable, the Timings per\n"
    "rank, the ranks side by side (stragglers), what the code did inside the\n"
    "phases (sampled stacks) and every verdict. System metrics are figures over each\n"
    "agent's training steps (its first step mark to its last), which the verdicts\n"
    "judge, so that start-up and shutdown don't water them down; the whole run's\n"
    "max stands beside them. An agent that marked no steps shows its whole run.\n"
    "Several files (one per node of a job) are merged first, as `trainprof merge`\n"
    "would; when each holds its stored summary, only what that summary leaves to\n"
    "compute is copied (seconds, even for a day of many nodes). With more than 4\n"
    "agents, their system metrics are one table across agents (median, lowest,\n"
    "highest: every GPU is compared); with more than 8 ranks, the per-rank tables\n"
    "show 8: the 6 with the most own work per step, the median rank and the rank\n"
    "with the least (the ranks side by side still list them all).\n";

static const char epilogue[] =
    "exit status: 0 on success, 2 for bad arguments or a file that is not a\n"
    "readable trainprof run file.\n";

int cmd_report(int argc, char **argv)
{
    bool json = false, all = false, whole_run = false;
    const tp_option options[] = {
        TP_FLAG(0, "json", "one JSON object instead of tables (every rank)", &json),
        TP_FLAG(0, "all",
                "every agent's and every rank's own tables, and the series that never moved", &all),
        TP_FLAG(0, "whole-run",
                "system metrics over the whole run, start-up and end included\n"
                "(--json has both: each series' figures and its \"in_steps\")",
                &whole_run),
    };
    const tp_command cmd = {.name = "report",
                            .usage = usage,
                            TP_OPTION_TABLE(options),
                            .min_operands = 1,
                            .max_operands = -1,
                            .operands = "a run file",
                            .epilogue = epilogue};
    int first;
    int parsed = tp_options_parse(&cmd, argc, argv, &first);
    if (parsed != TP_OPTIONS_OK)
        return parsed;
    char err[1024];
    tp_summary s;
    tp_inputs in;
    if (!tp_inputs_open(&in, "report", argv + first, (size_t)(argc - first), true, false, err,
                        sizeof err) ||
        !tp_summary_load(in.path, TP_PARTS_ALL, &s, err, sizeof err)) {
        tp_inputs_done(&in);
        tp_error("%s", err);
        return 2;
    }
    tp_summary_name_inputs(&s, &in);
    tp_summary_source_note(stderr, "report", &s.inv);
    tp_verdicts v;
    tp_verdicts_build(&s, &v);
    if (json) {
        tp_report_json(stdout, &s, &v);
    } else { /* text from the run (names, commands) must not drive the terminal */
        char *text = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&text, &len);
        if (mem) {
            tp_report_text(mem, &s, &v, all, whole_run);
            fclose(mem);
            tp_text_write_safe(stdout, text);
        }
        free(text);
    }
    tp_verdicts_free(&v);
    tp_summary_close(&s);
    tp_inputs_done(&in);
    return fflush(stdout) == 0 ? 0 : 1;
}
