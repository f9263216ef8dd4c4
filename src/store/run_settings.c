/* run_settings.c: the run file's metadata, parsed once. */
#include "store/run_settings.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/run_keys.h"
#include "util/text_parse.h"

typedef struct meta_rows {
    const tp_run_meta *v;
    size_t n;
} meta_rows;

static const char *meta_get(meta_rows run, const char *key)
{
    for (size_t i = 0; i < run.n; i++)
        if (strcmp(run.v[i].key, key) == 0)
            return run.v[i].value;
    return NULL;
}

/* key's value as a finite number over 0, else 0 */
static double positive(meta_rows run, const char *key)
{
    const char *text = meta_get(run, key);
    char *end = NULL;
    double v = text ? strtod(text, &end) : 0;
    return text && end != text && *end == '\0' && isfinite(v) && v > 0 ? v : 0;
}

/* key's value is "1" (a flag the writer sets) */
static bool flag(meta_rows run, const char *key)
{
    const char *text = meta_get(run, key);
    return text && strcmp(text, "1") == 0;
}

/* key's value as a count (a whole decimal, no sign), else -1 */
static int64_t count(meta_rows run, const char *key)
{
    const char *text = meta_get(run, key);
    const char *end = text ? text + strlen(text) : NULL;
    uint64_t v = 0;
    return text && tp_parse_u64(&text, end, &v) && text == end && v <= (uint64_t)INT64_MAX
               ? (int64_t)v
               : -1;
}

static const char *text_or_empty(meta_rows run, const char *key)
{
    const char *text = meta_get(run, key);
    return text ? text : "";
}

void tp_run_settings_read(const tp_run_meta *meta, size_t n, tp_run_settings *out)
{
    meta_rows run = {meta, n};
    memset(out, 0, sizeof *out);
    out->stall_after_s = positive(run, TP_META_STALL_AFTER_S);
    out->interval_s = positive(run, TP_META_INTERVAL_S);
    int64_t every = count(run, TP_META_DEVICE_TIMES_EVERY);
    out->device_times_every = every >= 2 && every <= 255 ? (int)every : 1;
    out->start_known = tp_parse_epoch_ns(meta_get(run, TP_META_START_WALL_NS), &out->start_wall_ns);
    out->duration_ns = count(run, TP_META_DURATION_NS);
    out->exit_status = count(run, TP_META_EXIT_STATUS);
    int64_t uncertainty = count(run, TP_META_CLOCK_UNCERTAINTY_NS);
    out->clock_uncertainty_ns = uncertainty > 0 ? uncertainty : 0;
    out->summarized = flag(run, TP_META_SUMMARIZED);
    out->plots = flag(run, TP_META_PLOTS);
    out->stalls_stored = flag(run, TP_META_STALLS_STORED);
    out->merged = meta_get(run, TP_META_MERGED_FROM) != NULL;
    out->summary_only = flag(run, TP_META_SUMMARY_ONLY);
    out->envelopes = flag(run, TP_META_ENVELOPES);
    out->command = text_or_empty(run, TP_META_COMMAND);
    out->argv = text_or_empty(run, TP_META_ARGV);
    out->version = text_or_empty(run, TP_META_VERSION);
    out->summary_by = text_or_empty(run, TP_META_SUMMARY_BY);
}
