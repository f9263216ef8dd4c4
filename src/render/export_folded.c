/* export_folded.c: the sampled stacks in the folded format. */
#include <stdlib.h>
#include <string.h>

#include "analyze/stack_facts.h"
#include "analyze/stack_own.h"
#include "render/export.h"
#include "render/units.h"
#include "store/reader_stacks.h"
#include "util/oom.h"
#include "util/utf8.h"

/* Writes text with the folded format's separators (';' between frames, the
 * last space before the count) made harmless, and every control character
 * (a file recorded before the recorder escaped them) as \xNN. */
static void folded_text(FILE *out, const char *text)
{
    char clean[2048];
    tp_text_escape(clean, sizeof clean, text);
    for (const char *p = clean; *p; p++)
        fputc(*p == ';' ? ':' : *p, out);
}

static const char *label_of(const tp_stack_count *c)
{
    return c->worker ? TP_STACK_WORKERS_PHASE : c->phase ? c->phase : "(no region)";
}

/* The frames from the root to node, ';'-separated. */
static void write_path(FILE *out, const tp_stack_tree *t, uint32_t node)
{
    uint32_t path[1024];
    size_t n = tp_stack_path(t, node, path, sizeof path / sizeof *path);
    while (n-- > 0) {
        uint32_t f = t->frame[path[n] - 1];
        const char *function = f >= 1 && f <= t->nframes ? t->function[f - 1] : "?";
        const char *file = f >= 1 && f <= t->nframes ? t->file[f - 1] : "?";
        fputc(';', out);
        folded_text(out, function);
        fputs(" (", out);
        folded_text(out, tp_short_path(file));
        fprintf(out, ":%d)", t->line[path[n] - 1]);
    }
}

typedef struct folded_line {
    char *text; /* "PHASE;frame;...;frame" */
    uint64_t count;
} folded_line;

static int by_text(const void *x, const void *y)
{
    return strcmp(((const folded_line *)x)->text, ((const folded_line *)y)->text);
}

bool tp_export_folded(FILE *out, tp_run *run, tp_export_budget *b, char *err, size_t cap)
{
    tp_stack_tree tree;
    tp_stack_count *rows = NULL;
    size_t n = 0;
    bool ok =
        tp_stack_tree_load(run, &tree, err, cap) && tp_run_stack_counts(run, &rows, &n, err, cap);
    /* each row's line as text: the same stack may be several nodes (of
     * several ranks' or nodes' files merged) and several rows (states) */
    folded_line *lines = tp_xcalloc(n + 1, sizeof *lines);
    for (size_t i = 0; ok && i < n; i++) {
        size_t len = 0;
        FILE *mem = open_memstream(&lines[i].text, &len);
        if (!mem)
            tp_out_of_memory();
        folded_text(mem, label_of(&rows[i]));
        write_path(mem, &tree, rows[i].node);
        if (fclose(mem) != 0)
            tp_out_of_memory();
        lines[i].count = rows[i].samples;
    }
    if (ok && n)
        qsort(lines, n, sizeof *lines, by_text);
    for (size_t i = 0; ok && i < n;) {
        uint64_t count = 0;
        size_t j = i;
        for (; j < n && strcmp(lines[i].text, lines[j].text) == 0; j++)
            count += lines[j].count;
        if (tp_export_room(b))
            fprintf(out, "%s %llu\n", lines[i].text, (unsigned long long)count);
        i = j;
    }
    for (size_t i = 0; i < n; i++)
        free(lines[i].text);
    free(lines);
    tp_stack_tree_free(&tree);
    tp_stack_counts_free(rows, n);
    return ok;
}
