/* status_line.c: the live status line. */
#include "record/status_line.h"

#include "core/metric_catalog.h"
#include "core/run_keys.h"

#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "util/utf8.h"

/* The terminal's columns (out's, else 80). */
static size_t columns(FILE *out)
{
    struct winsize ws;
    return ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
}

void tp_status_line_draw(FILE *out, tp_live *live, double elapsed_s, double mem_total_bytes,
                         const char *where)
{
    char line[2048]; /* the stall's words (900 at most) and every figure */
    int secs = (int)elapsed_s;
    int n = snprintf(line, sizeof line, "trainprof %02d:%02d:%02d", secs / 3600, secs / 60 % 60,
                     secs % 60);
    double v;
    int32_t rank; /* a stall first: what matters most while it lasts */
    if (tp_live_worst_stall(live, 0, &rank, &v)) {
        char who[24] = "", count[32] = "";
        if (rank >= 0)
            snprintf(who, sizeof who, "rank %d ", (int)rank);
        size_t stalled =
            tp_live_stalled_ranks(live, 0, NULL, 0); /* the worst's said, all counted */
        if (stalled > 1)
            snprintf(count, sizeof count, " (%zu ranks)", stalled);
        n += snprintf(line + n, sizeof line - (size_t)n, "  STALLED%s: %sno progress for %.0f s%s",
                      count, who, v, where);
    }
    if (tp_live_latest(live, TP_METRIC_CPU_UTIL_PERCENT, "{}", &v))
        n += snprintf(line + n, sizeof line - (size_t)n, "  cpu %3.0f%%", v);
    if (tp_live_latest(live, TP_METRIC_HOST_MEM_USED_BYTES, "{}", &v))
        n += snprintf(line + n, sizeof line - (size_t)n, "  mem %.1f/%.1f GiB", v / (1 << 30),
                      mem_total_bytes / (1 << 30));
    for (int g = 0; g < 16 && n < (int)sizeof line - 16; g++) {
        char labels[32];
        tp_labels_gpu(labels, sizeof labels, g);
        if (!tp_live_latest(live, TP_METRIC_GPU_UTIL_PERCENT, labels, &v))
            break;
        n += snprintf(line + n, sizeof line - (size_t)n, "  gpu%d %3.0f%%", g, v);
    }
    tp_utf8_cut(line, columns(out) - 1); /* the last column left free: it wraps on some */
    fprintf(out, "\r\033[K%s", line);
    fflush(out);
}

void tp_status_line_clear(FILE *out)
{
    fputs("\r\033[K", out);
    fflush(out);
}
