/* cmd_html.c: `trainprof html`: the run as one self-contained HTML page. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/page_facts.h"
#include "analyze/scaling.h"
#include "analyze/compare_job.h"
#include "analyze/summary.h"
#include "analyze/verdicts.h"
#include "commands.h"
#include "analyze/fleet_plots.h"
#include "analyze/fleet_envelopes.h"
#include "render/compare.h"
#include "render/html.h"
#include "render/report.h"
#include "store/inputs.h"
#include "util/atomic_file.h"
#include "util/options.h"
#include "util/log.h"

static const char usage[] =
    "usage: trainprof html RUN_FILE... [-o FILE] [--force] [--all]\n"
    "       trainprof html --compare RUN_FILE RUN_FILE... -o FILE [--force]\n"
    "\n"
    "Writes one self-contained HTML page (no network, no script, no external file):\n"
    "the run, the answer in short (the steps and the verdict that leads), every verdict\n"
    "with its evidence, where step time goes per rank, step time over the run with its\n"
    "phases, epoch times, a plot of every system metric (two abreast on a wide window;\n"
    "those that stayed zero named in a line), and the report's tables.\n"
    "Several files (one per node of a job) are read as one run, as `trainprof merge`\n"
    "would join them (from the summaries and plots each recorder stored, when all\n"
    "have them: seconds for a day of many nodes); name the page with -o then. With\n"
    "--compare and two files, A and B: `trainprof compare`'s comparison of the two\n"
    "runs, with their phases as bars; with more, the files are runs of one training\n"
    "at different scales: the page shows `trainprof compare`'s table and charts of\n"
    "samples/s, efficiency, time per epoch and energy per sample.\n";

typedef struct scaling_job {
    tp_scale_row *rows;
    size_t n;
} scaling_job;

typedef struct page_job {
    const tp_summary *summary;
    const tp_verdicts *verdicts;
    const tp_page_facts *page;
    bool all;
} page_job;

static bool write_page(FILE *out, void *ctx, char *err, size_t cap)
{
    const page_job *job = ctx;
    return tp_html_write(out, job->summary, job->verdicts, job->page, job->all, err, cap);
}

static bool write_scaling(FILE *out, void *ctx, char *err, size_t cap)
{
    (void)err, (void)cap;
    const scaling_job *job = ctx;
    tp_html_scaling_write(out, job->rows, job->n);
    return true;
}

typedef struct two_runs_job {
    const tp_compare_job *job;
    const char *text;
} two_runs_job;

static bool write_two_runs(FILE *out, void *ctx, char *err, size_t cap)
{
    (void)err, (void)cap;
    const two_runs_job *page = ctx;
    const tp_compare_job *job = page->job;
    tp_html_compare_write(out, &job->c, page->text, job->rows, job->scaling ? 2 : 0);
    return true;
}

/* html --compare A.db B.db: the two runs compared. */
static int two_runs_page(char *const *paths, const char *output, bool force)
{
    tp_compare_job job;
    char err[1024];
    if (!tp_compare_job_run(&job, "html", paths, 1, paths + 1, 1, err, sizeof err)) {
        tp_compare_job_free(&job);
        tp_error("%s", err);
        return 2;
    }
    char *text = tp_compare_job_text(&job);
    two_runs_job page = {&job, text ? text : ""};
    int rc = tp_write_file_atomically("html", output, force, (const char *const *)paths, 2,
                                      write_two_runs, &page);
    free(text);
    tp_compare_job_free(&job);
    if (rc == 0)
        fprintf(stderr, "trainprof: wrote %s\n", output);
    return rc;
}

static int compare_page(char *const *paths, size_t n, const char *output, bool force)
{
    if (n < 2 || !output) {
        tp_error("html: --compare takes two or more run files and -o FILE");
        return 2;
    }
    if (n == 2)
        return two_runs_page(paths, output, force);
    scaling_job job = {calloc(n, sizeof *job.rows), n};
    char err[1024];
    if (!job.rows || !tp_scaling_build(paths, n, job.rows, err, sizeof err)) {
        tp_error("%s", job.rows ? err : "html: out of memory");
        free(job.rows);
        return 2;
    }
    int rc = tp_write_file_atomically("html", output, force, (const char *const *)paths, n,
                                      write_scaling, &job);
    free(job.rows);
    if (rc == 0)
        fprintf(stderr, "trainprof: wrote %s\n", output);
    return rc;
}

/* The run of the files paths[0..n) (several merged, and for many node
 * files their metrics' envelopes made from them instead of every point
 * copied in), its summary with stacks and course; false (reason in err,
 * nothing left open) when it can't be read. */
static bool load_run(tp_inputs *in, tp_summary *s, char **paths, size_t n, bool all, char *err,
                     size_t cap)
{
    bool envelopes = !all && n >= TP_ENVELOPE_AGENTS_MIN;
    if (!tp_inputs_open(in, "html", paths, n, true, !envelopes, err, cap) ||
        (envelopes && !tp_fleet_plots_store(in->path, (const char *const *)paths, n, err, cap)) ||
        !tp_summary_load(in->path, TP_PARTS_ALL, s, err, cap)) {
        tp_inputs_done(in);
        return false;
    }
    return true;
}

int cmd_html(int argc, char **argv)
{
    const char *output = NULL;
    bool force = false, compare = false, all = false;
    const tp_option options[] = {
        TP_STRING('o', "output", "FILE", "the page to write (default: RUN_FILE with .html)",
                  &output),
        TP_FLAG(0, "force", "overwrite FILE if it exists", &force),
        TP_FLAG(0, "compare", "several runs side by side (scalability), not merged", &compare),
        TP_FLAG(0, "all",
                "with many ranks or agents (more than 8 or 4), every rank's\n"
                "step-time plot and every agent's lines, not the notable\n"
                "ranks and one chart across agents; and a chart of every\n"
                "metric, those that stayed zero too",
                &all),
    };
    const tp_command cmd = {.name = "html",
                            .usage = usage,
                            TP_OPTION_TABLE(options),
                            .min_operands = 1,
                            .max_operands = -1,
                            .operands = "a run file"};
    int first;
    int parsed = tp_options_parse(&cmd, argc, argv, &first);
    if (parsed != TP_OPTIONS_OK)
        return parsed;
    if (compare && all) {
        tp_error("html: --all is for one run's page, not --compare");
        return 2;
    }
    if (compare)
        return compare_page(argv + first, (size_t)(argc - first), output, force);
    if (argc - first > 1 && !output) {
        tp_error("html: name the page with -o when reading several run files");
        return 2;
    }
    const char *path = argv[first];
    char def[4200];
    if (!output) {
        size_t len = strlen(path);
        size_t stem = len > 3 && strcmp(path + len - 3, ".db") == 0 ? len - 3 : len;
        snprintf(def, sizeof def, "%.*s.html", (int)stem, path);
        output = def;
    }
    int refused = tp_output_refused("html", output, force, (const char *const *)argv + first,
                                    (size_t)(argc - first)); /* before any reading */
    if (refused)
        return refused;
    char err[1024];
    tp_summary s;
    tp_inputs in;
    if (!load_run(&in, &s, argv + first, (size_t)(argc - first), all, err, sizeof err)) {
        tp_error("%s", err);
        return 2;
    }
    tp_summary_name_inputs(&s, &in);
    tp_summary_source_note(stderr, "html", &s.inv);
    tp_verdicts v;
    tp_verdicts_build(&s, &v);
    tp_page_facts page;
    int rc = 1;
    if (!tp_page_facts_build(&s, all, &page, err, sizeof err)) {
        tp_error("%s", err);
    } else {
        page_job job = {&s, &v, &page, all};
        rc = tp_write_file_atomically("html", output, force, (const char *const *)argv + first,
                                      (size_t)(argc - first), write_page, &job);
    }
    tp_page_facts_free(&page);
    tp_verdicts_free(&v);
    tp_summary_close(&s);
    tp_inputs_done(&in);
    if (rc == 0)
        fprintf(stderr, "trainprof: wrote %s\n", output);
    return rc;
}
