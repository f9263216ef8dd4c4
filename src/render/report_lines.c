/* report_lines.c: the report's shared ways of writing a line (report.h):
 * a paragraph wrapped at 100 columns, a run's time as the wall clock's.
 * Apart from the parts that use them (the answer, the course, the ends), so
 * that those call no circle. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "render/report.h"

void tp_report_wrapped(FILE *out, const char *head, const char *text)
{
    size_t col = (size_t)fprintf(out, "  %s", head);
    bool line_start = true; /* nothing of text on this line yet */
    for (const char *p = text; *p;) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        const char *sp = strchr(p, ' ');
        size_t word = sp ? (size_t)(sp - p) : strlen(p);
        if (!line_start && col + 1 + word > 100) {
            fputs("\n    ", out);
            col = 4;
        } else if (!line_start) {
            fputc(' ', out);
            col++;
        }
        fwrite(p, 1, word, out);
        col += word;
        p += word;
        line_start = false;
    }
    fputc('\n', out);
}

void tp_report_wall_time(char *out, size_t cap, const tp_run_inventory *inv, double t_s)
{
    int64_t start = inv->start_wall_ns;
    out[0] = '\0';
    if (start < 0 || !(t_s >= 0 && t_s < 1e9))
        return;
    double wall = (double)start / 1e9 + t_s;
    if (!(wall > 0 && wall < 1e11))
        return;
    time_t secs = (time_t)wall;
    struct tm tm;
    if (gmtime_r(&secs, &tm))
        strftime(out, cap, "%H:%M:%S", &tm);
}
