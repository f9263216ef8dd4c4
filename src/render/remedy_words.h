/* remedy_words.h: the things to try, in words, that the verdicts
 * (render/verdict_words.h) and `bottleneck` (render/bottleneck_words.h) both
 * say: one phrase each, fitted to what the script does (core/model_facts.h). */
#ifndef TP_RENDER_REMEDY_WORDS_H
#define TP_RENDER_REMEDY_WORDS_H

#include <stdbool.h>
#include <stddef.h>

#include "core/model_facts.h"

/* The mixed-precision advice for a compute-bound training from what its
 * model runs in: the 1.5-5x hint for FP32 without autocast on a GPU with
 * tensor cores, less on an older GPU, and nothing new for a model already in
 * reduced precision or under autocast. False, with out empty, when there is
 * nothing to say (not on a CUDA GPU). */
bool tp_precision_words(char *out, size_t cap, const tp_model_facts *facts);

/* What speeds up a compute-bound training: no mixed precision where it
 * already runs reduced or under autocast, nothing of tensor cores off a CUDA
 * GPU, no torch.compile where the model is compiled; the generic list where
 * nothing is known. No full stop. */
void tp_compute_remedies(char *out, size_t cap, const tp_model_facts *f);

/* What speeds up a host-bound training (the GPU waits for the host's
 * launches): CUDA graphs, a fused optimizer, fewer synchronizations, a
 * larger batch; never precision nor a faster GPU. No full stop. */
void tp_host_bound_remedies(char *out, size_t cap, const tp_model_facts *f);

/* "bf16" for "bfloat16", "fp16" for "float16", ...; any other as it is. */
const char *tp_dtype_short(const char *dtype);

/* "Try more DataLoader workers (num_workers=2 now<context>), pin_memory=True,
 * a larger prefetch_factor, and data in memory or on local NVMe": pin_memory
 * only where it can help (not pinned yet, the model on a CUDA GPU or not
 * known); context (may be "") goes inside the parentheses. No full stop. */
void tp_more_workers_words(char *out, size_t cap, const tp_model_facts *f, const char *context);

/* "loading is CPU-bound and more workers won't help: cheaper decoding and
 * transforms (or on the GPU), data stored pre-processed, or more cores". */
extern const char tp_cpu_bound_loading_words[];

#endif
