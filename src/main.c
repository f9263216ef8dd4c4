/* main.c: the trainprof program: a table of subcommands. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "trainprof_version.h"
#include "util/log.h"

typedef struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} subcommand;

static const subcommand subcommands[] = {
    {"record", cmd_record, "run a training command and record it into a run file"},
    {"report", cmd_report, "show a run file's figures as tables or JSON"},
    {"html", cmd_html, "write a run file as one self-contained HTML page with plots"},
    {"merge", cmd_merge, "join the run files of several nodes into one"},
    {"summarize", cmd_summarize, "store the summary a run file lacks (a killed recorder)"},
    {"compare", cmd_compare, "scalability across runs: speed-up, efficiency, energy"},
    {"bottleneck", cmd_bottleneck, "actual rate vs training and input limits, in three runs"},
    {"iobench", cmd_iobench, "read throughput and IOPS of the storage under a path"},
    {"top", cmd_top, "a live view of this machine and of the running recording"},
    {"capture", cmd_capture, "ask a live recording for a window of operators and kernels"},
    {"serve", cmd_serve, "serve this machine's metrics for Prometheus, with no recording"},
    {"export", cmd_export, "write a run file as a Perfetto/Chrome trace, CSV or JSON"},
    {"mcp", cmd_mcp, "a Model Context Protocol server for assistants (stdio)"},
};

static void print_usage(FILE *out)
{
    fprintf(out, "usage: trainprof COMMAND [options]\n\n"
                 "trainprof tells why training is slow: it records system metrics of a\n"
                 "training run into one SQLite file and reports on them.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(out, "  %-11s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out,
            "\noptions:\n  -h, --help     show this help\n  -V, --version  show the version\n"
            "\nRun 'trainprof COMMAND --help' for a command's options.\n"
            "example: trainprof record -o run.db -- python train.py && trainprof report run.db\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        print_usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
        printf("trainprof %s\n", TRAINPROF_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (strcmp(cmd, subcommands[i].name) == 0)
            return subcommands[i].run(argc - 1, argv + 1);
    tp_error("unknown command '%s' (see trainprof --help)", cmd);
    return 2;
}
