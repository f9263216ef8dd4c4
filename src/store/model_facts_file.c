/* model_facts_file.c: see model_facts_file.h. */
#include "store/model_facts_file.h"

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
