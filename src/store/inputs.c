/* inputs.c: see inputs.h. */
#include "store/inputs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/merge.h"
#include "store/reader.h"

/* A full merge of many nodes' files takes minutes: one line on a terminal,
 * rewritten after each input. A summary-only merge is too quick to need it. */
static void show_progress(void *ctx, size_t done, size_t n, const char *input, bool all_rows)
{
    (void)ctx;
    if (all_rows)
        fprintf(stderr, "\rtrainprof: merging the run files: %zu of %zu (%s)\033[K", done, n,
                input);
}

/* The inputs as a name: "a.db + b.db" for a few; for more, their count and
 * a pattern, what all their names share around a "*" ("128 files:
 * runs/node-*.db"), or the first and the last. */
#define DISPLAY_LISTED 4
static void display_name(char *out, size_t cap, char *const *paths, size_t n)
{
    size_t len = 0;
    if (n <= DISPLAY_LISTED) {
        for (size_t i = 0; i < n && len < cap; i++)
            len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? " + " : "", paths[i]);
        return;
    }
    size_t prefix = strlen(paths[0]), suffix = prefix;
    for (size_t i = 1; i < n; i++) {
        size_t k = 0, m = strlen(paths[i]), l0 = strlen(paths[0]);
        while (k < prefix && paths[i][k] == paths[0][k])
            k++;
        prefix = k;
        k = 0;
        while (k < suffix && k < m && k < l0 && paths[i][m - 1 - k] == paths[0][l0 - 1 - k])
            k++;
        suffix = k;
    }
    size_t l0 = strlen(paths[0]);
    if (prefix + suffix > l0) /* one name inside another's: no pattern */
        suffix = l0 > prefix ? l0 - prefix : 0;
    if (prefix || suffix)
        snprintf(out, cap, "%zu files: %.*s*%s", n, (int)prefix, paths[0], paths[0] + l0 - suffix);
    else
        snprintf(out, cap, "%zu files: %s + ... + %s", n, paths[0], paths[n - 1]);
}

bool tp_inputs_open(tp_inputs *in, const char *who, char *const *paths, size_t n, bool summary_only,
                    bool plots, char *err, size_t cap)
{
    in->temp[0] = in->temp_dir[0] = '\0';
    in->path = n ? paths[0] : NULL;
    if (n <= 1)
        return true;
    display_name(in->display, sizeof in->display, paths, n);
    const char *dir = getenv("TMPDIR");
    /* a directory of its own (0700, random name), so nobody else's file in
     * a shared /tmp can stand where the merged run goes */
    snprintf(in->temp_dir, sizeof in->temp_dir, "%s/trainprof-%s-XXXXXX",
             dir && *dir ? dir : "/tmp", who);
    if (!mkdtemp(in->temp_dir)) {
        snprintf(err, cap, "%s: cannot make a temporary directory in %s: %s", who,
                 dir && *dir ? dir : "/tmp", strerror(errno));
        in->temp_dir[0] = '\0';
        return false;
    }
    snprintf(in->temp, sizeof in->temp, "%s/merged.db", in->temp_dir);
    char why[1024];
    tp_merge_options opt = {.summary_only = summary_only,
                            .plots = plots,
                            .progress = isatty(STDERR_FILENO) ? show_progress : NULL};
    bool merged = tp_merge_runs(in->temp, (const char *const *)paths, n, &opt, why, sizeof why);
    if (opt.progress)
        fputs("\r\033[K", stderr); /* the progress line goes away */
    if (!merged) {
        /* a refusal that --force lifts: say how, since `who` has no --force */
        bool forcible = strstr(why, "(use --force") != NULL;
        snprintf(err, cap, "%s: %s%s", who, why,
                 forcible ? " (merge them with `trainprof merge --force` to read them as one)"
                          : "");
        in->temp[0] = '\0';
        rmdir(in->temp_dir);
        in->temp_dir[0] = '\0';
        return false;
    }
    in->path = in->temp;
    return true;
}

void tp_inputs_done(tp_inputs *in)
{
    if (in->temp[0])
        unlink(in->temp);
    if (in->temp_dir[0])
        rmdir(in->temp_dir);
    in->temp[0] = in->temp_dir[0] = '\0';
}

void tp_inputs_name_run(const tp_inputs *in, tp_run *run)
{
    if (!in->temp[0] || !run)
        return;
    char *name = strdup(in->display);
    if (!name)
        return;
    free(run->path);
    run->path = name;
}
