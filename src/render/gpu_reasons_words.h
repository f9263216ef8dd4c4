/* gpu_reasons_words.h: NVML's clock event reasons in words, for the
 * verdicts, a straggler's cause and the report's GPU lines. */
#ifndef TP_RENDER_GPU_REASONS_WORDS_H
#define TP_RENDER_GPU_REASONS_WORDS_H

#include <stddef.h>
#include <stdint.h>

/* NVML's slowdown reasons (TP_GPU_REASON_*) in words: "its power cap and
 * its temperature limit"; "no slowdown reason" for none. */
void tp_gpu_reasons_text(char *out, size_t cap, uint32_t reasons);

#endif
