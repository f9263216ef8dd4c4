/* counted_file.c: see counted_file.h. */
#include "util/counted_file.h"

#include <stdlib.h>

typedef struct counted {
    FILE *under;
    uint64_t *written;
} counted;

static ssize_t counted_write(void *cookie, const char *buf, size_t size)
{
    counted *c = cookie;
    size_t n = fwrite(buf, 1, size, c->under);
    *c->written += n;
    return n ? (ssize_t)n : -1;
}

static int counted_close(void *cookie)
{
    counted *c = cookie;
    int rc = fflush(c->under);
    free(c);
    return rc;
}

FILE *tp_counted_file(FILE *under, uint64_t *written)
{
    counted *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    *c = (counted){under, written};
    cookie_io_functions_t io = {NULL, counted_write, NULL, counted_close};
    FILE *f = fopencookie(c, "w", io);
    if (!f)
        free(c);
    return f;
}
