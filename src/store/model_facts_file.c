/* model_facts_file.c: see model_facts_file.h. */
#include "store/model_facts_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/run_keys.h"
#include "facts.h"

static void copy_value(char *dst, size_t cap, const char *v)
{
    size_t n = strcspn(v, "\r\n");
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, v, n);
    dst[n] = '\0';
}

static void unknown(tp_model_facts *facts)
{
    memset(facts, 0, sizeof *facts);
    facts->autocast = facts->compiled = -1;
    facts->num_workers = facts->pin_memory = facts->persistent_workers = -1;
    facts->prefetch_factor = facts->batch_size = facts->evaluate_training_mode = -1;
    facts->loader_prefetched = facts->ops_cupti_kept = -1;
}

/* A fact's number: a non-negative integer below 1e6, else -1 (unknown). */
static int small_number(const char *v)
{
    char *end;
    long n = v ? strtol(v, &end, 10) : -1;
    return v && end != v && *end == '\0' && n >= 0 && n < 1000000 ? (int)n : -1;
}

bool tp_run_model_facts(const tp_run *run, tp_model_facts *facts)
{
    unknown(facts);
    const char *v;
    if ((v = tp_run_meta_get(run, TP_META_FACT TP_FACT_MODEL_DTYPE)))
        copy_value(facts->dtype, sizeof facts->dtype, v);
    if ((v = tp_run_meta_get(run, TP_META_FACT TP_FACT_MODEL_DEVICE)))
        copy_value(facts->device, sizeof facts->device, v);
    if ((v = tp_run_meta_get(run, TP_META_FACT TP_FACT_MODEL_CAPABILITY)) &&
        sscanf(v, "%d.%d", &facts->cc_major, &facts->cc_minor) != 2)
        facts->cc_major = facts->cc_minor = 0;
    facts->autocast = small_number(tp_run_meta_get(run, TP_META_FACT TP_FACT_MODEL_AUTOCAST));
    if ((v = tp_run_meta_get(run, TP_META_FACT TP_FACT_MODEL_AUTOCAST_DTYPE)))
        copy_value(facts->autocast_dtype, sizeof facts->autocast_dtype, v);
    facts->compiled = small_number(tp_run_meta_get(run, TP_META_FACT TP_FACT_MODEL_COMPILED));
    facts->num_workers =
        small_number(tp_run_meta_get(run, TP_META_FACT TP_FACT_LOADER_NUM_WORKERS));
    facts->pin_memory = small_number(tp_run_meta_get(run, TP_META_FACT TP_FACT_LOADER_PIN_MEMORY));
    facts->persistent_workers =
        small_number(tp_run_meta_get(run, TP_META_FACT TP_FACT_LOADER_PERSISTENT_WORKERS));
    facts->prefetch_factor =
        small_number(tp_run_meta_get(run, TP_META_FACT TP_FACT_LOADER_PREFETCH_FACTOR));
    facts->batch_size = small_number(tp_run_meta_get(run, TP_META_FACT TP_FACT_LOADER_BATCH_SIZE));
    if ((v = tp_run_meta_get(run, TP_META_FACT TP_FACT_FRAMEWORK)))
        copy_value(facts->framework, sizeof facts->framework, v);
    if ((v = tp_run_meta_get(run, TP_META_FACT TP_FACT_FRAMEWORK_BACKEND)))
        copy_value(facts->backend, sizeof facts->backend, v);
    if ((v = tp_run_meta_get(run, TP_META_FACT TP_FACT_DDP_HOOK)))
        copy_value(facts->ddp_hook, sizeof facts->ddp_hook, v);
    facts->evaluate_training_mode =
        small_number(tp_run_meta_get(run, TP_META_FACT TP_FACT_EVALUATE_TRAINING_MODE));
    facts->loader_prefetched =
        small_number(tp_run_meta_get(run, TP_META_FACT TP_FACT_LOADER_PREFETCHED));
    facts->ops_cupti_kept = small_number(tp_run_meta_get(run, TP_META_FACT TP_FACT_OPS_CUPTI_KEPT));
    return facts->device[0] || facts->num_workers >= 0;
}

bool tp_model_facts_read(const char *path, tp_model_facts *facts)
{
    unknown(facts);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        *eq = '\0';
        const char *v = eq + 1;
        if (strcmp(line, "dtype") == 0)
            copy_value(facts->dtype, sizeof facts->dtype, v);
        else if (strcmp(line, "device") == 0)
            copy_value(facts->device, sizeof facts->device, v);
        else if (strcmp(line, "capability") == 0)
            sscanf(v, "%d.%d", &facts->cc_major, &facts->cc_minor);
        else if (strcmp(line, "autocast") == 0)
            facts->autocast = atoi(v) != 0;
        else if (strcmp(line, "autocast_dtype") == 0)
            copy_value(facts->autocast_dtype, sizeof facts->autocast_dtype, v);
    }
    fclose(f);
    return facts->dtype[0] && facts->device[0];
}
