/* cmd_html.c: `trainprof html`: the run as one self-contained HTML page. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "analyze/summary.h"
#include "commands.h"
#include "render/html.h"
#include "store/merge.h"
#include "util/atomic_file.h"
#include "util/log.h"

static const char usage[] =
    "usage: trainprof html RUN_FILE... [-o FILE] [--force]\n"
    "\n"
    "Writes one self-contained HTML page (no network, no script, no external file):\n"
    "the run, the verdicts, where step time goes per rank, step time over the run with\n"
    "its phases, epoch times, a plot of every system metric, and the report's tables.\n"
    "Several files (one per node of a job) are merged first, as `trainprof merge`\n"
    "would; name the page with -o then.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE  the page to write (default: RUN_FILE with .html)\n"
    "      --force        overwrite FILE if it exists\n"
    "  -h, --help         show this help\n";

static bool write_page(FILE *out, void *ctx, char *err, size_t cap)
{
    return tp_html_write(out, ctx, err, cap);
}

int cmd_html(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"force", no_argument, NULL, 'F'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *output = NULL;
    bool force = false;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        if (c == 'o')
            output = optarg;
        else if (c == 'F')
            force = true;
        else if (c == 'h') {
            fputs(usage, stdout);
            return 0;
        } else {
            tp_error("html: bad option %s (see trainprof html --help)", argv[optind - 1]);
            return 2;
        }
    }
    if (argc - optind < 1) {
        tp_error("html: expected a run file (see trainprof html --help)");
        return 2;
    }
    if (argc - optind > 1 && !output) {
        tp_error("html: name the page with -o when reading several run files");
        return 2;
    }
    const char *path = argv[optind];
    char def[4200];
    if (!output) {
        size_t len = strlen(path);
        size_t stem = len > 3 && strcmp(path + len - 3, ".db") == 0 ? len - 3 : len;
        snprintf(def, sizeof def, "%.*s.html", (int)stem, path);
        output = def;
    }
    char err[1024];
    tp_summary s;
    tp_inputs in;
    if (!tp_inputs_open(&in, "html", argv + optind, (size_t)(argc - optind), err, sizeof err) ||
        !tp_summary_load(in.path, &s, err, sizeof err)) {
        tp_inputs_done(&in);
        tp_error("%s", err);
        return 2;
    }
    tp_inputs_name_run(&in, s.run);
    int rc = tp_write_file_atomically("html", output, force, write_page, &s);
    tp_summary_close(&s);
    tp_inputs_done(&in);
    if (rc == 0)
        fprintf(stderr, "trainprof: wrote %s\n", output);
    return rc;
}
