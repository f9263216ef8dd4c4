/* gpu_reasons_words.c: NVML's clock event reasons in words. */
#include "render/gpu_reasons_words.h"

#include <stdio.h>

#include "core/metric_catalog.h"

void tp_gpu_reasons_text(char *out, size_t cap, uint32_t reasons)
{
    static const struct {
        uint32_t bit;
        const char *words;
    } names[] = {
        {TP_GPU_REASON_POWER_CAP, "its power cap"},
        {TP_GPU_REASON_HW_SLOWDOWN, "a hardware slowdown (power or heat)"},
        {TP_GPU_REASON_SYNC_BOOST, "sync boost (another GPU of its group)"},
        {TP_GPU_REASON_SW_THERMAL, "its temperature limit"},
        {TP_GPU_REASON_HW_THERMAL, "a hardware thermal slowdown"},
        {TP_GPU_REASON_POWER_BRAKE, "the power brake"},
    };
    size_t len = 0, n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0] && len < cap; i++)
        if (reasons & names[i].bit)
            len +=
                (size_t)snprintf(out + len, cap - len, "%s%s", n++ ? " and " : "", names[i].words);
    if (!n)
        snprintf(out, cap, "no slowdown reason");
}
