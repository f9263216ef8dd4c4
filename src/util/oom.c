/* oom.c: running out of memory in a command that reads. */
#include "util/oom.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Noreturn void tp_out_of_memory(void)
{
    /* no stdio: it may need the memory that just ran out */
    static const char msg[] =
        "trainprof: out of memory (free some, or raise the limit: ulimit -v)\n";
    ssize_t n = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)n;
    exit(1); /* atexit handlers remove half-written outputs */
}

void *tp_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        tp_out_of_memory();
    return p;
}

void *tp_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        tp_out_of_memory();
    return p;
}

void *tp_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        tp_out_of_memory();
    return q;
}

char *tp_xstrdup(const char *s)
{
    char *d = strdup(s ? s : "");
    if (!d)
        tp_out_of_memory();
    return d;
}
