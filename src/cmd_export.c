/* cmd_export.c: `trainprof export`: a run file as a trace, CSV or JSON. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/summary.h"
#include "analyze/verdicts.h"
#include "commands.h"
#include "render/export_parquet.h"
#include "render/export.h"
#include "render/report.h"
#include "render/units.h"
#include "store/inputs.h"
#include "util/atomic_file.h"
#include "util/counted_file.h"
#include "util/options.h"
#include "util/log.h"

static const char usage[] =
    "usage: trainprof export [--format chrome|csv|json|folded|steps] [-o FILE [--force]] "
    "RUN_FILE...\n"
    "       trainprof export --format parquet -o DIR [--force] RUN_FILE...\n"
    "\n"
    "Writes a run file in another format, streamed (memory stays flat):\n"
    "  chrome  Trace Event Format JSON for Perfetto UI and chrome://tracing: a track per\n"
    "          process and thread with regions as nested slices, device (CUDA event)\n"
    "          times on a track beside their thread's, steps and epochs as instants,\n"
    "          counter tracks for each agent's and each GPU's metrics (default)\n"
    "  csv     one row per sample: t_s,agent,metric,labels,value\n"
    "  json    the report, as `trainprof report --json`\n"
    "  steps   each rank's steps by phase, one JSON object a line: its steps in at most\n"
    "          1,000 groups of consecutive steps (each one step on shorter runs), their\n"
    "          first step, mean seconds a step and per phase, steps/s and the GPU's\n"
    "          utilization (what record --log-to sends to a tracker)\n"
    "  folded  the sampled Python stacks, one line per stack and phase with its count\n"
    "          (flamegraph.pl, speedscope, inferno): PHASE;frame;...;frame COUNT\n"
    "  parquet the tables (samples, regions, marks, steps, summaries) as Parquet files\n"
    "          under DIR, partitioned by agent and rank, for DuckDB, Spark, Trino or\n"
    "          pandas (docs/run-file.md); written by Apache Arrow's pyarrow, which\n"
    "          the Python that runs trainprof's package must have\n"
    "Several files (one per node of a job) are merged first, as `trainprof merge`\n"
    "would (for parquet, each file's rows go into the same directories).\n";

typedef enum { FMT_CHROME, FMT_CSV, FMT_JSON, FMT_FOLDED, FMT_PARQUET, FMT_STEPS } export_format;

#define TP_EXPORT_MAX_BYTES_DEFAULT (1ull << 30)

/* Writes the export through a counting stream, bounded by b (its count
 * pointed at here). */
static bool write_bounded(FILE *out, tp_run *run, export_format f, tp_export_budget *b, char *err,
                          size_t cap)
{
    uint64_t written = 0;
    b->written = &written;
    FILE *counted = tp_counted_file(out, &written);
    if (!counted) {
        snprintf(err, cap, "export: out of memory");
        return false;
    }
    bool ok = f == FMT_CHROME  ? tp_export_chrome(counted, run, b, err, cap)
              : f == FMT_CSV   ? tp_export_csv(counted, run, b, err, cap)
              : f == FMT_STEPS ? tp_export_steps(counted, run, b, err, cap)
                               : tp_export_folded(counted, run, b, err, cap);
    if (fclose(counted) != 0 && ok) {
        snprintf(err, cap, "export: writing failed");
        ok = false;
    }
    b->written = NULL;
    return ok;
}

static bool write_export(FILE *out, tp_run *run, export_format f, tp_export_budget *b, char *err,
                         size_t cap)
{
    if (f != FMT_JSON)
        return write_bounded(out, run, f, b, err, cap);
    tp_summary s;
    if (!tp_summary_build(run, &s, err, cap) || !tp_summary_add(&s, TP_PARTS_ALL, err, cap)) {
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
    tp_export_budget *budget;
    bool input_failed; /* the run file could not be read: bad input, as report says */
} export_job;

static bool write_job(FILE *out, void *ctx, char *err, size_t cap)
{
    export_job *job = ctx;
    bool ok = write_export(out, job->run, job->format, job->budget, err, cap);
    job->input_failed = !ok;
    return ok;
}

/* "1G", "512M", "64k", "1000000" (bytes): false where it is none of those
 * or under 64 KiB. */
static bool parse_size(const char *text, uint64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    double unit = *end == 'k' || *end == 'K'   ? 1024.0
                  : *end == 'm' || *end == 'M' ? 1048576.0
                  : *end == 'g' || *end == 'G' ? 1073741824.0
                                               : 1.0;
    if (unit > 1)
        end++;
    if (end == text || *end || errno || !(v * unit >= 65536) || v * unit > 1e15)
        return false;
    *out = (uint64_t)(v * unit);
    return true;
}

/* The export of run written to output (atomically), or to standard
 * output; what --max-bytes left out said. Returns the exit status. */
static int write_out(tp_run *run, export_format format, const char *output, bool force,
                     char **inputs, size_t ninputs, tp_export_budget *budget)
{
    int rc;
    char err[1024];
    if (output) {
        export_job job = {run, format, budget, false};
        rc = tp_write_file_atomically("export", output, force, (const char *const *)inputs, ninputs,
                                      write_job, &job);
        if (rc == 1 && job.input_failed) /* a malformed run file: 2, as every reader */
            rc = 2;
    } else {
        rc = write_export(stdout, run, format, budget, err, sizeof err) ? 0 : 2;
        if (rc)
            tp_error("%s", err);
        if (fflush(stdout) != 0 && !rc) /* the output failed: 1 */
            rc = 1;
    }
    if (budget->cut) {
        char size[32];
        tp_format_value(size, sizeof size, "bytes", (double)budget->max_bytes);
        tp_warn("export: the output reached --max-bytes (%s): %llu %s left out (the output is "
                "whole up to there); raise --max-bytes, or export a shorter run",
                size, (unsigned long long)budget->cut,
                format == FMT_CHROME  ? "events"
                : format == FMT_CSV   ? "samples"
                : format == FMT_STEPS ? "lines"
                                      : "stacks");
    }
    return rc;
}

int cmd_export(int argc, char **argv)
{
    static const char *const formats[] = {"chrome",  "csv",   "json", "folded",
                                          "parquet", "steps", NULL};
    int format = FMT_CHROME;
    const char *output = NULL, *max_text = NULL;
    bool force = false;
    const tp_option options[] = {
        TP_CHOICE('f', "format", "FORMAT", "chrome, csv, json, folded, parquet or steps", &format,
                  formats),
        TP_STRING('o', "output", "FILE", "write to FILE (default: standard output)", &output),
        TP_FLAG(0, "force", "overwrite FILE if it exists", &force),
        TP_STRING(0, "max-bytes", "SIZE",
                  "write at most about SIZE (64K to 1000T, suffix K, M or G;\n"
                  "default: 1G, what a trace viewer opens); the rest is left\n"
                  "out, the output still whole, and a warning says what",
                  &max_text),
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
    if (format == FMT_PARQUET)
        return tp_export_parquet(output, argv + first, (size_t)(argc - first), force);
    tp_export_budget budget = {NULL, TP_EXPORT_MAX_BYTES_DEFAULT, 0};
    if (max_text && !parse_size(max_text, &budget.max_bytes)) {
        tp_error("export: --max-bytes must be a size of 64K or more, such as 500M or 2G (got "
                 "'%s')",
                 max_text);
        return 2;
    }
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
    rc = write_out(run, (export_format)format, output, force, argv + first, (size_t)(argc - first),
                   &budget);
    tp_run_close(run);
    tp_inputs_done(&in);
    return rc;
}
