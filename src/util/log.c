/* log.c: one-line error and warning messages on stderr. */
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>

static void log_line(const char *level, const char *fmt, va_list ap)
{
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    fprintf(stderr, "trainprof: %s%s\n", level, line);
}

void tp_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_line("error: ", fmt, ap);
    va_end(ap);
}

void tp_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_line("warning: ", fmt, ap);
    va_end(ap);
}
