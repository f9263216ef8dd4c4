/* units.c: human-readable units. */
#include "render/units.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void scaled(char *buf, size_t cap, double v, double step, const char *const *names, int n,
                   const char *suffix)
{
    int i = 0;
    while (i + 1 < n && fabs(v) >= step) {
        v /= step;
        i++;
    }
    snprintf(buf, cap, fabs(v) >= 100 || i == 0 ? "%.0f %s%s" : "%.2f %s%s", v, names[i], suffix);
}

void tp_format_value(char *buf, size_t cap, const char *unit, double v)
{
    static const char *const binary[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    static const char *const decimal[] = {"B", "kB", "MB", "GB", "TB"};
    static const char *const joules[] = {"J", "kJ", "MJ", "GJ"};
    if (!isfinite(v)) { /* a crafted file's inf is no figure either */
        snprintf(buf, cap, "-");
        return;
    }
    if (strcmp(unit, "percent") == 0)
        snprintf(buf, cap, "%.1f %%", v);
    else if (strcmp(unit, "bytes") == 0)
        scaled(buf, cap, v, 1024, binary, 5, "");
    else if (strcmp(unit, "bytes_per_s") == 0)
        scaled(buf, cap, v, 1000, decimal, 5, "/s");
    else if (strcmp(unit, "ops_per_s") == 0)
        snprintf(buf, cap, "%.1f /s", v);
    else if (strcmp(unit, "watts") == 0)
        snprintf(buf, cap, "%.1f W", v);
    else if (strcmp(unit, "joules") == 0 && v != 0 && fabs(v) < 10)
        snprintf(buf, cap, "%.3g J", v); /* energy per sample: fractions of a joule */
    else if (strcmp(unit, "joules") == 0)
        scaled(buf, cap, v, 1000, joules, 4, "");
    else if (strcmp(unit, "celsius") == 0)
        snprintf(buf, cap, "%.0f C", v);
    else if (strcmp(unit, "seconds") == 0)
        tp_format_duration(buf, cap, v);
    else if (strcmp(unit, "mhz") == 0)
        snprintf(buf, cap, "%.0f MHz", v);
    else if (v == floor(v))
        snprintf(buf, cap, "%.0f", v);
    else
        snprintf(buf, cap, "%.1f", v);
}

void tp_format_duration(char *buf, size_t cap, double s)
{
    if (!isfinite(s) || s < 0)
        snprintf(buf, cap, "-");
    else if (s == 0)
        snprintf(buf, cap, "0");
    else if (s < 1e-3)
        snprintf(buf, cap, "%.1f us", s * 1e6);
    else if (s < 0.01)
        snprintf(buf, cap, "%.2f ms", s * 1000);
    else if (s < 1)
        snprintf(buf, cap, "%.0f ms", s * 1000);
    else if (s < 60)
        snprintf(buf, cap, "%.1f s", s);
    else if (s < 3600)
        snprintf(buf, cap, "%d min %02d s", (int)(s / 60), (int)fmod(s, 60));
    else if (s < 1e15) /* hours as a whole number; beyond, no one's run: the figure itself */
        snprintf(buf, cap, "%.0f h %02d min", floor(s / 3600), (int)fmod(s / 60, 60));
    else
        snprintf(buf, cap, "%.3g s", s);
}

void tp_format_place(char *buf, size_t cap, const char *file, int line)
{
    if (line > 0)
        snprintf(buf, cap, "%s:%d", tp_short_path(file), line);
    else
        snprintf(buf, cap, "%s", tp_short_path(file));
}

const char *tp_short_path(const char *path)
{
    const char *last = strrchr(path, '/');
    if (!last)
        return path;
    const char *p = last;
    while (p > path && p[-1] != '/')
        p--;
    return p;
}
