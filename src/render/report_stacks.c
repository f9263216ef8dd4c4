/* report_stacks.c: the report's part on where each phase's time goes in the
 * code (analyze/stack_facts.h), as text and JSON. */
#include <stdio.h>
#include <string.h>

#include "core/phases.h"
#include "render/report.h"
#include "render/units.h"
#include "trainprof.h"

#define GROUPS_SHOWN           12 /* groups the text shows, the biggest of each rank first */
#define FUNCTIONS_SHOWN        5
#define WAITED_FUNCTIONS_SHOWN 3    /* on the one line of the threads that only waited */
#define GROUP_MIN_SHARE        0.02 /* of its rank's samples: smaller groups are left to --json */

/* What a group's samples were doing, in words: a user region's with the
 * standard one it ran inside, where known. */
static void group_label(char *buf, size_t cap, const tp_stack_facts *f, const tp_stack_group *g)
{
    const tp_region_within *in = g->phase && !g->borrowed && !g->within
                                     ? tp_region_within_find(&f->withins, g->phase)
                                     : NULL;
    if (g->workers)
        snprintf(buf, cap, "DataLoader workers");
    else if (g->waited)
        snprintf(buf, cap, "threads that only waited");
    else if (g->within)
        snprintf(buf, cap, "%s (inside %s)", g->phase, g->within);
    else if (in)
        snprintf(buf, cap, "%s (outside the phases)", g->phase);
    else if (g->phase)
        snprintf(buf, cap, "%s", g->phase);
    else if (g->borrowed)
        snprintf(buf, cap, "outside the phases");
    else
        snprintf(buf, cap, "outside regions");
}

const char *const tp_doing_words[] = {"", "on a CPU", "waiting", "waiting on storage"};
const char *const tp_doing_keys[] = {NULL, "on_cpu", "waiting", "waiting_on_storage"};

tp_doing tp_doing_of(double known, double on_cpu, double blocked)
{
    if (!(known > 0))
        return TP_DOING_UNKNOWN;
    if (2 * on_cpu >= known)
        return TP_DOING_ON_CPU;
    return 2 * blocked >= known - on_cpu ? TP_DOING_STORAGE : TP_DOING_WAITING;
}

/* What a function's self samples were doing. */
static tp_doing function_doing(const tp_stack_function *fn)
{
    return tp_doing_of((double)fn->self_known, (double)fn->self_on_cpu, (double)fn->self_blocked);
}

bool tp_stack_group_blocked_said(const tp_stack_group *g)
{
    return g->known && 20 * g->blocked >= g->known;
}

/* A share of known, NULL where none was known (JSON). */
static void share_json(json_writer *w, const char *key, uint64_t part, uint64_t known)
{
    json_key(w, key);
    if (known)
        json_double(w, (double)part / (double)known);
    else
        json_null(w);
}

/* The rank's samples, each once (a user region's count in the phase it
 * ran inside too). */
static uint64_t rank_samples(const tp_stack_facts *f, int rank)
{
    uint64_t n = 0;
    for (size_t i = 0; i < f->n; i++)
        n += f->groups[i].rank == rank ? f->groups[i].samples - f->groups[i].borrowed : 0;
    return n;
}

/* The rest of a group of threads that only waited, on its line: where,
 * the first few functions with their shares. */
static void waited_line(FILE *out, const tp_stack_facts *f, const tp_stack_group *g)
{
    size_t shown = 0;
    for (size_t k = 0; k < g->nfunctions && shown < WAITED_FUNCTIONS_SHOWN; k++) {
        const tp_stack_function *fn = &g->functions[k];
        double share = (double)fn->self / (double)g->samples;
        if (share < 0.005 && shown) /* 0% reads as noise */
            break;
        fprintf(out, "%s %s %.0f%%", shown++ ? "," : ", in", tp_stack_facts_function(f, fn->frame),
                100.0 * share);
    }
    if (tp_stack_group_blocked_said(g))
        fprintf(out, "; %.0f%% waiting on storage (state D)",
                100.0 * (double)g->blocked / (double)g->known);
    fputc('\n', out);
}

/* The samples the samplers dropped, full: said where there were any. */
static void dropped_line(FILE *out, const tp_stack_facts *f)
{
    if (f->dropped)
        fprintf(out,
                "  %llu %sstack samples were dropped on the samplers' full rings: the shares "
                "above miss them (TRAINPROF_RING_SLOTS raises the ring size)\n",
                (unsigned long long)f->dropped, f->n ? "more " : "");
}

void tp_report_stacks_text(FILE *out, const tp_summary *s)
{
    const tp_stack_facts *f = &s->stacks;
    if (!f->n && f->dropped) {
        fprintf(out, "\nInside the phases (sampled Python stacks: none kept)\n");
        dropped_line(out, f);
    }
    if (!f->n)
        return;
    fprintf(out,
            "\nInside the phases (sampled Python stacks: %llu samples; per rank and what the "
            "thread had open, the functions with the most samples: self, then total share; "
            "a region of yours counts in the phase around it too)\n",
            (unsigned long long)f->samples);
    size_t shown = 0;
    for (size_t i = 0; i < f->n && shown < GROUPS_SHOWN; i++) {
        const tp_stack_group *g = &f->groups[i];
        uint64_t all = rank_samples(f, g->rank);
        if (!g->nfunctions || (double)g->samples < GROUP_MIN_SHARE * (double)all)
            continue;
        if (!g->phase && !g->workers && !g->waited && g->borrowed == g->samples)
            continue; /* all of it is shown by its regions', "(outside the phases)" */
        shown++;
        char label[256], rank[32]; /* the whole report is made terminal-safe (cmd_report.c) */
        group_label(label, sizeof label, f, g);
        if (g->rank >= 0)
            snprintf(rank, sizeof rank, "rank %d  ", g->rank);
        else
            rank[0] = '\0';
        fprintf(out, "  %s%s: %llu samples", rank, label, (unsigned long long)g->samples);
        if (g->waited) { /* one line: what they waited in */
            waited_line(out, f, g);
            continue;
        }
        if (g->borrowed)
            fprintf(out, " (%.0f%% in regions of yours%s)",
                    100.0 * (double)g->borrowed / (double)g->samples, g->phase ? " inside it" : "");
        if (g->known)
            fprintf(out, ", %.0f%% on a CPU", 100.0 * (double)g->on_cpu / (double)g->known);
        if (tp_stack_group_blocked_said(g))
            fprintf(out, ", %.0f%% waiting on storage (state D)",
                    100.0 * (double)g->blocked / (double)g->known);
        fputc('\n', out);
        for (size_t k = 0; k < g->nfunctions && k < FUNCTIONS_SHOWN; k++) {
            const tp_stack_function *fn = &g->functions[k];
            char place[TP_PLACE_MAX];
            tp_format_place(place, sizeof place, tp_stack_facts_file(f, fn->frame), fn->line);
            fprintf(out, "    %5.1f%% %5.1f%%  %s  %s",
                    100.0 * (double)fn->self / (double)g->samples,
                    100.0 * (double)fn->total / (double)g->samples,
                    tp_stack_facts_function(f, fn->frame), place);
            if (fn->self_known)
                fprintf(out, "  (%s)", tp_doing_words[function_doing(fn)]);
            fputc('\n', out);
        }
    }
    dropped_line(out, f);
}

void tp_report_stacks_json(json_writer *w, const tp_summary *s)
{
    const tp_stack_facts *f = &s->stacks;
    json_key(w, "stacks");
    json_array_begin(w);
    for (size_t i = 0; i < f->n; i++) {
        const tp_stack_group *g = &f->groups[i];
        json_object_begin(w);
        json_key(w, "rank");
        if (g->rank >= 0)
            json_int(w, g->rank);
        else
            json_null(w);
        json_key(w, "phase"); /* the region open; the workers' or waiters' role; null none */
        if (g->workers)
            json_string(w, TP_STACK_WORKERS_PHASE);
        else if (g->waited)
            json_string(w, TP_STACK_WAITED_PHASE);
        else if (g->phase)
            json_string(w, g->phase);
        else
            json_null(w);
        json_key(w, "samples");
        json_int(w, (int64_t)g->samples);
        /* a user region's: the standard one it ran inside, its samples in
         * that one's too; a standard one's: how many of its are those */
        json_key(w, "within");
        if (g->within)
            json_string(w, g->within);
        else
            json_null(w);
        json_key(w, "samples_in_user_regions");
        json_int(w, (int64_t)g->borrowed);
        share_json(w, "on_cpu_share", g->on_cpu, g->known);
        share_json(w, "blocked_share", g->blocked, g->known); /* state D */
        json_key(w, "functions");
        json_array_begin(w);
        for (size_t k = 0; k < g->nfunctions; k++) {
            const tp_stack_function *fn = &g->functions[k];
            json_object_begin(w);
            json_key(w, "function");
            json_string(w, tp_stack_facts_function(f, fn->frame));
            json_key(w, "file");
            json_string(w, tp_stack_facts_file(f, fn->frame));
            json_key(w, "line");
            json_int(w, fn->line);
            json_key(w, "self_share");
            json_double(w, (double)fn->self / (double)g->samples);
            json_key(w, "total_share");
            json_double(w, (double)fn->total / (double)g->samples);
            share_json(w, "on_cpu_share", fn->self_on_cpu, fn->self_known);
            share_json(w, "blocked_share", fn->self_blocked, fn->self_known);
            json_object_end(w);
        }
        json_array_end(w);
        json_object_end(w);
    }
    json_array_end(w);
    json_key(w, "stack_samples_dropped"); /* the samplers' rings were full: the shares miss them */
    json_int(w, (int64_t)f->dropped);
}

/* Fewer samples of a group than this say where a moment went, not where
 * the time goes: a verdict cites none of them (the stacks' section shows
 * them). A dying run's one sample read "100% of its samples" before. */
#define CITE_MIN_SAMPLES 20

/* The rank's group the verdict's phase is best seen in: for input, its
 * DataLoader workers' (the loading itself), else dataloader_next's (the
 * loading done in the training's own process); for compute, the biggest of
 * its computing phases; NULL where that has under CITE_MIN_SAMPLES. */
static const tp_stack_group *cited_group(const tp_stack_facts *f, int rank, bool input)
{
    const tp_stack_group *best = NULL;
    for (size_t i = 0; i < f->n; i++) {
        const tp_stack_group *g = &f->groups[i];
        if (g->rank != rank || !g->nfunctions)
            continue;
        bool fits =
            input ? g->workers || (g->phase && strcmp(g->phase, TP_PHASE_DATALOADER_NEXT) == 0)
                  : g->phase && tp_phase_kind_of(g->phase) == TP_PHASE_KIND_COMPUTE;
        if (!fits)
            continue;
        if (!best || (input && g->workers && !best->workers) ||
            ((!input || g->workers == best->workers) && g->samples > best->samples))
            best = g;
    }
    return best && best->samples >= CITE_MIN_SAMPLES ? best : NULL;
}

void tp_stacks_cite(char *out, size_t cap, const tp_stack_facts *f, int rank, bool input)
{
    out[0] = '\0';
    const tp_stack_group *g = cited_group(f, rank, input);
    if (!g)
        return;
    size_t len =
        (size_t)snprintf(out, cap, " Inside: %s%s time goes to ",
                         g->workers ? "the DataLoader workers'" : g->phase, g->workers ? "" : "'s");
    for (size_t k = 0; k < g->nfunctions && k < 2 && len < cap; k++) {
        const tp_stack_function *fn = &g->functions[k];
        if (k && 200 * fn->self < g->samples)
            break; /* a second function under half a percent says nothing */
        /* a waiting function says so ("waiting", "waiting on storage") */
        tp_doing doing = function_doing(fn);
        bool waiting = doing == TP_DOING_WAITING || doing == TP_DOING_STORAGE;
        char place[TP_PLACE_MAX];
        tp_format_place(place, sizeof place, tp_stack_facts_file(f, fn->frame), fn->line);
        len += (size_t)snprintf(out + len, cap - len, "%s%s (%s) %.0f%%%s%s", k ? ", " : "",
                                tp_stack_facts_function(f, fn->frame), place,
                                100.0 * (double)fn->self / (double)g->samples, waiting ? " " : "",
                                waiting ? tp_doing_words[doing] : "");
    }
    if (len < cap) /* how many: 2 of 3 samples is a hint, 2,000 of 3,000 a finding */
        snprintf(out + len, cap - len, " of its %llu samples.", (unsigned long long)g->samples);
}
