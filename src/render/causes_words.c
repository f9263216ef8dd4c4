/* causes_words.c: see causes_words.h. */
#include "render/causes_words.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "analyze/regime_stacks.h"
#include "core/metric_catalog.h"
#include "render/units.h"

/* "decode (img.py:12) was in 61% of the DataLoader workers' samples instead
 * of 30%" (or "of dataloader_next's samples"): what snprintf returns. */
static int function_cause_text(char *out, size_t cap, const char *sep, const tp_regime_cause *c)
{
    char place[TP_PLACE_MAX];
    tp_format_place(place, sizeof place, c->file, (int)c->line);
    if (fabs(c->after - c->before) < TP_REGIME_FUNCTION_MOVE) /* what the phase is made of */
        return snprintf(out, cap,
                        "%s%s (%s), in %.0f%% of %s%s samples before and %.0f%% after, "
                        "grew with it",
                        sep, c->function, place, 100 * c->before,
                        c->workers ? "the DataLoader workers" : tp_step_phase_names[c->phase],
                        c->workers ? "'" : "'s", 100 * c->after);
    return snprintf(out, cap, "%s%s (%s) was in %.0f%% of %s%s samples instead of %.0f%%", sep,
                    c->function, place, 100 * c->after,
                    c->workers ? "the DataLoader workers" : tp_step_phase_names[c->phase],
                    c->workers ? "'" : "'s", 100 * c->before);
}

/* "its step thread's time on a CPU went from 29 ms to 39 ms a step: the
 * same code computed slower ...": what snprintf returns. */
static int computed_cause_text(char *out, size_t cap, const char *sep, const tp_regime_cause *c)
{
    char a[32], b[32];
    tp_format_duration(a, sizeof a, c->before);
    tp_format_duration(b, sizeof b, c->after);
    bool more = c->after > c->before;
    return snprintf(out, cap,
                    "%sits step thread's time on a CPU went from %s to %s a step: the same code "
                    "computed %s (the CPU's clock, other work on its core) or did %s",
                    sep, a, b, more ? "slower" : "faster", more ? "more" : "less");
}

/* TP_CAUSE_STORAGE_WAIT's words: the training's threads in state D, a mean
 * count, said as a share of the time under one thread at a time, else as
 * threads at a time. */
static int storage_wait_words(char *out, size_t cap, const char *sep, const tp_regime_cause *c)
{
    if (fmax(c->before, c->after) < 1)
        return snprintf(out, cap,
                        "%sthe training's threads waited on storage %.0f%% of the time instead of "
                        "%.0f%% (state D, all of them together)",
                        sep, 100 * c->after, 100 * c->before);
    return snprintf(out, cap,
                    "%sthe training's threads waiting on storage went from %.1f to %.1f at a time "
                    "on average (state D)",
                    sep, c->before, c->after);
}

void tp_causes_text(char *out, size_t cap, const tp_regime_cause *causes, size_t ncauses)
{
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < ncauses && len < cap; i++) {
        const tp_regime_cause *c = &causes[i];
        char a[32], b[32];
        const char *sep = i == 0 ? "" : i + 1 == ncauses ? " and " : ", ";
        int n = 0;
        switch (c->kind) {
        case TP_CAUSE_PHASE:
            tp_format_duration(a, sizeof a, c->before);
            tp_format_duration(b, sizeof b, c->after);
            n = snprintf(out + len, cap - len, "%s%s went from %s to %s a step", sep,
                         tp_step_phase_names[c->phase], a, b);
            break;
        case TP_CAUSE_OTHERS_CPU:
            n = snprintf(out + len, cap - len,
                         "%sprocesses not the training's used %.0f%% of the CPUs instead of %.0f%%",
                         sep, c->after, c->before);
            break;
        case TP_CAUSE_CPU_STEAL:
            n = snprintf(out + len, cap - len,
                         "%sthe virtual machine's host gave its CPUs to others (steal) %.0f%% of "
                         "the time instead of %.0f%%",
                         sep, c->after, c->before);
            break;
        case TP_CAUSE_STEP_COMPUTED: n = computed_cause_text(out + len, cap - len, sep, c); break;
        case TP_CAUSE_CPU_WAIT:
            n = snprintf(out + len, cap - len,
                         "%sthe training's processes waited for a CPU %.0f%% of the time instead "
                         "of %.0f%%",
                         sep, c->after, c->before);
            break;
        case TP_CAUSE_STEP_CPU_WAIT:
            n = snprintf(out + len, cap - len,
                         "%sits step thread waited for a CPU %.0f%% of the time instead of %.0f%%",
                         sep, c->after, c->before);
            break;
        case TP_CAUSE_CPU_PRESSURE:
        case TP_CAUSE_IO_PRESSURE:
            n = snprintf(
                out + len, cap - len, "%stasks waited for %s %.0f%% of the time instead of %.0f%%",
                sep, c->kind == TP_CAUSE_CPU_PRESSURE ? "a CPU" : "storage", c->after, c->before);
            break;
        case TP_CAUSE_STORAGE_WAIT: n = storage_wait_words(out + len, cap - len, sep, c); break;
        case TP_CAUSE_GPU_CLOCK:
            n = snprintf(out + len, cap - len, "%sits GPU's SM clock went from %.0f to %.0f MHz",
                         sep, c->before, c->after);
            break;
        case TP_CAUSE_GPU_THROTTLE:
            n = snprintf(out + len, cap - len,
                         "%sits GPU was held back by heat, a hardware slowdown or the power brake"
                         " in %.0f%% of its samples instead of %.0f%%",
                         sep, 100 * c->after, 100 * c->before);
            break;
        case TP_CAUSE_SWAP:
            tp_format_value(a, sizeof a, "bytes", c->before);
            tp_format_value(b, sizeof b, "bytes", c->after);
            n = snprintf(out + len, cap - len, "%sswap in use grew from %s to %s", sep, a, b);
            break;
        case TP_CAUSE_FUNCTION: n = function_cause_text(out + len, cap - len, sep, c); break;
        case TP_CAUSE_STRAGGLER: {
            char m[32];
            tp_format_duration(a, sizeof a, c->before);
            tp_format_duration(b, sizeof b, c->after);
            tp_format_duration(m, sizeof m, c->median_after);
            n = snprintf(out + len, cap - len,
                         "%srank %d became a straggler, whom the others wait for: its own work "
                         "went from %s to %s a step, against the median rank's %s (its %s)",
                         sep, c->rank, a, b, m, c->workers ? "input" : "compute");
            break;
        }
        }
        len = n > 0 && (size_t)n < cap - len ? len + (size_t)n : cap;
    }
}

static const char *const cause_names[] = {"phase",
                                          "others_cpu_percent",
                                          "training_cpu_wait_percent",
                                          "cpu_pressure_percent",
                                          "io_pressure_percent",
                                          "swap_in_use_bytes",
                                          "gpu_clock",
                                          "gpu_trouble_share",
                                          "function",
                                          TP_METRIC_STEP_THREAD_CPU_WAIT_PERCENT,
                                          "straggler",
                                          TP_METRIC_CPU_STEAL_PERCENT,
                                          "step_thread_cpu_s",
                                          "training_blocked"};
_Static_assert(sizeof cause_names / sizeof *cause_names == TP_CAUSE_STORAGE_WAIT + 1,
               "a name for every cause kind");

void tp_causes_json(json_writer *w, const tp_regime_cause *causes, size_t n)
{
    json_key(w, "causes");
    json_array_begin(w);
    for (size_t i = 0; i < n; i++) {
        const tp_regime_cause *c = &causes[i];
        json_object_begin(w);
        json_key(w, "kind");
        json_string(w, cause_names[c->kind]);
        if (c->kind == TP_CAUSE_PHASE || c->kind == TP_CAUSE_FUNCTION) {
            json_key(w, "phase");
            json_string(w, tp_step_phase_names[c->phase]);
        }
        if (c->kind == TP_CAUSE_FUNCTION) { /* before and after: shares of the samples */
            json_key(w, "samples_of");
            json_string(w, c->workers ? "dataloader_workers" : "step_thread");
            json_key(w, "function");
            json_string(w, c->function);
            json_key(w, "file");
            json_string(w, c->file);
            json_key(w, "line");
            json_int(w, c->line);
        }
        if (c->kind == TP_CAUSE_STRAGGLER) { /* before and after: its own work, s a step */
            json_key(w, "rank");
            json_int(w, c->rank);
            json_key(w, "part");
            json_string(w, c->workers ? "input" : "compute");
            json_key(w, "median_after");
            json_double(w, c->median_after);
        }
        json_key(w, "before"); /* null where not recorded */
        json_double(w, c->before);
        json_key(w, "after");
        json_double(w, c->after);
        json_object_end(w);
    }
    json_array_end(w);
}

void tp_verdict_since(char *buf, size_t cap, const tp_verdict *v, bool capital)
{
    if (v->pace_drifted)
        snprintf(buf, cap, "%s steps %zu-%zu", capital ? "Over" : "over", v->pace->first_step,
                 v->pace->last_step);
    else
        snprintf(buf, cap, "%s step %zu", capital ? "Since" : "since", v->pace->first_step);
}
