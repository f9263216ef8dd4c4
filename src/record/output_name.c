/* output_name.c: %h, %r, %p and %% in run file names. */
#include "record/output_name.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *node_rank(void)
{
    const char *names[] = {"SLURM_NODEID", "NODE_RANK", "GROUP_RANK"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v)
            return v;
    }
    return "0";
}

bool tp_output_name_expand(const char *pattern, char *out, size_t cap, char *err, size_t errcap)
{
    size_t n = 0;
    for (const char *p = pattern; *p; p++) {
        char piece[300];
        if (*p != '%') {
            piece[0] = *p;
            piece[1] = '\0';
        } else if (p[1] == 'h') {
            if (gethostname(piece, sizeof piece - 1) != 0)
                snprintf(piece, sizeof piece, "unknown");
            piece[sizeof piece - 1] = '\0';
            p++;
        } else if (p[1] == 'r') {
            snprintf(piece, sizeof piece, "%s", node_rank());
            p++;
        } else if (p[1] == 'p') {
            snprintf(piece, sizeof piece, "%d", (int)getpid());
            p++;
        } else if (p[1] == '%') {
            snprintf(piece, sizeof piece, "%%");
            p++;
        } else {
            snprintf(err, errcap,
                     "--output: unknown %%%c in '%s' (%%h host, %%r node rank, "
                     "%%p pid, %%%% a percent sign)",
                     p[1] ? p[1] : ' ', pattern);
            return false;
        }
        size_t len = strlen(piece);
        if (n + len + 1 > cap) {
            snprintf(err, errcap, "--output: '%s' expands to a name too long", pattern);
            return false;
        }
        memcpy(out + n, piece, len);
        n += len;
    }
    out[n] = '\0';
    return true;
}
