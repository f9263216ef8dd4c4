/* cmd_export.c: `trainprof export`: a run file as a trace, CSV or JSON. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/summary.h"
#include "commands.h"
#include "render/export.h"
#include "render/report.h"
#include "util/log.h"

static const char usage[] =
    "usage: trainprof export [--format chrome|csv|json] [-o FILE [--force]] RUN_FILE\n"
    "\n"
    "Writes a run file in another format, streamed (memory stays flat):\n"
    "  chrome  Trace Event Format JSON for Perfetto UI and chrome://tracing: a track per\n"
    "          process and thread with regions as nested slices, steps and epochs as\n"
    "          instants, counter tracks for each agent's and each GPU's metrics (default)\n"
    "  csv     one row per sample: t_s,agent,metric,labels,value\n"
    "  json    the report, as `trainprof report --json`\n"
    "\n"
    "options:\n"
    "  -f, --format FORMAT  chrome, csv or json\n"
    "  -o, --output FILE    write to FILE (default: standard output)\n"
    "      --force          overwrite FILE if it exists\n"
    "  -h, --help           show this help\n";

typedef enum { FMT_CHROME, FMT_CSV, FMT_JSON } export_format;

static bool write_export(FILE *out, tp_run *run, export_format f, char *err, size_t cap)
{
    if (f == FMT_CHROME)
        return tp_export_chrome(out, run, err, cap);
    if (f == FMT_CSV)
        return tp_export_csv(out, run, err, cap);
    tp_summary s;
    if (!tp_summary_build(run, &s, err, cap))
        return false;
    tp_report_json(out, &s);
    tp_summary_free(&s);
    return true;
}

/* Writes into FILE.tmp-PID and renames it over FILE, so that a failed export
 * never leaves a half-written file where a good one was asked for. */
static int export_to_file(const char *path, bool force, tp_run *run, export_format f)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && (S_ISDIR(sb.st_mode) || !force)) {
        tp_error(S_ISDIR(sb.st_mode) ? "export: %s is a directory"
                                     : "export: %s already exists (use --force to overwrite it)",
                 path);
        return 1;
    }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp-%d", path, (int)getpid());
    FILE *out = fopen(tmp, "w");
    if (!out) {
        tp_error("export: cannot create %s: %s", path, strerror(errno));
        return 1;
    }
    char err[1024];
    bool ok = write_export(out, run, f, err, sizeof err);
    if (fclose(out) != 0 && ok) {
        snprintf(err, sizeof err, "export: writing %s failed: %s", path, strerror(errno));
        ok = false;
    }
    if (ok && rename(tmp, path) != 0) {
        snprintf(err, sizeof err, "export: cannot write %s: %s", path, strerror(errno));
        ok = false;
    }
    if (!ok) {
        unlink(tmp);
        tp_error("%s", err);
        return 1;
    }
    return 0;
}

int cmd_export(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},
        {"force", no_argument, NULL, 'F'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    export_format format = FMT_CHROME;
    const char *output = NULL;
    bool force = false;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "f:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (strcmp(optarg, "chrome") == 0)
                format = FMT_CHROME;
            else if (strcmp(optarg, "csv") == 0)
                format = FMT_CSV;
            else if (strcmp(optarg, "json") == 0)
                format = FMT_JSON;
            else {
                tp_error("export: unknown format '%s' (chrome, csv or json)", optarg);
                return 2;
            }
            break;
        case 'o': output = optarg; break;
        case 'F': force = true; break;
        case 'h': fputs(usage, stdout); return 0;
        default:
            tp_error("export: bad option %s (see trainprof export --help)", argv[optind - 1]);
            return 2;
        }
    }
    if (argc - optind != 1) {
        tp_error("export: expected one run file (see trainprof export --help)");
        return 2;
    }
    char err[1024];
    tp_run *run = tp_run_open(argv[optind], err, sizeof err);
    if (!run) {
        tp_error("%s", err);
        return 2;
    }
    int rc;
    if (output) {
        rc = export_to_file(output, force, run, format);
    } else {
        rc = write_export(stdout, run, format, err, sizeof err) ? 0 : 1;
        if (rc)
            tp_error("%s", err);
        if (fflush(stdout) != 0)
            rc = 1;
    }
    tp_run_close(run);
    return rc;
}
