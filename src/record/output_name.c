/* output_name.c: %h, %r, %p and %% in run file names. */
#include "record/output_name.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The node rank a launcher set (its variable's name in *name), NULL none. */
static const char *node_rank(const char **name)
{
    const char *names[] = {"SLURM_NODEID", "NODE_RANK", "GROUP_RANK"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v) {
            *name = names[i];
            return v;
        }
    }
    return NULL;
}

bool tp_output_name_expand(const char *pattern, char *out, size_t cap, char *err, size_t errcap,
                           char *hint, size_t hintcap)
{
    size_t n = 0;
    bool host = false, rank = false, pid = false, rank_unset = false;
    hint[0] = '\0';
    for (const char *p = pattern; *p; p++) {
        char piece[300];
        if (*p != '%') {
            piece[0] = *p;
            piece[1] = '\0';
        } else if (p[1] == 'h') {
            if (gethostname(piece, sizeof piece - 1) != 0)
                snprintf(piece, sizeof piece, "unknown");
            piece[sizeof piece - 1] = '\0';
            for (char *c = piece; *c; c++) /* a name, never a path */
                if (*c == '/')
                    *c = '_';
            host = true;
            p++;
        } else if (p[1] == 'r') {
            const char *name = NULL, *r = node_rank(&name);
            if (r && (strspn(r, "0123456789") != strlen(r) || strlen(r) > 10)) {
                snprintf(err, errcap,
                         "--output: %%r: %s is '%.40s%s', not a node rank (a whole number)", name,
                         r, strlen(r) > 40 ? "..." : "");
                return false;
            }
            snprintf(piece, sizeof piece, "%s", r ? r : "0");
            rank = true;
            rank_unset = !r;
            p++;
        } else if (p[1] == 'p') {
            snprintf(piece, sizeof piece, "%d", (int)getpid());
            pid = true;
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
    if (rank_unset && !pid)
        snprintf(hint, hintcap,
                 "%%r is 0 here: no SLURM_NODEID, NODE_RANK or GROUP_RANK in the environment "
                 "(%%h names each node by its host)");
    else if (host && !rank && !pid)
        snprintf(hint, hintcap,
                 "%%h is the same for every recording on this host: one `record` per node "
                 "records every rank started under it (%%p names each recording apart)");
    return true;
}
