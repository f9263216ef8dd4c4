/* cmd_export.c: `trainprof export`: a run file as a trace, CSV or JSON. */
#include <stdio.h>
#include <string.h>

#include "analyze/summary.h"
#include "analyze/verdicts.h"
#include "commands.h"
#include "render/export.h"
#include "render/report.h"
#include "store/inputs.h"
#include "util/atomic_file.h"
#include "util/options.h"
#include "util/log.h"

static const char usage[] =
    "usage: trainprof export [--format chrome|csv|json|folded] [-o FILE [--force]] RUN_FILE...\n"
    "\n"
    "Writes a run file in another format, streamed (memory stays flat):\n"
    "  chrome  Trace Event Format JSON for Perfetto UI and chrome://tracing: a track per\n"
    "          process and thread with regions as nested slices, device (CUDA event)\n"
    "          times on a track beside their thread's, steps and epochs as instants,\n"
    "          counter tracks for each agent's and each GPU's metrics (default)\n"
    "  csv     one row per sample: t_s,agent,metric,labels,value\n"
    "  json    the report, as `trainprof report --json`\n"
    "  folded  the sampled Python stacks, one line per stack and phase with its count\n"
    "          (flamegraph.pl, speedscope, inferno): PHASE;frame;...;frame COUNT\n"
    "Several files (one per node of a job) are merged first, as `trainprof merge`\n"
    "would.\n";

typedef enum { FMT_CHROME, FMT_CSV, FMT_JSON, FMT_FOLDED } export_format;

static bool write_export(FILE *out, tp_run *run, export_format f, char *err, size_t cap)
{
    if (f == FMT_CHROME)
        return tp_export_chrome(out, run, err, cap);
    if (f == FMT_CSV)
        return tp_export_csv(out, run, err, cap);
    if (f == FMT_FOLDED)
        return tp_export_folded(out, run, err, cap);
    tp_summary s;
    if (!tp_summary_build(run, &s, err, cap) || !tp_summary_add_stacks(&s, err, cap) ||
        !tp_summary_add_course(&s, err, cap)) {
        tp_summary_free(&s);
        return false;
    }
    tp_verdicts v;
    tp_verdicts_build(&s, &v);
    tp_report_json(out, &s, &v);
    tp_verdicts_free(&v);
    tp_summary_free(&s);
    return true;
}

typedef struct export_job {
    tp_run *run;
    export_format format;
} export_job;

static bool write_job(FILE *out, void *ctx, char *err, size_t cap)
{
    export_job *job = ctx;
    return write_export(out, job->run, job->format, err, cap);
}

int cmd_export(int argc, char **argv)
{
    static const char *const formats[] = {"chrome", "csv", "json", "folded", NULL};
    int format = FMT_CHROME;
    const char *output = NULL;
    bool force = false;
    const tp_option options[] = {
        TP_CHOICE('f', "format", "FORMAT", "chrome, csv, json or folded", &format, formats),
        TP_STRING('o', "output", "FILE", "write to FILE (default: standard output)", &output),
        TP_FLAG(0, "force", "overwrite FILE if it exists", &force),
    };
    const tp_command cmd = {.name = "export",
                            .usage = usage,
                            TP_OPTION_TABLE(options),
                            .min_operands = 1,
                            .max_operands = -1,
                            .operands = "a run file"};
    int first;
    int rc = tp_options_parse(&cmd, argc, argv, &first);
    if (rc != TP_OPTIONS_OK)
        return rc;
    int refused = output
                      ? tp_output_refused("export", output, force,
                                          (const char *const *)argv + first, (size_t)(argc - first))
                      : 0; /* before any reading */
    if (refused)
        return refused;
    char err[1024];
    tp_inputs in;
    tp_run *run = NULL;
    if (!tp_inputs_open(&in, "export", argv + first, (size_t)(argc - first), false, false, err,
                        sizeof err) ||
        !(run = tp_run_open(in.path, err, sizeof err))) {
        tp_inputs_done(&in);
        tp_error("%s", err);
        return 2;
    }
    tp_inputs_name_run(&in, run);
    if (format != FMT_JSON && tp_run_summary_only(run)) {
        tp_error("export: %s holds summaries only (merge --summary): its trace and samples are "
                 "in the node files it was merged from",
                 run->path);
        tp_run_close(run);
        tp_inputs_done(&in);
        return 2;
    }
    if (output) {
        export_job job = {run, (export_format)format};
        rc = tp_write_file_atomically("export", output, force, (const char *const *)argv + first,
                                      (size_t)(argc - first), write_job, &job);
    } else {
        rc = write_export(stdout, run, (export_format)format, err, sizeof err) ? 0 : 1;
        if (rc)
            tp_error("%s", err);
        if (fflush(stdout) != 0)
            rc = 1;
    }
    tp_run_close(run);
    tp_inputs_done(&in);
    return rc;
}
