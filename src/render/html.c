/* html.c: the self-contained HTML report. */
#include "render/html.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/downsample.h"
#include "analyze/verdicts.h"
#include "core/metric_catalog.h"
#include "core/phases.h"
#include "render/report.h"
#include "render/svg.h"
#include "render/units.h"
#include "render/verdict_words.h"
#include "util/labels.h"

const char tp_html_style[] =
    "body{font:14px/1.4 sans-serif;margin:24px;color:#222;max-width:1800px}"
    "h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ddd}"
    "dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px}dt{color:#666}"
    ".verdict{background:#fff6e0;border-left:4px solid #f0a000;padding:6px 10px;margin:8px 0}"
    ".verdict code{color:#555;font-size:12px}pre{font-size:11px;overflow-x:auto;background:#f7f7f7;"
    "padding:8px}figure{margin:12px 0}.chart-title{font-weight:bold;font-size:13px}"
    ".tick{font-size:10px;fill:#555}.axis-title{font-size:11px;fill:#333}.legend{font-size:11px}"
    ".grid{stroke:#eee}.series{stroke-width:1.3}.band{fill:#4c9a2a;fill-opacity:.09}"
    ".band-label{font-size:10px;fill:#4c7a2a}.shade{fill:#555;fill-opacity:.16}"
    ".flame-label{font-size:11px;fill:#222;pointer-events:none}"
    "#answer{background:#f3f7ff;border:1px solid #c8d8f0;padding:4px 14px 10px;margin:12px 0}"
    "#answer h2{margin-top:8px;border:none}.verdict.lead{background:#fff;font-size:15px}"
    ".trouble{color:#8a1f11;font-weight:600}.cost{color:#555;font-size:13px}"
    ".see{color:#666;font-size:12px;margin:0}"
    "table.evidence{font-size:12px;border-collapse:collapse;margin:4px 0}"
    "table.evidence th{text-align:left;font-weight:normal;color:#555;padding:1px 12px 1px 0}"
    "table.evidence td{font-family:monospace;padding:1px 0}"
    ".charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:0 24px}"
    "h3{font-size:14px;margin:18px 0 0;color:#444}"
    ".multiples{grid-template-columns:repeat(auto-fill,minmax(400px,1fr))}"
    ".mark{fill:#555}"
    ".charts figure svg,figure.chart svg{max-width:100%;height:auto}.folded{color:#555}";

/* ---- system metric plots ------------------------------------------------- */

typedef struct plot_ctx {
    const tp_page_facts *page;
    tp_svg_shade *pauses; /* the training's pauses (s) */
    char (*pause_labels)[48];
} plot_ctx;

/* A time chart of c, with the training steps shaded where they are known:
 * the span the report's system figures and the verdicts are taken over. */
static tp_svg_chart time_chart(const plot_ctx *c, const char *title, const char *y_title,
                               const char *unit)
{
    return (tp_svg_chart){.title = title,
                          .x_title = "time since start",
                          .y_title = y_title,
                          .unit = unit,
                          .band_from = c->page->steps_from,
                          .band_to = c->page->steps_to,
                          .band_label = "training steps",
                          .shades = c->pauses,
                          .nshades = c->page->npauses};
}

/* A line's legend: its labels ("total" without any), after its agent's name
 * when the run has several agents (a merged run), so that node-a's GPU 0 and
 * node-b's tell apart. */
static void line_label(const tp_run_inventory *inv, const tp_run_series *r, char *buf, size_t cap)
{
    char shown[TP_LABELS_MAX];
    tp_labels_display(r->labels, shown, sizeof shown);
    ptrdiff_t at = inv->nagents > 1 ? tp_inventory_agent_at(inv, r->agent_id) : -1;
    const char *agent = at >= 0 ? inv->agents[at].name : NULL;
    snprintf(buf, cap, "%.40s%s%.54s", agent ? agent : "", agent ? " " : "",
             shown[0] ? shown : "total");
}

static void axis_title(char *buf, size_t cap, const char *unit)
{
    static const char *const names[][2] = {
        {"percent", "%"},       {"bytes", "bytes"}, {"bytes_per_s", "bytes/s"},
        {"ops_per_s", "ops/s"}, {"count", "count"}, {"watts", "W"},
        {"joules", "J"},        {"celsius", "°C"},  {"mhz", "MHz"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(names[i][0], unit) == 0) {
            snprintf(buf, cap, "%s", names[i][1]);
            return;
        }
    snprintf(buf, cap, "%s", unit);
}

/* One metric's chart for a run of many agents: the lowest, median and
 * highest of its series compared across agents, over time. */
static void envelope_chart(FILE *out, const plot_ctx *c, const tp_metric_envelope *m)
{
    const tp_metric_def *def = tp_metric_find(m->metric);
    const tp_envelope *e = &m->e;
    if (!def || !e->n)
        return;
    const char *kind = tp_device_kind(def->name);
    tp_svg_line lines[3] = {{"highest", e->x, e->high, e->n},
                            {"median", e->x, e->median, e->n},
                            {"lowest", e->x, e->low, e->n}};
    char title[128], unit_title[32];
    snprintf(title, sizeof title, "%s (%zu %s)", def->name, m->lines, kind ? kind : "agents");
    axis_title(unit_title, sizeof unit_title, tp_unit_name(def->unit));
    tp_svg_chart chart = time_chart(c, title, unit_title, tp_unit_name(def->unit));
    tp_svg_line_chart(out, &chart, lines, 3);
}

/* The pauses' shades, each named with its pauses' count and time; false
 * when out of memory. */
static bool pause_shades(plot_ctx *c)
{
    const tp_page_facts *page = c->page;
    c->pauses = calloc(page->npauses + 1, sizeof *c->pauses);
    c->pause_labels = calloc(page->npauses + 1, sizeof *c->pause_labels);
    if (!c->pauses || !c->pause_labels)
        return false;
    for (size_t k = 0; k < page->npauses; k++) {
        const tp_page_pause *p = &page->pauses[k];
        char d[32];
        tp_format_duration(d, sizeof d, p->busy_s);
        if (p->count == 1)
            snprintf(c->pause_labels[k], sizeof c->pause_labels[k], "%s, %s", p->name, d);
        else
            snprintf(c->pause_labels[k], sizeof c->pause_labels[k], "%s, %zu times, %s", p->name,
                     p->count, d);
        c->pauses[k] = (tp_svg_shade){p->from, p->to, c->pause_labels[k]};
    }
    return true;
}

/* The heading of a group of charts, by the collector of their metrics. */
static const char *subsystem_title(const char *source)
{
    static const char *const titles[][2] = {
        {"cpu", "CPU"},
        {"mem", "Memory"},
        {"disk", "Disks"},
        {"net", "Network"},
        {"proc", "The training's processes"},
        {"pressure", "Pressure (time tasks waited for a resource)"},
        {"nvml", "GPUs"},
        {"rapl", "CPU energy"},
        {"allocator", "GPU memory (the training's allocator, at step boundaries)"},
    };
    for (size_t i = 0; i < sizeof titles / sizeof titles[0]; i++)
        if (strcmp(source, titles[i][0]) == 0)
            return titles[i][1];
    return source;
}

/* Whether a plotted line was ever anything but zero (a chart of lines all
 * zero says nothing a word can't: it folds into a line under the charts;
 * one flat at another value still tells that value, and is drawn). */
static bool line_moved(const tp_page_line *p)
{
    for (size_t k = 0; k < p->n; k++)
        if (p->y[k] != 0)
            return true;
    return false;
}

/* The page's lines of metric name (at most max); *moved: how many of them
 * were ever anything but zero (all: every one counts). */
static size_t metric_lines(const tp_run_inventory *inv, const tp_page_facts *page, const char *name,
                           bool all, tp_svg_line *lines, size_t max, size_t *moved)
{
    size_t n = 0;
    *moved = 0;
    for (size_t i = 0; i < page->nlines && n < max; i++) {
        const tp_page_line *p = &page->lines[i];
        if (strcmp(p->series->metric, name) != 0 || p->n == 0)
            continue;
        *moved += all || line_moved(p);
        line_label(inv, p->series, lines[n].label, sizeof lines[n].label);
        lines[n].x = p->x;
        lines[n].y = p->y;
        lines[n].n = p->n;
        n++;
    }
    return n;
}

/* A metric's chart (a GPU metric of several GPUs: a small chart per GPU,
 * as lines of eight GPUs on one chart hide each other), under a heading
 * where its collector differs from the last one's (*group). */
static void metric_chart(FILE *out, plot_ctx *c, const tp_metric_def *def, const tp_svg_line *lines,
                         size_t n, const char **group, bool *grid_open)
{
    bool nvml = strcmp(def->source, "nvml") == 0, multiples = nvml && n >= 2;
    if (!*group || strcmp(*group, def->source) != 0) {
        fprintf(out, "%s<h3>%s</h3>\n<div class=\"charts%s\">\n", *grid_open ? "</div>\n" : "",
                subsystem_title(def->source), nvml ? " multiples" : "");
        *group = def->source;
        *grid_open = true;
    }
    char ytitle[96], unit_title[32];
    axis_title(unit_title, sizeof unit_title, tp_unit_name(def->unit));
    snprintf(ytitle, sizeof ytitle, "%s", unit_title);
    if (!multiples) {
        tp_svg_chart chart = time_chart(c, def->name, ytitle, tp_unit_name(def->unit));
        tp_svg_line_chart(out, &chart, lines, n);
        return;
    }
    for (size_t k = 0; k < n; k++) {
        char title[200];
        snprintf(title, sizeof title, "%.64s, %.95s", def->name, lines[k].label);
        tp_svg_chart chart = time_chart(c, title, ytitle, tp_unit_name(def->unit));
        tp_svg_line_chart(out, &chart, &lines[k], 1);
    }
}

/* What the system metrics' charts show: the pauses shaded, and for many
 * agents, envelopes. */
static void metrics_intro(FILE *out, const tp_run_inventory *inv, const tp_page_facts *page)
{
    fputs("<h2 id=\"system-metrics\">System metrics</h2>\n", out);
    if (page->npauses)
        fputs("<p>Shaded green: the training steps; grey: the training's pauses outside them "
              "(evaluate, sanity_check, checkpoint, compile), each named when hovered.</p>\n",
              out);
    if (page->across)
        fprintf(out,
                "<p>%zu agents: each chart shows, over time, the lowest, the median and the "
                "highest of the agents' values (of every GPU's, for GPU metrics); `trainprof "
                "report` names which, and `trainprof html --all` %s.</p>\n",
                inv->nagents,
                page->points_elsewhere
                    ? "of the node files draws every agent (this merged file keeps these "
                      "envelopes, not each agent's points)"
                    : "draws every agent");
}

/* The system metrics' charts, by the metric catalogue's order and source;
 * allocator: only the training's GPU allocator's (drawn beside the step
 * times), else every other. */
static bool metric_plots(FILE *out, const tp_summary *s, const tp_page_facts *page, bool all,
                         bool allocator, char *err, size_t cap)
{
    const tp_run_inventory *inv = &s->inv;
    plot_ctx c = {.page = page};
    bool ok = pause_shades(&c);
    if (!ok)
        snprintf(err, cap, "html: out of memory");
    size_t count;
    const tp_metric_def *defs = tp_metric_catalog(&count);
    if (!allocator)
        metrics_intro(out, inv, page);
    bool across = page->across && !allocator;
    tp_svg_line lines[64];
    bool grid_open = across; /* a <div class="charts"> awaits its end */
    if (across)
        fputs("<div class=\"charts\">\n", out);
    for (size_t m = 0; ok && across && m < page->envelopes.n; m++)
        envelope_chart(out, &c, &page->envelopes.v[m]);
    char flat[2048] = "";
    size_t nflat = 0;
    const char *group = NULL; /* the source of the charts drawn last: a heading each */
    for (size_t m = 0; ok && !across && m < count; m++) {
        if ((strcmp(defs[m].source, "allocator") == 0) != allocator)
            continue;
        size_t moved, n = metric_lines(inv, page, defs[m].name, all, lines, 64, &moved);
        if (n && moved) {
            metric_chart(out, &c, &defs[m], lines, n, &group, &grid_open);
        } else if (n) { /* zero all run: named in a line under the charts */
            size_t len = strlen(flat);
            if (len + 1 < sizeof flat)
                snprintf(flat + len, sizeof flat - len, "%s%s", nflat++ ? ", " : "", defs[m].name);
        }
    }
    if (grid_open)
        fputs("</div>\n", out);
    if (nflat) {
        fputs("<p class=\"folded\">Also recorded, zero for the whole run (html --all draws them): ",
              out);
        tp_html_escape(out, flat);
        fputs(".</p>\n", out);
    }
    free(c.pauses);
    free(c.pause_labels);
    return ok;
}

/* ---- timings ------------------------------------------------------------- */

static void rank_label(char *buf, size_t cap, int rank)
{
    if (rank < 0)
        snprintf(buf, cap, "no rank");
    else
        snprintf(buf, cap, "rank %d", rank);
}

/* Where a mean step's time goes, one bar per rank. */
static void step_breakdown(FILE *out, const tp_summary *s)
{
    const tp_timings *t = &s->timings;
    if (!t->nsteps)
        return;
    char labels[TP_NOTABLE_RANKS][32];
    const char *bar_labels[TP_NOTABLE_RANKS];
    double values[TP_NOTABLE_RANKS * TP_STEP_PHASES] = {0};
    size_t nbars = 0;
    for (size_t i = 0; i < t->nsteps && nbars < TP_NOTABLE_RANKS; i++) {
        const tp_step_row *st = &t->steps[i];
        rank_label(labels[nbars], sizeof labels[nbars], st->rank);
        bar_labels[nbars] = labels[nbars];
        double known = 0;
        for (size_t r = 0; r < t->nrows; r++) {
            if (t->rows[r].rank != st->rank)
                continue;
            for (int p = 0; p < TP_STEP_PHASES - 1; p++)
                if (strcmp(t->rows[r].name, tp_step_phase_names[p]) == 0) {
                    double per_step = t->rows[r].in_steps_s / (double)st->stats.count;
                    values[nbars * TP_STEP_PHASES + (size_t)p] = per_step;
                    known += per_step;
                }
        }
        values[nbars * TP_STEP_PHASES + TP_STEP_PHASES - 1] =
            st->stats.mean > known ? st->stats.mean - known : 0;
        nbars++;
    }
    tp_svg_chart chart = {.title = "Where step time goes (mean step, per rank)",
                          .x_title = "time per step",
                          .y_title = "",
                          .unit = "seconds"};
    tp_svg_stacked_bars(out, &chart, bar_labels, nbars, tp_step_phase_names, TP_STEP_PHASES, values,
                        1);
}

/* Ranks side by side: own work against waiting, stragglers marked; r the
 * whole run's (over: "") or the latest pace's (over: "; steps 201-300"). */
static void rank_parts(FILE *out, const tp_ranks *r, const char *over)
{
    if (r->n == 0)
        return;
    size_t n = r->n < 64 ? r->n : 64;
    char(*labels)[40] = calloc(n, sizeof *labels);
    const char **bar_labels = calloc(n, sizeof *bar_labels);
    double *values = calloc(n * 4, sizeof *values);
    if (labels && bar_labels && values) {
        for (size_t i = 0; i < n; i++) {
            const tp_rank_row *row = &r->rows[i];
            double steps = (double)row->measured_steps;
            snprintf(labels[i], sizeof labels[i], "rank %d%s", row->rank,
                     row->straggler ? " (slow)" : "");
            bar_labels[i] = labels[i];
            values[i * 4 + 0] = row->input_s / steps;
            values[i * 4 + 1] = row->compute_s / steps;
            values[i * 4 + 2] = row->comm_s / steps;
            values[i * 4 + 3] = row->other_s / steps;
        }
        static const char *const parts[] = {"input", "compute", "communication", "other"};
        char title[160];
        snprintf(title, sizeof title,
                 "Where step time goes (mean step, per rank; parts by interval union%s)", over);
        tp_svg_chart chart = {
            .title = title, .x_title = "time per step", .y_title = "", .unit = "seconds"};
        tp_svg_stacked_bars(out, &chart, bar_labels, n, parts, 4, values, 1);
    }
    free(labels);
    free(bar_labels);
    free(values);
}

/* "then evaluate, checkpoint": the pauses a group of steps had (bits of
 * tp_pause_names), into buf. */
static const char *pause_note(char *buf, size_t cap, unsigned pauses)
{
    size_t len = (size_t)snprintf(buf, cap, "during or after these steps:");
    for (int i = 0; i < TP_PAUSE_NAMES && len < cap; i++)
        if (pauses & (1u << i))
            len += (size_t)snprintf(buf + len, cap - len, " %s", tp_pause_names[i]);
    return buf;
}

/* Step time over the run by phase, per plotted rank (a note first when
 * they are the notable ones). */
static void step_time_plots(FILE *out, const tp_summary *s, const tp_page_facts *page)
{
    if (page->notable_ranks)
        fprintf(out,
                "<p>Step time over the run of %zu of %zu ranks: the %d with the most own work per "
                "step (input and compute), the median rank and the rank with the least.</p>\n",
                page->nranks, s->ranks.n, TP_NOTABLE_RANKS - 2);
    for (size_t i = 0; i < page->nranks; i++) {
        const tp_step_phases *ph = &page->phases[i];
        if (!ph->ngroups)
            continue;
        char title[128], rank[32] = ""; /* a process with no rank: no qualifier */
        if (page->ranks[i] >= 0)
            snprintf(rank, sizeof rank, ", rank %d", page->ranks[i]);
        double first = ph->first_step[0]; /* a stored figure: from a file, any value */
        size_t skipped = first >= 1 && first < (double)ph->nsteps ? (size_t)first : 0;
        const char *steps = ph->nsteps == 1 ? "step" : "steps";
        if (skipped)
            snprintf(title, sizeof title,
                     "Step time over the run%s (%zu %s; the first %zu, warm-up, left out)", rank,
                     ph->nsteps, steps, skipped);
        else
            snprintf(title, sizeof title, "Step time over the run%s (%zu %s)", rank, ph->nsteps,
                     steps);
        char(*labels)[24] = calloc(ph->ngroups, sizeof *labels);
        const char **bar_labels = calloc(ph->ngroups, sizeof *bar_labels);
        char(*notes)[96] = calloc(ph->ngroups, sizeof *notes);
        const char **marks = calloc(ph->ngroups, sizeof *marks);
        if (labels && bar_labels && notes && marks) {
            for (size_t g = 0; g < ph->ngroups; g++) {
                snprintf(labels[g], sizeof labels[g], "%.0f", ph->first_step[g]);
                bar_labels[g] = labels[g];
                if (ph->pauses && ph->pauses[g]) /* evaluation, checkpoint, compile */
                    marks[g] = pause_note(notes[g], sizeof notes[g], ph->pauses[g]);
            }
            tp_svg_shade shades[TP_REGIMES_MAX];
            char shade_labels[TP_REGIMES_MAX][96];
            size_t nshades = 0;
            if (s->regimes.rank == page->ranks[i]) {
                tp_html_regime_marks(&s->regimes, ph, notes, marks);
                nshades = tp_html_regime_shades(&s->regimes, ph, shades, shade_labels);
            }
            tp_svg_chart chart = {.title = title,
                                  .x_title = "step",
                                  .y_title = "time per step",
                                  .unit = "seconds",
                                  .marks = marks,
                                  .shades = shades,
                                  .nshades = nshades};
            tp_svg_stacked_bars(out, &chart, bar_labels, ph->ngroups, tp_step_phase_names,
                                TP_STEP_PHASES, ph->values, 0);
        }
        free(labels);
        free(bar_labels);
        free(notes);
        free(marks);
    }
}

static void epoch_plot(FILE *out, const tp_summary *s)
{
    const tp_timings *t = &s->timings;
    if (!t->nepochs)
        return;
    size_t n = 0;
    while (n < t->nepochs && t->epochs[n].rank == t->epochs[0].rank)
        n++;
    char(*labels)[24] = calloc(n, sizeof *labels);
    const char **bar_labels = calloc(n, sizeof *bar_labels);
    double *values = calloc(n, sizeof *values);
    for (size_t i = 0; i < n; i++) {
        snprintf(labels[i], sizeof labels[i], "%lld", (long long)t->epochs[i].epoch);
        bar_labels[i] = labels[i];
        values[i] = t->epochs[i].duration_s;
    }
    static const char *const part[] = {"epoch time"};
    tp_svg_chart chart = {
        .title = "Epoch times", .x_title = "epoch", .y_title = "duration", .unit = "seconds"};
    tp_svg_stacked_bars(out, &chart, bar_labels, n, part, 1, values, 0);
    free(labels);
    free(bar_labels);
    free(values);
}

/* ---- page ---------------------------------------------------------------- */

static void header(FILE *out, const tp_run_inventory *inv)
{
    const tp_run_facts f = inv->facts;
    char dur[32];
    tp_format_duration(dur, sizeof dur, f.duration_s);
    fputs("<h1>trainprof: ", out);
    tp_html_escape(out, f.command);
    fputs("</h1>\n<dl>", out);
    const tp_host_facts h = inv->host;
    const char *rows[][2] = {{"started", f.start_wall},
                             {"host", h.host},
                             {"kernel", h.kernel},
                             {"CPU", h.cpu_model},
                             {"CPUs", h.cpu_count}};
    bool merged = inv->merged;
    for (size_t i = 0; i < (merged ? 1 : sizeof rows / sizeof rows[0]); i++) {
        fprintf(out, "<dt>%s</dt><dd>", rows[i][0]);
        tp_html_escape(out, rows[i][1] ? rows[i][1] : "?");
        fputs("</dd>", out);
    }
    if (merged) { /* a line per kind of host, naming its agents */
        tp_host_group groups[8];
        size_t unlisted = 0, n = tp_host_groups(inv, groups, 8, &unlisted);
        fputs("<dt>hosts</dt><dd>", out);
        for (size_t g = 0; g < n; g++) {
            fputs(g ? "<br>" : "", out);
            tp_html_escape(out, groups[g].agents);
            fputs(": ", out);
            tp_html_escape(out, groups[g].description);
        }
        if (unlisted)
            fprintf(out, "<br>%zu more agents on other hosts", unlisted);
        fputs("</dd>", out);
    }
    fprintf(out, "<dt>duration</dt><dd>%s</dd><dt>exit status</dt><dd>", dur);
    if (!f.complete) {
        char why[400];
        tp_run_facts_incomplete(&f, why, sizeof why);
        fputs("incomplete: ", out);
        tp_html_escape(out, why);
    } else {
        fprintf(out, "%lld", f.exit_status);
        if (f.exit_signal) {
            fputs(" (killed by ", out);
            tp_html_escape(out, f.exit_signal);
            fputc(')', out);
        }
        if (f.failed_agent) {
            fputs(", on ", out);
            tp_html_escape(out, f.failed_agent);
        }
    }
    fputs("</dd></dl>\n", out);
}

static void tables(FILE *out, const tp_summary *s, const tp_verdicts *v, bool all)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem)
        return;
    tp_report_text(mem, s, v, all, false);
    fclose(mem);
    fputs("<h2>Tables</h2>\n<pre>", out);
    tp_html_escape(out, text);
    fputs("</pre>\n", out);
    free(text);
}

bool tp_html_write(FILE *out, const tp_summary *s, const tp_verdicts *v, const tp_page_facts *page,
                   bool all, char *err, size_t cap)
{
    tp_summary_needs(s, TP_PARTS_ALL, "tp_html_write");
    const tp_run_facts f = s->inv.facts;
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<meta name=\"viewport\" content=\"width=device-width\"><title>trainprof: ",
          out);
    tp_html_escape(out, f.command);
    fprintf(out, "</title><style>%s</style></head><body>\n", tp_html_style);
    header(out, &s->inv);
    tp_html_answer(out, s, v);
    tp_html_verdicts(out, s, v);
    fputs("<h2>Timings</h2>\n", out);
    if (!s->timings.threads)
        fputs("<p>No timings were recorded (no instrumented process ran).</p>\n", out);
    /* with ranks, communication may overlap the other phases (DDP's
     * all-reduce runs during backward): only the union-based parts add up */
    const tp_regime *pace =
        s->ranks_latest.n ? tp_regimes_latest(&s->regimes, s->regimes.rank) : NULL;
    char over[96] = "";
    if (pace) /* and over the latest pace, which the verdicts judge */
        snprintf(over, sizeof over, "; steps %zu-%zu, the latest pace", pace->first_step,
                 pace->last_step);
    if (s->ranks.n)
        rank_parts(out, &s->ranks, "");
    if (s->ranks.n && pace)
        rank_parts(out, &s->ranks_latest, over);
    else if (!s->ranks.n)
        step_breakdown(out, s);
    tp_html_rank_heatmap(out, &page->heatmap);
    step_time_plots(out, s, page);
    bool ok = metric_plots(out, s, page, all, true, err, cap); /* GPU memory by the steps */
    epoch_plot(out, s);
    tp_html_stacks(out, &s->stacks);
    tp_html_ops(out, &s->ops);
    ok = metric_plots(out, s, page, all, false, err, cap) && ok;
    tables(out, s, v, all);
    fputs("</body></html>\n", out);
    return ok;
}
