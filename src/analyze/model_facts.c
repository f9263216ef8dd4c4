/* model_facts.c: see model_facts.h. */
#include "analyze/model_facts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void copy_value(char *dst, size_t cap, const char *v)
{
    size_t n = strcspn(v, "\r\n");
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, v, n);
    dst[n] = '\0';
}

bool tp_model_facts_read(const char *path, tp_model_facts *facts)
{
    memset(facts, 0, sizeof *facts);
    facts->autocast = -1;
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
    }
    fclose(f);
    return facts->dtype[0] && facts->device[0];
}

bool tp_precision_hint(const tp_model_facts *facts, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (strcmp(facts->device, "cuda") != 0)
        return false;
    bool fp32 = strcmp(facts->dtype, "float32") == 0;
    if (!fp32 || facts->autocast == 1) {
        snprintf(buf, cap, "the model already runs in %s%s", fp32 ? "float32" : facts->dtype,
                 facts->autocast == 1 ? " under autocast (mixed precision)" : "");
        return true;
    }
    if (facts->cc_major >= 7)
        snprintf(buf, cap,
                 "the model runs in FP32 without autocast on a GPU with tensor cores (compute "
                 "capability %d.%d): mixed precision (torch.autocast with bfloat16 or float16) is "
                 "typically 1.5-5x for common models",
                 facts->cc_major, facts->cc_minor);
    else
        snprintf(buf, cap,
                 "the model runs in FP32 on a GPU without tensor cores (compute capability "
                 "%d.%d): mixed precision saves memory and bandwidth there, but gains less",
                 facts->cc_major, facts->cc_minor);
    return true;
}
