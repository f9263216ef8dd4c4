/* prom_format.c: see prom_format.h. */
#include "serve/prom_format.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/metric_catalog.h"
#include "util/utf8.h"

/* Copies name without the suffix (when it ends with it) after "trainprof_". */
static void base_name(char *out, size_t cap, const char *name, const char *suffix)
{
    size_t n = strlen(name), k = strlen(suffix);
    if (n >= k && strcmp(name + n - k, suffix) == 0)
        n -= k;
    snprintf(out, cap, "trainprof_%.*s", (int)n, name);
}

bool tp_prom_metric_of(const char *recorded, tp_prom_metric *out)
{
    const tp_metric_def *def = tp_metric_find(recorded);
    if (!def)
        return false;
    char base[80];
    memset(out, 0, sizeof *out);
    snprintf(out->help, sizeof out->help, "%s", def->help);
    out->kind = TP_PROM_GAUGE;
    out->scale = 1.0;
    switch (def->unit) {
    case TP_UNIT_PERCENT:
        base_name(base, sizeof base, recorded, "_percent");
        snprintf(out->name, sizeof out->name, "%s_ratio", base);
        out->scale = 0.01;
        break;
    case TP_UNIT_BYTES_PER_S:
        if (strcmp(recorded, TP_METRIC_NET_LINK_SPEED_BYTES_PER_S) ==
            0) { /* a capacity, not a flow */
            snprintf(out->name, sizeof out->name, "trainprof_net_link_speed_bytes");
            snprintf(out->help, sizeof out->help,
                     "the link's speed each way, in bytes per second (as node_exporter's "
                     "node_network_speed_bytes)");
            break;
        }
        base_name(base, sizeof base, recorded, "_bytes_per_s");
        snprintf(out->name, sizeof out->name, "%s_bytes_total", base);
        out->kind = TP_PROM_COUNTER, out->integrate = true;
        break;
    case TP_UNIT_OPS_PER_S:
        base_name(base, sizeof base, recorded, "_iops");
        snprintf(out->name, sizeof out->name, "%s_ops_total", base);
        out->kind = TP_PROM_COUNTER, out->integrate = true;
        break;
    case TP_UNIT_JOULES:
        snprintf(out->name, sizeof out->name, "trainprof_%s_total", recorded);
        out->kind = TP_PROM_COUNTER;
        break;
    case TP_UNIT_MHZ:
        base_name(base, sizeof base, recorded, "_mhz");
        snprintf(out->name, sizeof out->name, "%s_hertz", base);
        out->scale = 1e6;
        break;
    case TP_UNIT_COUNT: /* a gauge must not end in _count (that is a summary's) */
        if (strcmp(recorded, TP_METRIC_PROC_COUNT) == 0) {
            snprintf(out->name, sizeof out->name, "trainprof_proc_processes");
            break;
        }
        if (strcmp(recorded, TP_METRIC_CUDA_ALLOC_RETRIES) == 0 ||
            strcmp(recorded, TP_METRIC_CUDA_OOMS) == 0) { /* counted since the process began */
            snprintf(out->name, sizeof out->name, "trainprof_%s_total", recorded);
            out->kind = TP_PROM_COUNTER;
            break;
        }
        snprintf(out->name, sizeof out->name, "trainprof_%s", recorded);
        break;
    case TP_UNIT_BYTES:
    case TP_UNIT_WATTS:
    case TP_UNIT_CELSIUS: snprintf(out->name, sizeof out->name, "trainprof_%s", recorded); break;
    }
    if (out->integrate) { /* "bytes read per second" -> "bytes read, counted since ..." */
        const char *per = strstr(def->help, " per second");
        int n = per ? (int)(per - def->help) : (int)strlen(def->help);
        snprintf(out->help, sizeof out->help,
                 "%.*s, counted since the recording started (rate() gives the per-second figure)",
                 n, def->help);
    }
    return true;
}

/* Appends c to out when it fits; returns the new length. */
static size_t put(char *out, size_t cap, size_t n, char c)
{
    if (n + 1 < cap)
        out[n++] = c;
    return n;
}

size_t tp_prom_labels(const char *json, char *out, size_t cap)
{
    size_t n = 0;
    int strings = 0; /* strings seen: even = key next, odd = value next */
    bool in_string = false;
    for (const char *p = json; *p; p++) {
        char c = *p;
        if (!in_string) {
            if (c == '"') {
                in_string = true;
                if (strings % 2 == 0 && strings > 0)
                    n = put(out, cap, n, ',');
                if (strings % 2 == 1)
                    n = put(out, cap, n, '"');
            }
            continue;
        }
        if (c == '"') {
            in_string = false;
            if (strings % 2 == 0)
                n = put(out, cap, n, '=');
            else
                n = put(out, cap, n, '"');
            strings++;
            continue;
        }
        if (c == '\\' && p[1]) {
            char e = *++p;
            if (e == 'u') { /* control characters: dropped */
                for (int i = 0; i < 4 && p[1]; i++)
                    p++;
                continue;
            }
            if (e == 'n') {
                n = put(out, cap, n, '\\');
                n = put(out, cap, n, 'n');
            } else if (e == '"' || e == '\\') {
                n = put(out, cap, n, '\\');
                n = put(out, cap, n, e);
            } else if (e != 't' && e != 'r' && e != 'b' && e != 'f') {
                n = put(out, cap, n, e);
            }
            continue;
        }
        n = put(out, cap, n, c);
    }
    if (cap)
        out[n] = '\0';
    return n;
}

void tp_prom_value(FILE *out, double v)
{
    if (isnan(v))
        fputs("NaN", out);
    else if (isinf(v))
        fputs(v > 0 ? "+Inf" : "-Inf", out);
    else if (v == floor(v) && fabs(v) < 9e15)
        fprintf(out, "%lld", (long long)v);
    else
        fprintf(out, "%.17g", v);
}

void tp_prom_escape(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        uint32_t cp;
        p += tp_utf8_decode(p, &cp); /* the exposition format is UTF-8 */
        char buf[4];
        if (cp == '\\' || cp == '"')
            fputc('\\', out), fputc((int)cp, out);
        else if (cp == '\n')
            fputs("\\n", out);
        else
            fwrite(buf, 1, tp_utf8_encode(cp, buf), out);
    }
}
