/* report_agents.c: the system metrics of many agents in one table.
 *
 * A merged run of many nodes would print each agent's tables one after the
 * other (about 115 lines for a node with 8 GPUs). Instead, each metric gets
 * one row: the median of the agents' means, and the lowest and highest agent
 * by name; per-device metrics with no agent total (GPU metrics, a disk's busy
 * share, a link's speed) compare every device of every agent, so one throttled
 * or idle GPU among 64, or one saturated disk, is named. Other per-device
 * series (cores, each disk's or interface's rates) stay in the per-agent
 * tables (`report --all`). */
#include <stdlib.h>
#include <string.h>

#include "analyze/fleet_envelopes.h"
#include "core/metric_catalog.h"
#include "render/report.h"
#include "render/units.h"
#include "util/labels.h"

typedef struct entry {
    double mean;
    const tp_series_summary *item;
} entry;

static int by_mean(const void *a, const void *b)
{
    double x = ((const entry *)a)->mean, y = ((const entry *)b)->mean;
    return (x > y) - (x < y);
}

/* "node-3" or "node-3 gpu=5": where a series comes from. */
static void where(const tp_run_inventory *inv, const tp_run_series *series, char *buf, size_t cap)
{
    char labels[TP_LABELS_MAX];
    tp_labels_display(series->labels, labels, sizeof labels);
    snprintf(buf, cap, "%.40s%s%.40s", tp_inventory_agent_name(inv, series->agent_id),
             labels[0] ? " " : "", labels);
}

const char *tp_device_kind(const char *metric)
{
    static const char *const words[] = {[TP_DEVICE_NONE] = NULL,
                                        [TP_DEVICE_GPU] = "GPUs",
                                        [TP_DEVICE_DISK] = "disks",
                                        [TP_DEVICE_LINK] = "links"};
    return words[tp_device_class_of(metric)];
}

void tp_report_agents_text(FILE *out, const tp_summary *s, bool whole_run)
{
    bool steps = false;
    for (size_t i = 0; !whole_run && i < s->n; i++)
        steps = steps || s->items[i].in_steps;
    fprintf(out,
            "\nSystem metrics across %zu agents%s\n"
            "the median of the agents' means (of every GPU's, disk's or link's for theirs), and "
            "the lowest\nand the highest (each agent's tables: --all)\n"
            "  %-38s %12s %12s %-22s %12s\n",
            s->inv.nagents,
            steps ? ", during their training steps (the whole run: --whole-run)" : "", "metric",
            "median", "lowest", "", "highest");
    entry *e = malloc((s->n ? s->n : 1) * sizeof *e);
    bool *done = calloc(s->n ? s->n : 1, sizeof *done);
    for (size_t i = 0; e && done && i < s->n; i++) {
        const tp_run_series *first = s->items[i].series;
        if (done[i] || !tp_series_across_agents(first))
            continue;
        size_t n = 0;
        const char *kind = tp_device_kind(first->metric);
        for (size_t j = i; j < s->n; j++) {
            const tp_run_series *x = s->items[j].series;
            if (done[j] || strcmp(x->metric, first->metric) != 0 || !tp_series_across_agents(x) ||
                (!kind && strcmp(x->labels, "{}") != 0))
                continue;
            done[j] = true;
            e[n++] = (entry){tp_series_stats(&s->items[j], whole_run)->mean, &s->items[j]};
        }
        qsort(e, n, sizeof *e, by_mean);
        double median = n % 2 ? e[n / 2].mean : (e[n / 2 - 1].mean + e[n / 2].mean) / 2;
        char med[32], low[32], high[32], low_at[96], high_at[96], name[48];
        tp_format_value(med, sizeof med, first->unit, median);
        tp_format_value(low, sizeof low, first->unit, e[0].mean);
        tp_format_value(high, sizeof high, first->unit, e[n - 1].mean);
        where(&s->inv, e[0].item->series, low_at, sizeof low_at);
        where(&s->inv, e[n - 1].item->series, high_at, sizeof high_at);
        if (kind)
            snprintf(name, sizeof name, "%.30s (%zu %s)", first->metric, n, kind);
        else
            snprintf(name, sizeof name, "%.40s", first->metric);
        fprintf(out, "  %-38s %12s %12s %-22.22s %12s %.22s\n", name, med, low, low_at, high,
                high_at);
    }
    free(e);
    free(done);
}
