/* report_text.c: the report as aligned text tables for a terminal. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/metric_catalog.h"
#include "analyze/gpu_use.h"
#include "render/gpu_memory_words.h"
#include "render/gpu_reasons_words.h"
#include "render/report.h"
#include "render/units.h"
#include "render/verdict_words.h"
#include "util/labels.h"
#include "util/utf8.h"

#define PER_CORE_ROWS_MAX 16

static const char *or_unknown(const char *v) { return v ? v : "?"; }

static void cgroup(FILE *out, const tp_host_facts *h)
{
    if (!h->cgroup_version)
        return;
    const char *cpu = h->cgroup_cpu_limit_cores, *mem = h->cgroup_memory_limit_bytes;
    char membuf[32] = "none";
    if (mem && strcmp(mem, "none") != 0)
        tp_format_value(membuf, sizeof membuf, "bytes", strtod(mem, NULL));
    fprintf(out, "  cgroup    v%s, CPU limit %s%s, memory limit %s\n", h->cgroup_version,
            cpu ? cpu : "unknown", cpu && strcmp(cpu, "none") != 0 ? " cores" : "", membuf);
}

/* A merged run's hosts: a line per kind of host, naming its agents. */
static void hosts(FILE *out, const tp_run_inventory *inv)
{
    tp_host_group groups[8];
    size_t unlisted = 0, n = tp_host_groups(inv, groups, 8, &unlisted);
    for (size_t g = 0; g < n; g++)
        fprintf(out, "  %-9s %s: %s\n", g ? "" : "hosts", groups[g].agents, groups[g].description);
    if (unlisted)
        fprintf(out, "            %zu more agents on other hosts (report --json: agents[].meta)\n",
                unlisted);
}

/* The command on one line: its control characters (a `python -c`
 * program's newlines) as \xNN escapes, cut after COMMAND_SHOWN bytes on a
 * character's boundary with a note (--json has it whole). */
#define COMMAND_SHOWN 240
static void command_line(FILE *out, const char *command)
{
    char shown[4 * COMMAND_SHOWN];
    tp_text_escape(shown, sizeof shown, command);
    size_t len = strlen(shown);
    if (len <= COMMAND_SHOWN) {
        fprintf(out, "  command   %s\n", shown);
        return;
    }
    len = COMMAND_SHOWN;
    while (len > 0 && ((unsigned char)shown[len] & 0xc0) == 0x80)
        len--; /* not inside a character */
    fprintf(out, "  command   %.*s ... (cut; report --json has it whole)\n", (int)len, shown);
}

static void header(FILE *out, const tp_run_inventory *inv)
{
    const tp_run_facts f = inv->facts;
    char dur[32];
    tp_format_duration(dur, sizeof dur, f.duration_s);
    fprintf(out, "trainprof report: %s\n", inv->path);
    command_line(out, f.command);
    fprintf(out, "  started   %s   duration %s   ", or_unknown(f.start_wall), dur);
    char who[64] = "";
    if (f.failed_agent)
        snprintf(who, sizeof who, ", on %.40s", f.failed_agent);
    char why[400];
    if (!f.complete) {
        tp_run_facts_incomplete(&f, why, sizeof why);
        fprintf(out, "INCOMPLETE: %s\n", why);
    } else if (f.exit_signal)
        fprintf(out, "exit status %lld (killed by %s%s)\n", f.exit_status, f.exit_signal, who);
    else
        fprintf(out, "exit status %lld%s\n", f.exit_status, f.failed_agent ? who + 1 : "");
    if (inv->merged) {
        hosts(out, inv);
    } else {
        const tp_host_facts h = inv->host;
        fprintf(out, "  host      %s, %s, %s CPUs (%s)", or_unknown(h.host), or_unknown(h.kernel),
                or_unknown(h.cpu_count), or_unknown(h.cpu_model));
        if (h.mem_total_bytes) {
            char mem[32];
            tp_format_value(mem, sizeof mem, "bytes", strtod(h.mem_total_bytes, NULL));
            fprintf(out, ", %s memory", mem);
        }
        fputc('\n', out);
        cgroup(out, &h);
    }
    if (f.merged_from)
        fprintf(out,
                "  merged    %s, one agent each; times aligned through each start's wall-clock "
                "anchor (anchors +-%s ns, plus how far the hosts' clocks disagree)\n",
                f.merged_from, or_unknown(f.merge_anchor_ns));
    if (f.interval_s)
        fprintf(out, "  sampling  every %s s\n", f.interval_s);
}

/* True when the metric has labelled series besides the one given. */
static bool has_siblings(const tp_summary *s, size_t i)
{
    const tp_run_series *x = s->items[i].series;
    for (size_t j = 0; j < s->n; j++) {
        const tp_run_series *y = s->items[j].series;
        if (j != i && y->agent_id == x->agent_id && strcmp(y->metric, x->metric) == 0)
            return true;
    }
    return false;
}

/* One series' row. Over the steps (steps: the table shows each series'
 * figures over its agent's training steps), a last column gives the whole
 * run's max, and a series with no figures over the steps shows the whole
 * run's, marked. */
static void row(FILE *out, const tp_series_summary *m, const char *labels, bool steps)
{
    const tp_stats *st = tp_series_stats(m, !steps);
    char cells[6][32];
    const double vals[] = {st->mean, st->p5, st->p50, st->p95, st->max, m->stats.max};
    for (int k = 0; k < 6; k++)
        tp_format_value(cells[k], sizeof cells[k], m->series->unit, vals[k]);
    fprintf(out, "  %-28s %-16s %12s %12s %12s %12s %12s", m->series->metric, labels, cells[0],
            cells[1], cells[2], cells[3], cells[4]);
    if (steps)
        fprintf(out, " %12s%s", cells[5], m->in_steps ? "" : "  (whole run)");
    fputc('\n', out);
}

/* A metrics table's header, after a blank line and title (none: the blank
 * line alone, under the lines its caller wrote). */
static void table_head(FILE *out, const char *title, bool steps)
{
    fprintf(out, "\n%s%s  %-28s %-16s %12s %12s %12s %12s %12s%s\n", title, title[0] ? "\n" : "",
            "metric", "labels", "mean", "p5", "p50", "p95", "max", steps ? "      run max" : "");
}

/* Summarises per-core CPU rows of a many-core machine in one line. */
static void per_core_line(FILE *out, const tp_summary *s, int64_t agent, size_t cores, bool steps)
{
    const tp_series_summary *busy = NULL, *idle = NULL;
    for (size_t i = 0; i < s->n; i++) {
        const tp_series_summary *m = &s->items[i];
        if (m->series->agent_id != agent ||
            strcmp(m->series->metric, TP_METRIC_CPU_UTIL_PERCENT) != 0 ||
            strcmp(m->series->labels, "{}") == 0)
            continue;
        if (!busy || tp_series_stats(m, steps)->mean > tp_series_stats(busy, steps)->mean)
            busy = m;
        if (!idle || tp_series_stats(m, steps)->mean < tp_series_stats(idle, steps)->mean)
            idle = m;
    }
    if (!busy)
        return;
    char b[64], i[64];
    tp_labels_display(busy->series->labels, b, sizeof b);
    tp_labels_display(idle->series->labels, i, sizeof i);
    fprintf(out,
            "  %zu cores (per core in --json): busiest %s (mean %.1f %%), least busy %s (mean %.1f "
            "%%)\n",
            cores, b, tp_series_stats(busy, steps)->mean, i, tp_series_stats(idle, steps)->mean);
}

/* Rows left out of a table because they never moved, said in a line or
 * two after it: "metric (labels, labels), metric" for those all zero, and
 * "metric value" for those constant. */
typedef struct folded {
    char zero[2048], constant[1024];
    size_t nzero, nconstant;
    const char *last_zero_metric;
    bool zero_open; /* a "(" awaits its ")" */
} folded;

static void append(char *buf, size_t cap, const char *text)
{
    size_t len = strlen(buf);
    if (len + 1 < cap)
        snprintf(buf + len, cap - len, "%s", text);
}

/* Folds m (shown as labels) when it never moved over the whole run and
 * all is false; false when it is to be shown as a row. A metric's zero
 * series read "metric (labels, labels)". */
static bool fold(folded *f, const tp_series_summary *m, const char *labels, bool all)
{
    const tp_stats *st = &m->stats;
    if (all || st->count == 0 || st->min != st->max)
        return false;
    char *z = f->zero;
    size_t zcap = sizeof f->zero;
    if (st->max == 0) {
        if (f->zero_open && labels[0] && strcmp(f->last_zero_metric, m->series->metric) == 0) {
            append(z, zcap, ", ");
            append(z, zcap, labels);
        } else {
            append(z, zcap, f->zero_open ? "), " : f->nzero ? ", " : "");
            append(z, zcap, m->series->metric);
            if (labels[0]) {
                append(z, zcap, " (");
                append(z, zcap, labels);
            }
            f->zero_open = labels[0] != '\0';
        }
        f->last_zero_metric = m->series->metric;
        f->nzero++;
        return true;
    }
    if (st->count < 2)
        return false;
    char value[32];
    tp_format_value(value, sizeof value, m->series->unit, st->max);
    append(f->constant, sizeof f->constant, f->nconstant++ ? ", " : "");
    append(f->constant, sizeof f->constant, m->series->metric);
    if (labels[0]) {
        append(f->constant, sizeof f->constant, " (");
        append(f->constant, sizeof f->constant, labels);
        append(f->constant, sizeof f->constant, ")");
    }
    append(f->constant, sizeof f->constant, " ");
    append(f->constant, sizeof f->constant, value);
    return true;
}

static void folded_lines(FILE *out, folded *f)
{
    if (f->zero_open)
        append(f->zero, sizeof f->zero, ")");
    f->zero_open = false;
    if (f->nzero)
        tp_report_wrapped(out, "also recorded, all zero (--all shows them): ", f->zero);
    if (f->nconstant)
        tp_report_wrapped(out, "also recorded, constant: ", f->constant);
    memset(f, 0, sizeof *f);
}

/* Whether any series of the agent has figures over its training steps. */
static bool agent_has_steps(const tp_summary *s, int64_t agent)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->items[i].series->agent_id == agent && s->items[i].in_steps)
            return true;
    return false;
}

/* Each of agent a's GPUs' clock event reasons, in words: how often it was
 * held below its top clock, and by what. */
static void slowdown_lines(FILE *out, const tp_summary *s, const tp_run_agent *a)
{
    for (size_t g = 0; s->gpu_slowdown && g < s->inv.ngpus; g++) {
        const struct tp_gpu_slowdown *d = &s->gpu_slowdown[g];
        if (s->inv.gpus[g].agent_id != a->id || isnan(d->share))
            continue;
        char why[200];
        tp_gpu_reasons_text(why, sizeof why, d->bits);
        if (d->share > 0)
            fprintf(out,
                    "  gpu=%d held below its top clock %.0f%% of the time, by %s (NVML's "
                    "clock event reasons)\n",
                    s->inv.gpus[g].index, 100 * d->share, why);
        else
            fprintf(out, "  gpu=%d never held below its top clock (NVML's clock event reasons)\n",
                    s->inv.gpus[g].index);
    }
}

/* The agent's system metrics and GPUs. Over its training steps when it has
 * figures for them and whole_run is false (the rules of thumb judge those),
 * else over the whole run. */
static void agent_tables(FILE *out, const tp_summary *s, const tp_run_agent *a, bool whole_run,
                         bool all)
{
    folded f = {0};
    size_t cores = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->items[i].series->agent_id == a->id &&
            strcmp(s->items[i].series->metric, TP_METRIC_CPU_UTIL_PERCENT) == 0 &&
            strcmp(s->items[i].series->labels, "{}") != 0)
            cores++;
    bool steps = !whole_run && agent_has_steps(s, a->id);
    char title[300], span[96] = "first to last step mark";
    const tp_steps_window *win = tp_summary_window(s, a->id);
    if (win) {
        char t0[32], t1[32];
        tp_format_duration(t0, sizeof t0, (double)win->t0_ns / 1e9);
        tp_format_duration(t1, sizeof t1, (double)win->t1_ns / 1e9);
        snprintf(span, sizeof span, "from %s to %s", t0, t1);
    }
    snprintf(title, sizeof title, "System metrics, agent %s%s%s%s", a->name,
             steps ? ", during its training steps (" : "", steps ? span : "",
             steps ? "; whole run: --whole-run)" : "");
    table_head(out, title, steps);
    bool any_gpu = false;
    for (size_t i = 0; i < s->n; i++) {
        const tp_series_summary *m = &s->items[i];
        if (m->series->agent_id != a->id)
            continue;
        if (strncmp(m->series->metric, "gpu_", 4) == 0) {
            any_gpu = true;
            continue;
        }
        bool total = strcmp(m->series->labels, "{}") == 0;
        if (!total && cores > PER_CORE_ROWS_MAX &&
            strcmp(m->series->metric, TP_METRIC_CPU_UTIL_PERCENT) == 0)
            continue;
        char labels[TP_LABELS_MAX];
        tp_labels_display(m->series->labels, labels, sizeof labels);
        const char *shown = total && has_siblings(s, i) ? "all" : labels;
        if (!fold(&f, m, shown, all))
            row(out, m, shown, steps);
        if (total && cores > PER_CORE_ROWS_MAX &&
            strcmp(m->series->metric, TP_METRIC_CPU_UTIL_PERCENT) == 0)
            per_core_line(out, s, a->id, cores, steps);
    }
    folded_lines(out, &f);
    if (any_gpu) {
        snprintf(title, sizeof title, "GPUs, agent %s", a->name);
        fprintf(out, "\n%s\n", title);
        for (size_t g = 0; g < s->inv.ngpus; g++) {
            const tp_run_gpu *gpu = &s->inv.gpus[g];
            if (gpu->agent_id == a->id)
                fprintf(out, "  gpu=%d  %s  %s  energy from %s%s\n", gpu->index, gpu->name,
                        gpu->uuid, gpu->energy_source,
                        s->gpu_used && s->gpu_used[g] == TP_GPU_NOT_USED
                            ? "  (not this job's: no verdict about it)"
                            : "");
        }
        table_head(out, "", steps);
        for (size_t i = 0; i < s->n; i++) {
            const tp_series_summary *m = &s->items[i];
            if (m->series->agent_id != a->id || strncmp(m->series->metric, "gpu_", 4) != 0 ||
                strcmp(m->series->metric, TP_METRIC_GPU_CLOCK_EVENT_REASONS) == 0)
                continue; /* a bitmask has no mean: said in words below */
            char labels[TP_LABELS_MAX];
            tp_labels_display(m->series->labels, labels, sizeof labels);
            if (!fold(&f, m, labels, all))
                row(out, m, labels, steps);
        }
        folded_lines(out, &f);
        slowdown_lines(out, s, a);
    }
}

/* The sources of agent a that could not be read, if any. */
static void unavailable_lines(FILE *out, const tp_summary *s, const tp_run_agent *a)
{
    bool any_unavailable = false;
    for (size_t i = 0; i < s->inv.nunavailable; i++) {
        const tp_run_unavailable *u = &s->inv.unavailable[i];
        if (u->agent_id != a->id)
            continue;
        if (!any_unavailable)
            fprintf(out, "\nUnavailable sources, agent %s\n", a->name);
        any_unavailable = true;
        fprintf(out, "  %s: %s\n", u->source, u->reason);
    }
}

void tp_report_text(FILE *out, const tp_summary *s, const tp_verdicts *v, bool all, bool whole_run)
{
    tp_summary_needs(s, TP_PARTS_ALL, "tp_report_text");
    header(out, &s->inv);
    tp_report_answer_text(out, s, v);
    tp_report_ends_text(out, s, v);
    tp_report_course_text(out, s);
    tp_report_regimes_text(out, s);
    if (s->n == 0)
        fprintf(out, "\nNo samples: the command ended before the first sampling interval.\n");
    bool across = !all && s->n && s->inv.nagents > TP_REPORT_AGENTS_MAX;
    if (across)
        tp_report_agents_text(out, s, whole_run);
    for (size_t i = 0; i < s->inv.nagents; i++) {
        if (!across)
            agent_tables(out, s, &s->inv.agents[i], whole_run, all);
        unavailable_lines(out, s, &s->inv.agents[i]);
    }
    tp_report_timings_text(out, s, all);
    tp_gpu_memory_text(out, v);
    tp_report_ranks_text(out, s, all);
    tp_report_stacks_text(out, s);
    tp_report_ops_text(out, s);
    tp_report_verdicts_text(out, s, v);
}
