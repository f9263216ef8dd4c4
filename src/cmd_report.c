/* cmd_report.c: `trainprof report`: a run file's figures as text or JSON. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/summary.h"
#include "commands.h"
#include "render/report.h"
#include "store/merge.h"
#include "util/cli.h"
#include "util/log.h"
#include "util/utf8.h"

static const char usage[] =
    "usage: trainprof report [--json] [--all] [--whole-run] RUN_FILE...\n"
    "\n"
    "Shows what a run file holds: the run (command, duration, host, exit status),\n"
    "then each system metric's mean, p5, p50, p95 and max per agent and per GPU,\n"
    "the sources that were unavailable, the Timings per rank, the ranks side by\n"
    "side (stragglers) and the verdicts. System metrics are figures over each\n"
    "agent's training steps (its first step mark to its last), which the verdicts\n"
    "judge, so that start-up and shutdown don't water them down; the whole run's\n"
    "max stands beside them. An agent that marked no steps shows its whole run.\n"
    "Several files (one per node of a job) are merged first, as `trainprof merge`\n"
    "would; when each holds its stored summary, only what that summary leaves to\n"
    "compute is copied (seconds, even for a day of many nodes). With more than 4\n"
    "agents, their system metrics are one table across agents (median, lowest,\n"
    "highest: every GPU is compared); with more than 8 ranks, the per-rank tables\n"
    "show 8: the 6 with the most own work per step, the median rank and the rank\n"
    "with the least (the ranks side by side still list them all).\n"
    "\n"
    "options:\n"
    "  --json       one JSON object instead of tables (every rank)\n"
    "  --all        every agent's and every rank's own tables\n"
    "  --whole-run  system metrics over the whole run, start-up and end included\n"
    "               (--json has both: each series' figures and its \"in_steps\")\n"
    "  -h, --help   show this help\n"
    "\n"
    "exit status: 0 on success, 2 for bad arguments or a file that is not a\n"
    "readable trainprof run file.\n";

int cmd_report(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"all", no_argument, NULL, 'a'},
        {"whole-run", no_argument, NULL, 'w'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool json = false, all = false, whole_run = false;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == 'j') {
            json = true;
        } else if (c == 'a') {
            all = true;
        } else if (c == 'w') {
            whole_run = true;
        } else if (c == 'h') {
            fputs(usage, stdout);
            return 0;
        } else {
            return tp_cli_option_error("report", argv, c);
        }
    }
    if (argc - optind < 1) {
        tp_error("report: expected a run file (see trainprof report --help)");
        return 2;
    }
    char err[1024];
    tp_summary s;
    tp_inputs in;
    if (!tp_inputs_open(&in, "report", argv + optind, (size_t)(argc - optind), true, false, err,
                        sizeof err) ||
        !tp_summary_load(in.path, &s, err, sizeof err)) {
        tp_inputs_done(&in);
        tp_error("%s", err);
        return 2;
    }
    tp_inputs_name_run(&in, s.run);
    if (json) {
        tp_report_json(stdout, &s);
    } else { /* text from the run (names, commands) must not drive the terminal */
        char *text = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&text, &len);
        if (mem) {
            tp_report_text(mem, &s, all, whole_run);
            fclose(mem);
            tp_text_write_safe(stdout, text);
        }
        free(text);
    }
    tp_summary_close(&s);
    tp_inputs_done(&in);
    return fflush(stdout) == 0 ? 0 : 1;
}
