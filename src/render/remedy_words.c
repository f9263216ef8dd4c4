/* remedy_words.c: see remedy_words.h. */
#include "render/remedy_words.h"

#include <stdio.h>
#include <string.h>

#include "analyze/model_case.h"

const char tp_cpu_bound_loading_words[] =
    "loading is CPU-bound and more workers won't help: cheaper decoding and transforms (or on "
    "the GPU), data stored pre-processed, or more cores";

bool tp_precision_words(char *out, size_t cap, const tp_model_facts *facts)
{
    out[0] = '\0';
    switch (tp_precision_case_of(facts)) {
    case TP_PRECISION_NOT_CUDA: return false;
    case TP_PRECISION_ALREADY_REDUCED:
        if (facts->autocast == 1)
            snprintf(out, cap, "the model already runs under %s%sautocast (mixed precision)",
                     tp_dtype_short(facts->autocast_dtype), facts->autocast_dtype[0] ? " " : "");
        else
            snprintf(out, cap, "the model already runs in %s", facts->dtype);
        return true;
    case TP_PRECISION_TENSOR_CORES:
        snprintf(out, cap,
                 "the model runs in FP32 without autocast on a GPU with tensor cores (compute "
                 "capability %d.%d): mixed precision (torch.autocast with bfloat16 or float16) is "
                 "typically 1.5-5x for common models",
                 facts->cc_major, facts->cc_minor);
        return true;
    case TP_PRECISION_NO_TENSOR_CORES:
        snprintf(out, cap,
                 "the model runs in FP32 on a GPU without tensor cores (compute capability "
                 "%d.%d): mixed precision saves memory and bandwidth there, but gains less",
                 facts->cc_major, facts->cc_minor);
        return true;
    }
    return false;
}

const char *tp_dtype_short(const char *dtype)
{
    return strcmp(dtype, "bfloat16") == 0        ? "bf16"
           : strcmp(dtype, "float16") == 0       ? "fp16"
           : strcmp(dtype, "float32") == 0       ? "fp32"
           : strcmp(dtype, "float8_e4m3fn") == 0 ? "fp8"
                                                 : dtype;
}

void tp_host_bound_remedies(char *out, size_t cap, const tp_model_facts *f)
{
    snprintf(out, cap,
             "fewer, larger launches: CUDA graphs (torch.compile with "
             "mode=\"reduce-overhead\"%s), a fused or foreach optimizer (fused=True), fewer "
             ".item() and other synchronizations a step, a larger batch (more work per launch); "
             "mixed precision or a faster GPU won't help, the GPU is waiting",
             f->compiled == 1 ? ", if the model is compiled in another mode" : "");
}

void tp_compute_remedies(char *out, size_t cap, const tp_model_facts *f)
{
    if (!f->device[0]) {
        snprintf(out, cap,
                 "mixed precision (torch.autocast; FP16/BF16 on tensor cores is "
                 "1.5-5x for common models), larger batches, torch.compile, faster or "
                 "more devices");
        return;
    }
    char precision[320] = "";
    bool cuda = strcmp(f->device, "cuda") == 0;
    bool said = tp_precision_words(precision, sizeof precision, f);
    snprintf(out, cap, "%s%s%s%s", precision, said ? "; larger batches" : "larger batches",
             f->compiled == 1 ? "" : ", torch.compile",
             cuda ? ", faster or more GPUs"
                  : "; the model runs on the CPU: more cores (torch.set_num_threads to match "
                    "them), or a GPU");
}

void tp_more_workers_words(char *out, size_t cap, const tp_model_facts *f, const char *context)
{
    char workers[32] = "num_workers";
    if (f->num_workers >= 0)
        snprintf(workers, sizeof workers, "num_workers=%d now", f->num_workers);
    snprintf(out, cap,
             "Try more DataLoader workers (%s%s)%s, a larger prefetch_factor, and data in memory "
             "or on local NVMe",
             workers, context, tp_pin_memory_helps(f) ? ", pin_memory=True" : "");
}
