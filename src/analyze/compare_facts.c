/* compare_facts.c: see compare_facts.h. */
#include "analyze/compare_facts.h"

#include <stdio.h>
#include <string.h>

#include "core/run_keys.h"
#include "util/json_read.h"
#include "util/utf8.h"

/* The facts found so far. */
typedef struct facts {
    tp_compare_fact *v;
    size_t n;
} facts;

static void add_fact(facts *c, const char *key, const char *a, const char *b)
{
    if (!a)
        a = "";
    if (!b)
        b = "";
    if (strcmp(a, b) == 0 || c->n >= TP_COMPARE_FACTS)
        return;
    tp_compare_fact *f = &c->v[c->n++];
    tp_utf8_clean(f->key, sizeof f->key, key);
    tp_utf8_clean(f->a, sizeof f->a, a);
    tp_utf8_clean(f->b, sizeof f->b, b);
}

/* The meta keys compared, besides the facts (fact.*) of either run. */
static const char *const compared_meta[] = {
    "host",
    "cpu_model",
    TP_META_CPU_COUNT,
    "kernel",
    TP_META_CGROUP_CPU_LIMIT_CORES,
    TP_META_CGROUP_MEMORY_LIMIT_BYTES,
    "gpu_driver_version",
    "trainprof_version",
};

static bool fact_in(const tp_run *run, const char *key)
{
    return tp_run_meta_get(run, key) != NULL;
}

size_t tp_compare_differing_facts(const tp_summary *a, const tp_summary *b, int world_a,
                                  int world_b, tp_compare_fact out[TP_COMPARE_FACTS])
{
    facts found = {out, 0}, *c = &found;
    add_fact(c, TP_META_COMMAND, tp_run_meta_get(a->run, TP_META_COMMAND),
             tp_run_meta_get(b->run, TP_META_COMMAND));
    for (size_t i = 0; i < sizeof compared_meta / sizeof *compared_meta; i++)
        add_fact(c, compared_meta[i], tp_run_meta_get(a->run, compared_meta[i]),
                 tp_run_meta_get(b->run, compared_meta[i]));
    char wa[16], wb[16];
    snprintf(wa, sizeof wa, "%d", world_a);
    snprintf(wb, sizeof wb, "%d", world_b);
    add_fact(c, "world_size", wa, wb);
    add_fact(c, "gpu", a->run->ngpus ? a->run->gpus[0].name : NULL,
             b->run->ngpus ? b->run->gpus[0].name : NULL);
    for (int side = 0; side < 2; side++) { /* the script's facts: A's, then B's alone */
        const tp_run *run = side ? b->run : a->run, *other = side ? a->run : b->run;
        for (size_t i = 0; i < run->nmeta; i++) {
            const char *key = run->meta[i].key;
            if (strncmp(key, "fact.", 5) != 0 || (side && fact_in(other, key)))
                continue;
            add_fact(c, key + 5, tp_run_meta_get(a->run, key), tp_run_meta_get(b->run, key));
        }
    }
    return found.n;
}

/* The program a command runs: its first word, and for an interpreter
 * (python...) the script or -m module after it. */
typedef struct program_ctx {
    char *out;
    size_t cap;
    int words;
    bool interpreter, module, done;
} program_ctx;

static void program_word(void *p, const char *v)
{
    program_ctx *c = p;
    if (c->done)
        return;
    if (c->words++ == 0) {
        const char *base = strrchr(v, '/');
        base = base ? base + 1 : v;
        c->interpreter = strncmp(base, "python", 6) == 0;
        tp_utf8_clean(c->out, c->cap, v);
        c->done = !c->interpreter;
        return;
    }
    if (c->module || v[0] != '-') {
        size_t len = strlen(c->out);
        snprintf(c->out + len, c->cap - len, " %s%s", c->module ? "-m " : "", v);
        c->done = true;
    } else if (strcmp(v, "-m") == 0) {
        c->module = true;
    } else if (strcmp(v, "-c") == 0) {
        c->done = true; /* code on the command line: the interpreter is all there is */
    }
}

static void program_of(const tp_run *run, char *out, size_t cap)
{
    out[0] = '\0';
    const char *argv = tp_run_meta_get(run, TP_META_ARGV);
    program_ctx c = {out, cap, 0, false, false, false};
    if (argv && !tp_json_string_array(argv, program_word, &c))
        out[0] = '\0';
}

bool tp_compare_same_program(const tp_run *a, const tp_run *b)
{
    char pa[256], pb[256];
    program_of(a, pa, sizeof pa);
    program_of(b, pb, sizeof pb);
    return strcmp(pa, pb) == 0;
}
